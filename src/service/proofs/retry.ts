/**
 * V6: "A check that cannot reach its source is retried (3 tries, backing off); if all fail, it
 * counts as a failed check." Only `ProofSourceUnreachableError` is retried: a definitive answer
 * (404, content missing, bad signature) is final at the first try.
 */
import { ProofSourceUnreachableError } from './errors';

export type RetryPolicy = {
  /** Total attempts, the first included. V6: 3. */
  tries: number;
  /** Delay before the second attempt; each later delay doubles (base, 2·base, 4·base, ...). */
  baseDelayMs: number;
};

/** V6: 3 tries; 1 s then 2 s between them. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { tries: 3, baseDelayMs: 1_000 };

/** Waits `ms` milliseconds; injected so tests run retries without waiting. */
export type Sleep = (ms: number) => Promise<void>;

/** The real timer-based `Sleep`. */
export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `attempt` until it succeeds, throws something other than `ProofSourceUnreachableError`,
 * or `policy.tries` attempts were unreachable; then rethrows the last unreachable error with `attempts` set.
 * @example
 * const gist = await withRetry(() => fetchGist(id), { tries: 3, baseDelayMs: 1000 }, realSleep);
 */
export async function withRetry<T>(attempt: () => Promise<T>, policy: RetryPolicy, sleep: Sleep): Promise<T> {
  const tries = Math.max(1, Math.floor(policy.tries));
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof ProofSourceUnreachableError)) throw error;
      if (i >= tries) {
        throw new ProofSourceUnreachableError(`${error.message} (gave up after ${i} attempts)`, { cause: error, attempts: i });
      }
      await sleep(policy.baseDelayMs * 2 ** (i - 1));
    }
  }
}
