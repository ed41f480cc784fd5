/**
 * Vrai's ERC-8004 feedback at work (issue #27): a pass plans the latest anchored day (src/service/erc8004-planning.ts)
 * and makes every send due (src/service/erc8004-sender.ts). Passes run when a day's root is mined, when publishing is
 * turned off, on the service's schedule, and again when a failed send's retry falls due; one at a time. Everything a
 * pass does is in the outbox first, so a pass interrupted anywhere is taken up by the next, in this process or another.
 */
import type { Logger } from "pino";
import type { Clock } from "./clock";
import type { FeedbackPlanner } from "./erc8004-planning";
import type { FeedbackSender, SendOutcome } from "./erc8004-sender";

export type Erc8004Feedback = {
  /** One pass, after the one in progress: plans the latest anchored day, then makes every send due. */
  runOnce(): Promise<{ day: string | null; planned: number; outcomes: SendOutcome[] }>;
  /** A pass soon, after the one in progress (its failure is logged). */
  wake(): void;
  /** Passes now and every `intervalMs` until `stop`. */
  start(intervalMs: number): void;
  /**
   * Stops the passes and waits for the one in progress, which leaves a transaction waiting for its receipt at once (it
   * stays stored: the next pass, in this process or the next, takes it up).
   */
  stop(): Promise<void>;
};

/**
 * The feedback's passes over `planner` and `sender`.
 * @example const feedback = createErc8004Feedback({ planner, sender, clock, logger }); feedback.start(60_000);
 */
export function createErc8004Feedback(deps: {
  planner: FeedbackPlanner;
  sender: FeedbackSender;
  clock: Clock;
  logger: Logger;
}): Erc8004Feedback {
  const { planner, sender, clock, logger } = deps;
  let running: Promise<unknown> | null = null;
  let stopped = false;
  /** Aborted by `stop()`: the pass in progress no longer waits for a receipt; a new one once it ended. */
  let stopping = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  let retryTimer: NodeJS.Timeout | null = null;

  async function pass() {
    const { day, planned } = await planner.planLatest();
    if (planned > 0) logger.info({ day, planned }, "ERC-8004 feedback planned");
    const outcomes = await sender.sendDue(stopping.signal);
    // A retry that falls due before the next scheduled pass gets a pass of its own.
    const retries = outcomes.flatMap((o) => (o.type === "failed" || o.type === "waiting" ? [o.retryAt] : []));
    if (retries.length > 0 && !stopped) {
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = setTimeout(() => wake(), Math.max(0, Math.min(...retries) - clock.now()) * 1000 + 50);
      retryTimer.unref();
    }
    return { day, planned, outcomes };
  }

  async function runOnce() {
    while (running) await running.catch(() => undefined);
    const run = pass();
    running = run;
    try {
      return await run;
    } finally {
      if (running === run) running = null;
    }
  }

  function wake(): void {
    if (stopped) return;
    runOnce().catch((error: unknown) => logger.error({ err: error }, "ERC-8004 feedback pass failed; retrying at the next pass"));
  }

  return {
    runOnce,
    wake,
    start(intervalMs) {
      stopped = false;
      wake();
      timer = setInterval(wake, intervalMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      stopping.abort();
      if (timer) clearInterval(timer);
      if (retryTimer) clearTimeout(retryTimer);
      timer = null;
      retryTimer = null;
      await running?.catch(() => undefined);
      stopping = new AbortController();
    },
  };
}
