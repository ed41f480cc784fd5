/**
 * The delivery worker (issue #28): takes the deliveries due, sends each (sender.ts) and logs the try.
 * At least once: a delivery is leased when taken, and one whose worker died before logging its try is
 * due again when the lease ends, with the same event and so the same `webhook-id`. Of several instances
 * each delivery is taken by one (`SKIP LOCKED`, src/store/webhooks.ts), on PostgreSQL and PGlite alike.
 * A failed try (no 2xx: another status, a timeout, a failed connection) is tried again on the schedule
 * of schedule.ts; a 410 disables the endpoint at once; an endpoint failing every try for 5 days is disabled.
 */
import type { Logger } from "pino";
import type { AttemptRecord, TakenDelivery, WebhooksTx } from "../../store/webhooks";
import type { Clock } from "../clock";
import { eventEnvelope } from "./webhooks";
import { FAILING_DISABLE_S, MAX_ATTEMPTS, nextTryAt } from "./schedule";
import type { SecretBox } from "./secret-box";
import type { Send, TryOutcome } from "./sender";

export type DeliveryWorker = {
  /** Takes what is due now (up to the worker's concurrency), sends it and logs each try; returns how many. */
  runOnce(): Promise<number>;
  /** Delivers from now on: what is due, as slots free, and polls every `intervalMs` when nothing is. */
  start(intervalMs: number): void;
  /** Stops taking deliveries and waits for the tries in flight. */
  stop(): Promise<void>;
};

/** WEBHOOK_TIMEOUT_MS (a whole try) and WEBHOOK_POLL_INTERVAL_MS (an idle worker's look for deliveries due) when not configured. */
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
export const DEFAULT_WEBHOOK_POLL_INTERVAL_MS = 500;

/** Deliveries sent at once by one worker. */
const DEFAULT_CONCURRENCY = 64;

/**
 * The worker of deliveries in `repo`.
 * @param deps.leaseS how long a taken delivery is this worker's (a try's timeout, and margin): then it is due again
 * @param deps.random for the retries' jitter
 */
export function createDeliveryWorker(deps: {
  repo: WebhooksTx;
  clock: Clock;
  send: Send;
  box: SecretBox;
  leaseS: number;
  logger?: Logger;
  concurrency?: number;
  random?: () => number;
}): DeliveryWorker {
  const { repo, clock, box } = deps;
  const concurrency = deps.concurrency ?? DEFAULT_CONCURRENCY;
  const random = deps.random ?? Math.random;

  /** The secrets that sign a delivery now: the endpoint's, and the one before a rotation while its 24 hours last. */
  function secretsOf(endpoint: TakenDelivery["endpoint"], now: number): string[] {
    const secrets = [box.open(endpoint.secret)];
    if (endpoint.previousSecret !== null && (endpoint.previousSecretUntil ?? 0) > now) secrets.push(box.open(endpoint.previousSecret));
    return secrets;
  }

  /** What a try's outcome does to its delivery and its endpoint. */
  function recordOf(delivery: TakenDelivery, outcome: TryOutcome, at: number): AttemptRecord {
    const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
    const gone = outcome.status === 410;
    const retryAt = ok || gone || delivery.attempt >= MAX_ATTEMPTS ? null : nextTryAt(delivery.attempt, at, random);
    return {
      deliveryId: delivery.deliveryId,
      attempt: delivery.attempt,
      at,
      ...outcome,
      next: ok ? { state: "delivered" } : retryAt === null ? { state: "failed" } : { state: "pending", dueAt: retryAt },
      disable: gone ? "the receiver answered 410 Gone" : null,
      failingLimit: { since: at - FAILING_DISABLE_S, reason: "every try failed for 5 days in a row" },
    };
  }

  async function deliver(delivery: TakenDelivery): Promise<void> {
    let outcome: TryOutcome;
    try {
      const secrets = secretsOf(delivery.endpoint, clock.now());
      const body = JSON.stringify(eventEnvelope(delivery.event));
      outcome = await deps.send({ url: delivery.endpoint.url, id: delivery.event.id, body, secrets });
    } catch (error) {
      outcome = { status: null, latencyMs: 0, error: error instanceof Error ? error.message : String(error), response: "" };
    }
    const record = recordOf(delivery, outcome, clock.now());
    if (record.disable !== null) deps.logger?.info({ webhook: delivery.endpoint.id, reason: record.disable }, "webhook disabled");
    // If this fails, the delivery stays leased and is tried again when the lease ends.
    await repo
      .finishAttempt(record)
      .catch((error: unknown) =>
        deps.logger?.warn({ err: error, delivery: delivery.deliveryId }, "webhook try not logged; tried again after its lease"),
      );
  }

  const take = (limit: number) => {
    const now = clock.now();
    return repo.takeDue(now, now + deps.leaseS, limit);
  };

  async function runOnce(): Promise<number> {
    const taken = await take(concurrency);
    await Promise.all(taken.map(deliver));
    return taken.length;
  }

  let running = false;
  let loop: Promise<void> | null = null;
  let wake: (() => void) | null = null;
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      wake = done;
    });

  /** Keeps up to `concurrency` tries in flight: takes more as they end, and polls every `intervalMs` when nothing is due. */
  async function deliverUntilStopped(intervalMs: number): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    while (running) {
      const room = concurrency - inFlight.size;
      const taken =
        room >= Math.ceil(concurrency / 4)
          ? await take(room).catch((error: unknown) => {
              deps.logger?.warn({ err: error }, "webhook deliveries not taken; trying again");
              return [];
            })
          : [];
      for (const delivery of taken) {
        const job: Promise<void> = deliver(delivery).finally(() => {
          inFlight.delete(job);
          wake?.();
        });
        inFlight.add(job);
      }
      // Full, or nothing due: wait for a try to end (room again) or for the next poll.
      if (taken.length === 0 || inFlight.size >= concurrency) await nap(taken.length === 0 ? intervalMs : 1000);
    }
    await Promise.all(inFlight);
  }

  return {
    runOnce,
    start(intervalMs) {
      if (running) return;
      running = true;
      loop = deliverUntilStopped(intervalMs);
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = null;
    },
  };
}
