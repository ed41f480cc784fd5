/**
 * The development clock of `vrai dev` (issue #31): the service's clock, and the local chain's time with it,
 * moved forward by whole days, each day's scheduled work (the daily recompute at 00:00 UTC, V9, and its
 * anchoring) run as it would have run, so that a daily score exists, anchored, minutes after a first claim.
 * `vrai serve` has none: its clock is the machine's.
 */
import type { Logger } from "pino";
import type { Hex } from "viem";
import { DAY_S, dayStart, toRfc3339, utcDay } from "../method";
import { InvalidInputError } from "../errors";
import type { OffsetClock } from "./clock";
import type { Scheduler } from "./scheduler";

/** Days one move may take: a whole score window (V5) and more. */
export const MAX_DEV_DAYS = 60;

/** Where the development clock stands. */
export type DevClockState = {
  /** The service's time, RFC 3339. */
  now: string;
  /** Whole days ahead of the machine's clock. */
  offsetDays: number;
  /** When the next daily recompute runs (the next 00:00 UTC). */
  nextDailyAt: string;
};

/** A day whose 00:00 UTC a move passed: its daily scores and where its root's anchor stands. */
export type DevDay = {
  day: string;
  /** Daily scores of the day in its tree (0: no agent was claimed by its 00:00, nothing to anchor). */
  scores: number;
  anchor: { status: "mined"; txHash: Hex; blockNumber: number } | { status: "pending" | "off" } | null;
};

export type DevClock = {
  state(): DevClockState;
  /**
   * Moves the clock `days` whole days forward, one day at a time: the chain's time follows, then the scheduler
   * runs a pass, which recomputes the day that began and anchors its root. Moves never overlap.
   * @throws InvalidInputError `invalid_days` for anything but a whole number 1-MAX_DEV_DAYS
   */
  advance(days: number): Promise<DevClockState & { days: DevDay[] }>;
};

/** A day's anchor row as the anchoring stored it, or null before its tree. */
export type DevDayAnchor = { leafCount: number; status: "pending" | "mined"; txHash: Hex | null; blockNumber: number | null };

export type DevClockDeps = {
  clock: OffsetClock;
  scheduler: Pick<Scheduler, "runNow">;
  dayAnchor(day: string): Promise<DevDayAnchor | null>;
  /** Whether a root is sent on chain at all (an anchor writer is configured). */
  anchoring: boolean;
  /** Moves the chain's time to `t` (whole seconds): its next block is at `t`. */
  moveChainTo?(t: number): Promise<void>;
  /** Keeps the offset where a restart finds it. */
  persist(offsetS: number): void;
  /** Runs after each day's scheduled work: the day's ERC-8004 feedback, so that a move returns with it given (issue #27). */
  afterDay?(): Promise<void>;
  logger: Logger;
};

/** @example const devClock = createDevClock({ clock: createOffsetClock(systemClock), scheduler, dayAnchor, anchoring: true, persist, logger }); */
export function createDevClock(deps: DevClockDeps): DevClock {
  const { clock, logger } = deps;
  let moving: Promise<unknown> = Promise.resolve();

  const state = (): DevClockState => {
    const now = clock.now();
    return { now: toRfc3339(now), offsetDays: clock.offsetS() / DAY_S, nextDailyAt: toRfc3339(dayStart(utcDay(now)) + DAY_S) };
  };

  async function dayOf(day: string): Promise<DevDay> {
    const row = await deps.dayAnchor(day);
    if (row === null) return { day, scores: 0, anchor: null };
    if (row.status === "mined" && row.txHash !== null && row.blockNumber !== null)
      return { day, scores: row.leafCount, anchor: { status: "mined", txHash: row.txHash, blockNumber: row.blockNumber } };
    return { day, scores: row.leafCount, anchor: { status: deps.anchoring ? "pending" : "off" } };
  }

  async function move(days: number): Promise<DevClockState & { days: DevDay[] }> {
    const passed: string[] = [];
    for (let i = 0; i < days; i++) {
      clock.advance(DAY_S);
      deps.persist(clock.offsetS());
      passed.push(utcDay(clock.now()));
      await deps.moveChainTo?.(clock.now());
      await deps.scheduler.runNow();
      await deps.afterDay?.();
    }
    const after = state();
    const plural = (n: number) => `${n} day${n === 1 ? "" : "s"}`;
    logger.info(
      `development clock moved ${plural(days)} forward: now ${after.now} (${plural(after.offsetDays)} ahead of the machine's clock)`,
    );
    return { ...after, days: await Promise.all(passed.map(dayOf)) };
  }

  return {
    state,
    advance(days) {
      if (!Number.isSafeInteger(days) || days < 1 || days > MAX_DEV_DAYS) {
        return Promise.reject(new InvalidInputError("invalid_days", `days: expected a whole number 1-${MAX_DEV_DAYS}, got ${days}`));
      }
      const run = moving.then(() => move(days));
      moving = run.catch(() => undefined);
      return run;
    },
  };
}
