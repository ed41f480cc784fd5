/** The service's clock (METHOD V1: arrival times come from it). Whole Unix seconds. */
export type Clock = { now(): number };

/** The machine's clock. */
export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };

/** A clock tests and `vrai replay` set by hand. */
export function createManualClock(start: number): Clock & { set(t: number): void } {
  let t = start;
  return {
    now: () => t,
    set: (next: number) => {
      t = next;
    },
  };
}

/** A clock `offsetS()` seconds ahead of another, moved forward with `advance` (the development clock of `vrai dev`). */
export type OffsetClock = Clock & {
  /** Seconds this clock is ahead of the one it follows. */
  offsetS(): number;
  /** Moves it `seconds` forward (never back: a service's arrivals and scores only go forward, V1). */
  advance(seconds: number): void;
};

/**
 * `base` plus `offsetS` seconds, which `advance` increases.
 * @example const clock = createOffsetClock(systemClock, 86_400); // a day ahead of the machine
 */
export function createOffsetClock(base: Clock, offsetS = 0): OffsetClock {
  if (!Number.isSafeInteger(offsetS) || offsetS < 0) throw new RangeError(`offsetS: expected whole seconds >= 0, got ${offsetS}`);
  let offset = offsetS;
  return {
    now: () => base.now() + offset,
    offsetS: () => offset,
    advance(seconds) {
      if (!Number.isSafeInteger(seconds) || seconds <= 0) throw new RangeError(`advance: expected whole seconds > 0, got ${seconds}`);
      offset += seconds;
    },
  };
}
