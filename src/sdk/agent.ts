/**
 * The agent side of V3: check-ins with idempotency keys, retries and a heartbeat loop that
 * follows the service's `next_heartbeat_s` and never comes back sooner than allowed.
 */
import crypto from "node:crypto";
import { BaseError } from "../errors";
import { MIN_INTERVAL_S } from "../method";
import { realSleep, retry, type RetryDecision, type Sleep } from "../retry";
import type { ApiError, ApiJson } from "./api";

// V3.2: a check-in less than 1,200 s after the previous counted one is refused. The method's own constant,
// under the name the SDK exports it by.
export { MIN_INTERVAL_S as MIN_CHECKIN_INTERVAL_S } from "../method";
export type { Sleep } from "../retry";

/**
 * The timer `sleep` defaults to: resolves after `ms`, or rejects with the signal's reason as soon as it aborts.
 * @example await defaultSleep(250, AbortSignal.timeout(5_000));
 */
export const defaultSleep: Sleep = realSleep;

/** The body of a counted check-in (`201`), as the API declares it, plus whether it was a replay of an earlier attempt. */
export type CheckInResult = ApiJson<"checkIn", 201> & {
  /** True when the service answered `Idempotent-Replayed: true` (an earlier attempt with the same key was counted). */
  replayed: boolean;
};

/** Retry policy of one check-in: full-jitter exponential backoff on network errors, 5xx and 409. */
export type RetryPolicy = {
  /** Attempts of one check-in in all (network errors, 5xx, 409 and 429 together). Default 8. */
  maxAttempts: number;
  /** First backoff ceiling. Default 1,000 ms. */
  baseDelayMs: number;
  /** Largest backoff ceiling. Default 60,000 ms. */
  maxDelayMs: number;
};

export type VraiAgentOptions = {
  /** The service, e.g. `http://127.0.0.1:8080` (no `/v1`). */
  baseUrl: string;
  agentId: string;
  /** The agent key returned once by the claim. */
  agentKey: string;
  retry?: Partial<RetryPolicy>;
  /** Seconds the heartbeat comes back before `next_heartbeat_s` (still at least 1,200 s after the previous check-in). Default 30. */
  safetyMarginS?: number;
  /** Abandon one HTTP attempt after this long (it is then retried with the same key). Default 30,000 ms. */
  requestTimeoutMs?: number;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Waits `ms`; rejects when `signal` aborts. Defaults to a timer. */
  sleep?: Sleep;
  /** Uniform in [0, 1); defaults to `Math.random`. */
  random?: () => number;
  /** Milliseconds since the epoch; defaults to `Date.now`. */
  now?: () => number;
};

/**
 * A wait before a check-in is sent (again), told before it starts so that nothing waits silently: `spacing`,
 * the 1,200 s after this agent object's previous counted check-in (V3.2); `rate_limited`, the `Retry-After` of
 * a 429; `retry`, the backoff after a network error, a 5xx or a 409 (`error` says which).
 */
export type CheckInWait = { reason: "spacing" | "rate_limited" | "retry"; ms: number; attempt: number; error?: VraiAgentError };

export type CheckInOptions = {
  /** Ends the waits (the promise rejects with its reason); a request in flight still finishes. */
  signal?: AbortSignal;
  /**
   * Wait when the service says "not yet": the 1,200 s after this object's previous counted check-in, and a 429's
   * `Retry-After`. Default false: such a check-in throws a `VraiAgentError` at once, its `retryAfterMs` saying how long to wait.
   */
  wait?: boolean;
  /** Told before each wait, whatever its reason. */
  onWait?: (wait: CheckInWait) => void;
};

export type HeartbeatOptions = {
  /** Called after each counted check-in, with the wait until the next one. */
  onCheckIn?: (result: CheckInResult, nextInMs: number) => void;
  /** Told before each wait inside a check-in: a 429's Retry-After, a backoff after a failed attempt (the heartbeat always waits). */
  onWait?: (wait: CheckInWait) => void;
  /** Called when a check-in fails for good; the loop goes on after `errorDelayMs` (`nextInMs`) unless the error is not retryable (`nextInMs` undefined). */
  onError?: (error: VraiAgentError, nextInMs: number | undefined) => void;
  /** Wait after a failed check-in before the next attempt sequence. Default 60,000 ms. */
  errorDelayMs?: number;
};

export type Heartbeat = {
  /** Stops the loop: a pending wait ends at once, a request in flight finishes first. Resolves when the loop has ended. */
  stop(): Promise<void>;
};

