/**
 * When a failed delivery is tried again, and when an endpoint is given up on (issue #28): pure, so the
 * worker and its tests read the same table.
 */

/**
 * Seconds after each failed try before the next (Standard Webhooks' and Svix's schedule): 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h, 14 h, about 32 hours in all. After the last, the delivery is given up.
 */
export const RETRY_DELAYS_S = [5, 300, 1800, 7200, 18000, 36000, 50400] as const;

/** Tries of one delivery: the first and one per retry delay. */
export const MAX_ATTEMPTS = RETRY_DELAYS_S.length + 1;

/** An endpoint that has failed every try for this long is disabled (and says so). */
export const FAILING_DISABLE_S = 5 * 86_400;

/** Jitter of a retry delay: up to a fifth of it either way, so that the retries of one outage do not all come back at once. */
const JITTER = 0.2;

/**
 * When the try after failed try `attempt` (1-based) is due, from `now`; null once every try was made.
 * @param random a number in [0, 1), for the jitter
 * @example nextTryAt(1, 1000, () => 0.5) // 1005: 5 s after the first try, no jitter at 0.5
 */
export function nextTryAt(attempt: number, now: number, random: () => number): number | null {
  const delay = RETRY_DELAYS_S[attempt - 1];
  if (delay === undefined) return null;
  return now + Math.max(1, Math.round(delay * (1 + JITTER * (2 * random() - 1))));
}
