/** The service's clock (METHOD V1: arrival times come from it). Whole Unix seconds. */
export type Clock = { now(): number };

/** The machine's clock. */
export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };

/** A clock tests and `vrai replay` set by hand. */
export function createManualClock(start: number): Clock & { set(t: number): void } {
  let t = start;
  return { now: () => t, set: (next: number) => void (t = next) };
}