export type VraiAgent = {
  /**
   * One check-in with a fresh idempotency key, retried with the same key after a network error, a 5xx or a 409
   * (backoff with full jitter) until counted (or replayed). Under 1,200 s after this object's previous counted
   * check-in, or answered 429, it throws at once (`retryAfterMs` set) unless `wait: true`, which waits instead.
   * @throws VraiAgentError `checkin_too_soon` or the 429's code (`retryable: true`, `retryAfterMs`) without `wait`;
   *   `retryable: false` on 400/401/403/404; `retryable: true` after the last attempt
   */
  checkIn(options?: CheckInOptions): Promise<CheckInResult>;
  /** Checks in now and then every `next_heartbeat_s` (less the safety margin) until stopped. */
  startHeartbeat(options?: HeartbeatOptions): Heartbeat;
};

/** A check-in that failed: `retryable` false for answers that retrying cannot change (401, 400, 404). */
export class VraiAgentError extends BaseError {
  /** How long to wait before trying again, in ms: the 429's `Retry-After`, or for `checkin_too_soon` the rest of the 1,200 s (V3.2). */
  readonly retryAfterMs?: number;

  constructor(code: string, message: string, options: { status?: number; retryable: boolean; cause?: unknown; retryAfterMs?: number }) {
    super(code, message, options);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Attempts of one check-in unless `retry.maxAttempts` says otherwise. */
export const DEFAULT_MAX_ATTEMPTS = 8;
const DEFAULT_RETRY: RetryPolicy = { maxAttempts: DEFAULT_MAX_ATTEMPTS, baseDelayMs: 1000, maxDelayMs: 60_000 };

/** Network errors, 5xx and 409 wait the backoff; a 429 waits what the service asked for when waiting was asked for; anything else is final. */
function retryDecision(error: unknown, wait: boolean): RetryDecision {
  if (!(error instanceof VraiAgentError) || !error.retryable) return false;
  if (error.retryAfterMs === undefined) return true;
  return wait ? { afterMs: error.retryAfterMs } : false;
}

/** After the last attempt: the last failure, saying how many attempts were made. */
function gaveUp(error: unknown, attempts: number): unknown {
  if (!(error instanceof VraiAgentError)) return error;
  return new VraiAgentError(error.code, `${error.message}; gave up after ${attempts} attempts`, {
    status: error.status,
    retryable: true,
    cause: error,
  });
}

/**
 * Creates the check-in client of one agent.
 * @example
 * const agent = createVraiAgent({ baseUrl: api, agentId, agentKey }); // api: e.g. "http://127.0.0.1:8080"
 * const first = await agent.checkIn(); // { result: "counted", next_heartbeat_s: 3600, ... }
 * console.log(`counted at ${first.arrival}, next in ${first.next_heartbeat_s} s`);
 * // A second one at once is too soon (V3.2): it throws at once, saying how long to wait, rather than sleeping.
 * const tooSoon = await agent.checkIn().catch((error) => error);
 * if (!(tooSoon instanceof VraiAgentError) || tooSoon.code !== "checkin_too_soon") throw new Error("expected checkin_too_soon");
 * console.log(`next check-in allowed in ${Math.ceil(tooSoon.retryAfterMs / 1000)} s`);
 * const heartbeat = agent.startHeartbeat({ onError: (e) => console.error(e.message) });
 * process.once("SIGTERM", () => void heartbeat.stop());
 */
export function createVraiAgent(options: VraiAgentOptions): VraiAgent {
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const doFetch = options.fetch ?? fetch;
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const now = options.now ?? Date.now;
  const safetyMarginS = options.safetyMarginS ?? 30;
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const url = `${options.baseUrl.replace(/\/+$/, "")}/v1/agents/${encodeURIComponent(options.agentId)}/checkins`;
  // Local time (ms) the last counted answer was received: the arrival was at or before it.
  let lastCountedAt: number | undefined;

  // A request in flight is never aborted by the caller's signal (only by its timeout), so its outcome is always known.
  async function attempt(key: string): Promise<CheckInResult> {
    let response: Response;
    let text: string;
    try {
      response = await doFetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${options.agentKey}`, "idempotency-key": key, "content-type": "application/json" },
        body: "{}",
        signal: AbortSignal.timeout(requestTimeoutMs),
      });
      text = await response.text();
    } catch (error) {
      throw new VraiAgentError("network_error", `check-in request failed: ${(error as Error).message}`, { retryable: true, cause: error });
    }
    // The API answers JSON objects of the shapes its document declares for the status.
    let body: ApiJson<"checkIn", 201> | ApiJson<"checkIn", 429> | ApiError | undefined;
    try {
      const json = JSON.parse(text);
      if (typeof json === "object" && json !== null) body = json;
    } catch {
      // A proxy's HTML error page: the status decides.
    }
    if (response.status === 201 && body !== undefined && "result" in body) {
      return { ...body, replayed: response.headers.get("idempotent-replayed") === "true" };
    }
    const served = body !== undefined && "error" in body ? body.error : undefined;
    const what = `${response.status}${served?.message ? `: ${served.message}` : ""}`;
    if (response.status === 429) {
      const header = Number(response.headers.get("retry-after"));
      const asked = body !== undefined && "retry_after_s" in body ? body.retry_after_s : undefined;
      const waitS = Number.isFinite(header) && header >= 0 ? header : (asked ?? 1);
      throw new VraiAgentError(served?.code ?? "checkin_refused", `check-in refused (${what})`, {
        status: 429,
        retryable: true,
        retryAfterMs: waitS * 1000,
      });
    }
    if (response.status === 409 || response.status >= 500) {
      throw new VraiAgentError(served?.code ?? "server_error", `check-in failed (${what})`, { status: response.status, retryable: true });
    }
    throw new VraiAgentError(served?.code ?? "checkin_rejected", `check-in rejected (${what})`, {
      status: response.status,
      retryable: false,
    });
  }

  async function checkIn(callOptions: CheckInOptions = {}): Promise<CheckInResult> {
    const { signal, wait = false, onWait } = callOptions;
    if (lastCountedAt !== undefined) {
      const allowedAt = lastCountedAt + MIN_INTERVAL_S * 1000;
      const waitMs = allowedAt - now();
      if (waitMs > 0 && !wait) {
        throw new VraiAgentError(
          "checkin_too_soon",
          `the previous check-in was counted ${Math.round((now() - lastCountedAt) / 1000)} s ago ` +
            `and the service counts one at least ${MIN_INTERVAL_S} s after it (V3.2): ` +
            `retry in ${Math.ceil(waitMs / 1000)} s, or pass { wait: true }`,
          { retryable: true, retryAfterMs: waitMs },
        );
      }
      if (waitMs > 0) {
        onWait?.({ reason: "spacing", ms: waitMs, attempt: 1 });
        await sleep(waitMs, signal);
      }
    }
    // One key for this check-in and all its retries: a retry after a lost answer is a duplicate, never a second check-in (V3.1).
    const key = crypto.randomUUID();
    const result = await retry(() => attempt(key), {
      attempts: policy.maxAttempts,
      baseDelayMs: policy.baseDelayMs,
      maxDelayMs: policy.maxDelayMs,
      jitter: true,
      retryable: (error) => retryDecision(error, wait),
      giveUp: gaveUp,
      onRetry: ({ error, attempt: n, delayMs }) => {
        const failure = error instanceof VraiAgentError ? error : undefined;
        onWait?.({ reason: failure?.status === 429 ? "rate_limited" : "retry", ms: delayMs, attempt: n + 1, error: failure });
      },
      sleep,
      random,
      signal,
    });
    lastCountedAt = now();
    return result;
  }

  function startHeartbeat(heartbeatOptions: HeartbeatOptions = {}): Heartbeat {
    const controller = new AbortController();
    const errorDelayMs = heartbeatOptions.errorDelayMs ?? 60_000;
    const loop = (async () => {
      while (!controller.signal.aborted) {
        let waitMs: number;
        try {
          const result = await checkIn({ signal: controller.signal, wait: true, onWait: heartbeatOptions.onWait });
          waitMs = Math.max(result.next_heartbeat_s - safetyMarginS, MIN_INTERVAL_S) * 1000;
          heartbeatOptions.onCheckIn?.(result, waitMs);
        } catch (error) {
          if (error === controller.signal.reason) return;
          const failure =
            error instanceof VraiAgentError
              ? error
              : new VraiAgentError("heartbeat_error", (error as Error).message, { retryable: true, cause: error });
          heartbeatOptions.onError?.(failure, failure.retryable ? errorDelayMs : undefined);
          if (!failure.retryable) return;
          waitMs = errorDelayMs;
        }
        try {
          await sleep(waitMs, controller.signal);
        } catch {
          return;
        }
      }
    })();
    return {
      async stop() {
        controller.abort(new VraiAgentError("heartbeat_stopped", "the heartbeat was stopped", { retryable: false }));
        await loop;
      },
    };
  }

  return { checkIn, startHeartbeat };
}
