import type { Logger } from "pino";
import type { Clock } from "./clock";
import type { OwnerRecomputeJob, Store } from "./ports";
import type { Scoring } from "./scoring";

/**
 * The recompute of every agent of an owner after an owner-level proof (github, wallet) was added or
 * removed (V6: it counts for each agent the owner has claimed; V9: recomputed when proofs change).
 * The change stores the request in its own transaction (`requestOwnerRecompute`); a drain does it
 * afterwards, so a request that answers after the proof is stored never waits for thousands of
 * scores, and a request the process did not finish stays stored until a later drain does it.
 *
 * Each agent is scored at the instant the drain reaches it, with its row locked: the score is a
 * pure function of the facts stored at that instant (V9), the new proof among them.
 */
export type OwnerRecomputes = {
  /**
   * Does every request due now, until none is left (requests that failed wait for their backoff).
   * @returns the owners done, the scores stored and the requests that failed
   */
  drain(): Promise<{ owners: number; scores: number; failed: number }>;
  /** Starts a drain in the background unless one is running (then it runs again once done); a no-op until `startWorker`. */
  wake(): void;
  /** From now on, `wake` drains. */
  startWorker(): void;
  /** Stops `wake` from draining and waits for a drain in progress. */
  stop(): Promise<void>;
};

/** Requests taken per round of a drain. */
const TAKE_BATCH = 20;
/** Agent ids read per statement, unless told. */
const AGENT_PAGE = 200;
/**
 * Seconds a taken request is the drain's: a drain that stops midway (the process died) leaves it
 * due again after this. Far longer than an owner's recompute (1,000 agents, the default limit, take
 * seconds); a request taken twice is only done twice.
 */
export const OWNER_RECOMPUTE_LEASE_S = 600;
/** Backoff after a failed recompute: doubling from 30 s, at most an hour. */
export const ownerRecomputeBackoffS = (attempts: number): number => Math.min(3600, 30 * 2 ** Math.min(attempts, 7));

/** @param deps.agentsPerPage agent ids read per statement (200 by default) */
export function createOwnerRecomputes(deps: {
  store: Store;
  clock: Clock;
  scoring: Scoring;
  logger?: Logger;
  agentsPerPage?: number;
}): OwnerRecomputes {
  const { store, clock, scoring } = deps;
  const pageSize = deps.agentsPerPage ?? AGENT_PAGE;
  let worker = false;
  let running: Promise<unknown> | null = null;
  let again = false;

  /**
   * Scores every agent of the owner in id order, each in its own transaction with its row locked, so
   * no check-in or claim of the agent lands between the facts read and the instant scored, and a
   * check-in of the agent waits for one score at most; returns how many.
   */
  async function recomputeOwner(ownerId: string): Promise<number> {
    let scored = 0;
    for (let after: string | undefined; ; ) {
      const ids = await store.read.listAgentsOfOwner(ownerId, { after, limit: pageSize });
      for (const id of ids) {
        const done = await store.transaction(async (tx) => {
          const agent = await tx.getAgent(id, { lock: true });
          // Transferred away, or unclaimed (issue #29), since the page was read: no longer the owner's.
          if (agent?.ownerId !== ownerId || agent.releasedAt !== null) return false;
          await scoring.scoreAgentIn(tx, id, clock.now(), "change");
          return true;
        });
        if (done) scored++;
      }
      if (ids.length < pageSize) return scored;
      after = ids[ids.length - 1];
    }
  }

  async function runJob(job: OwnerRecomputeJob): Promise<number | null> {
    try {
      const scored = await recomputeOwner(job.ownerId);
      await store.transaction((tx) => tx.finishOwnerRecompute(job, clock.now()));
      return scored;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      deps.logger?.warn(
        { owner: job.ownerId, attempts: job.attempts + 1, err: error },
        "owner recompute failed; retrying after its backoff",
      );
      // If this fails too, the request stays leased and is due again when the lease ends.
      await store
        .transaction((tx) => tx.failOwnerRecompute(job, clock.now() + ownerRecomputeBackoffS(job.attempts), message))
        .catch(() => undefined);
      return null;
    }
  }

  async function drain() {
    const done = { owners: 0, scores: 0, failed: 0 };
    for (;;) {
      const now = clock.now();
      const jobs = await store.transaction((tx) => tx.takeOwnerRecomputes(now, now + OWNER_RECOMPUTE_LEASE_S, TAKE_BATCH));
      if (jobs.length === 0) return done;
      for (const job of jobs) {
        const scored = await runJob(job);
        if (scored === null) done.failed++;
        else {
          done.owners++;
          done.scores += scored;
        }
      }
    }
  }

  function wake(): void {
    if (!worker) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        await drain().catch((error: unknown) =>
          deps.logger?.error({ err: error }, "owner recompute drain failed; the next wake or tick retries"),
        );
      } while (again && worker);
      running = null;
    })();
  }

  return {
    drain,
    wake,
    startWorker: () => {
      worker = true;
    },
    async stop() {
      worker = false;
      await running;
    },
  };
}
