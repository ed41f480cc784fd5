/**
 * The one retry helper of the project (STYLE.md: one of each mechanism). Callers differ only in their
 * options: how many attempts, the backoff, which failures are worth another attempt, and what to throw
 * when the attempts ran out.
 */

/** Waits `ms` milliseconds; rejects with `signal.reason` when `signal` aborts first. Injected so tests never wait. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * What `retryable` says of a failed attempt: `false` throws it at once, `true` waits the backoff,
 * `{ afterMs }` waits what the source asked for (an HTTP 429's Retry-After) instead.
 */
export type RetryDecision = boolean | { afterMs: number };

export type RetryOptions = {
  /** Attempts in all, the first included (at least one is made); `Infinity` retries until `signal` aborts. */
  attempts: number;
  /** Backoff before the second attempt; it doubles before each later one. */
  baseDelayMs: number;
  /** Largest backoff. Default: no ceiling. */
  maxDelayMs?: number;
  /** Full jitter: wait `random() * backoff` rather than the backoff itself, so that many clients spread out. Default false. */
  jitter?: boolean;
  /** Whether a failure of attempt `attempt` is worth another one. Default: every failure is. */
  retryable?: (error: unknown, attempt: number) => RetryDecision;
  /** What to throw when the last attempt failed with a retryable error. Default: that error. */
  giveUp?: (error: unknown, attempts: number) => unknown;
  /** Told before each wait (to log it). */
  onRetry?: (retry: { error: unknown; attempt: number; delayMs: number }) => void;
  /** Default: `realSleep`. */
  sleep?: Sleep;
  /** Uniform in [0, 1), for the jitter. Default: `Math.random`. */
  random?: () => number;
  /** Ends the waits: the pending one rejects with `signal.reason`, and no attempt follows. An attempt in progress finishes. */
  signal?: AbortSignal;
};

/** The timer `Sleep`: resolves after `ms`, or rejects with `signal.reason` as soon as `signal` aborts. */
export function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs `attempt` (given its number, from 1) until it succeeds, fails with an error `retryable` refuses, or
 * `attempts` attempts failed. The backoff doubles from `baseDelayMs` up to `maxDelayMs`; a wait the source
 * asked for (`{ afterMs }`) replaces it and does not advance it.
 * @returns what the first successful attempt returned
 * @throws the refused error as is; after the last attempt, what `giveUp` makes of its error; `signal.reason` once aborted
 * @example
 * const blockNumber = await retry(() => client.getBlockNumber(), {
 *   attempts: 5, baseDelayMs: 250, maxDelayMs: 8_000, jitter: true,
 *   retryable: (error) => (error instanceof RateLimitedError ? { afterMs: error.retryAfterMs } : !(error instanceof RpcRangeError)),
 *   signal: controller.signal,
 * });
 */
export async function retry<T>(attempt: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { attempts, baseDelayMs, maxDelayMs = Infinity, sleep = realSleep, random = Math.random, signal } = options;
  let backoffs = 0;
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      const decision = options.retryable?.(error, n) ?? true;
      if (decision === false) throw error;
      if (n >= attempts) throw options.giveUp ? options.giveUp(error, n) : error;
      let delayMs: number;
      if (decision === true) {
        const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** backoffs++);
        delayMs = options.jitter ? random() * ceiling : ceiling;
      } else {
        delayMs = decision.afterMs;
      }
      options.onRetry?.({ error, attempt: n, delayMs });
      await sleep(delayMs, signal);
      // An injected sleep may ignore the signal: an abort during the wait still ends the retries.
      signal?.throwIfAborted();
    }
  }
}
