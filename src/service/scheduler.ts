import type { Logger } from "pino";
import { DAY_S, dayStart, utcDay } from "../method";
import type { CheckinRetention } from "./checkin-retention";
import type { Clock } from "./clock";
import type { Deadlines } from "./webhooks/deadlines";
import type { OwnerRecomputes } from "./owner-recomputes";
import type { Store } from "./ports";
import type { ProofChecks } from "./proof-checks";
import type { Scoring } from "./scoring";

const LAST_DAILY_SETTING = "daily_recompute_last_day";

/**
 * The service's timed work: the daily recompute at 00:00 UTC (V9), with every day missed while
 * the service was down computed when it comes back, the owners' recomputes still pending (V6, a
 * drain of what a stopped process or a failed attempt left), the proof re-checks (V6), the
 * deletion of expired challenges and the check-ins' day partitions (created ahead, dropped past
 * their retention: src/service/checkin-retention.ts), and the check-in deadlines that passed (agent.late).
 */
export function createScheduler(deps: {
  store: Store;
  clock: Clock;
  scoring: Scoring;
  proofs?: ProofChecks;
  ownerRecomputes?: OwnerRecomputes;
  checkinRetention?: CheckinRetention;
  /** The check-in deadlines that passed (agent.late) and the events past their 30 days (issue #28). */
  deadlines?: Deadlines;
  logger: Logger;
  /** Runs after each day's recompute, before the day counts as done (the daily anchoring: its failure retries the day). */
  afterDaily?: (day: string) => Promise<void>;
}): Scheduler {
  const { store, clock, scoring, logger } = deps;
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;

  /** Computes each day from the one after the last completed up to today; returns the days computed. */
  async function catchUpDaily(): Promise<string[]> {
    const today = utcDay(clock.now());
    const last = await store.read.getSetting<string>(LAST_DAILY_SETTING);
    const done: string[] = [];
    // A new store starts with today: there is nothing to catch up before its first day.
    for (let day = last === null ? today : utcDay(dayStart(last) + DAY_S); day <= today; day = utcDay(dayStart(day) + DAY_S)) {
      const started = Date.now();
      const stored = await scoring.recomputeDay(day, (n) => {
        if (n % 10_000 === 0) logger.info({ day, done: n }, "daily recompute progress");
      });
      await deps.afterDaily?.(day);
      await store.transaction((tx) => tx.setSetting(LAST_DAILY_SETTING, day));
      logger.info({ day, stored, ms: Date.now() - started }, "daily recompute done");
      done.push(day);
    }
    return done;
  }

  /**
   * The work of a pass, each part on its own: one that fails (the day's anchoring) holds back none of the others.
   * What a pass does every minute as a matter of course is logged at debug (issue #31); at info only what a person
   * watching wants to know: a day computed, proofs removed, recomputes that failed, check-ins dropped or kept.
   */
  const parts: Array<{ name: string; run(): Promise<void> }> = [
    { name: "daily recompute", run: async () => void (await catchUpDaily()) },
    {
      name: "owner recomputes",
      async run() {
        const done = await deps.ownerRecomputes?.drain();
        if (done && done.owners + done.failed > 0) logger[done.failed > 0 ? "info" : "debug"](done, "owner recomputes done");
      },
    },
    {
      name: "proof re-checks",
      async run() {
        if (!deps.proofs) return;
        const { checked, removed } = await deps.proofs.recheckDue();
        if (checked > 0) logger[removed > 0 ? "info" : "debug"]({ checked, removed }, "proof re-checks done");
      },
    },
    {
      name: "expired challenges",
      async run() {
        const deleted = (await deps.proofs?.deleteExpiredChallenges()) ?? 0;
        if (deleted > 0) logger.debug({ deleted }, "expired challenges deleted");
      },
    },
    {
      name: "check-in deadlines",
      async run() {
        const late = (await deps.deadlines?.scanLapses()) ?? 0;
        if (late > 0) logger.debug({ late }, "check-in deadlines passed: agent.late recorded");
      },
    },
    {
      name: "events past 30 days",
      async run() {
        const deleted = (await deps.deadlines?.pruneEvents()) ?? 0;
        if (deleted > 0) logger.debug({ deleted }, "events past 30 days deleted");
      },
    },
    {
      // After the daily recompute: a day's check-ins are dropped only once its daily score is stored.
      name: "check-in retention",
      async run() {
        if (!deps.checkinRetention) return;
        const pass = await deps.checkinRetention.run(await store.read.getSetting<string>(LAST_DAILY_SETTING));
        if (pass.dropped.length + pass.kept.length > 0) logger.info(pass, "check-in partitions maintained");
        else if (pass.created.length > 0) logger.debug(pass, "check-in partitions created ahead");
      },
    },
  ];

  /** One pass of everything due now. Passes never overlap. */
  async function tick(): Promise<void> {
    if (running) return running;
    running = (async () => {
      try {
        for (const part of parts) {
          await part
            .run()
            .catch((error: unknown) => logger.error({ err: error, part: part.name }, "scheduled work failed; retrying at the next tick"));
        }
      } finally {
        running = null;
      }
    })();
    return running;
  }

  return {
    catchUpDaily,
    tick,
    /** A pass that starts now: after the one in progress, if any, which may have read the clock before it moved (`vrai dev`'s clock). */
    async runNow(): Promise<void> {
      while (running) await running;
      await tick();
    },
    /** Runs `tick` now and every `intervalMs` (default one minute) until `stop`. */
    start(intervalMs = 60_000): void {
      void tick();
      timer = setInterval(() => void tick(), intervalMs);
      timer.unref();
    },
    /** Stops the timer and waits for a pass in progress. */
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
}

/** The service's background work: daily recomputes (with catch-up), re-checks, owner recomputes, challenges, partitions. */
export type Scheduler = {
  /** Recomputes every day whose daily scores are missing, up to yesterday; returns the days done. */
  catchUpDaily(): Promise<string[]>;
  /** One pass of all the scheduled work. */
  tick(): Promise<void>;
  /** A pass that starts now: after the one in progress, if any, which may have read the clock before it moved (`vrai dev`'s clock). */
  runNow(): Promise<void>;
  /** Runs `tick` now and every `intervalMs` (default one minute) until `stop`. */
  start(intervalMs?: number): void;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
};
