/**
 * Per-key request limits: a token bucket per key (credential hash or client address), `burst`
 * requests at once and `perMinute` refilled. Keys idle long enough to be full again are forgotten.
 */
export function createRateLimiter(options: { perMinute: number; burst: number; now?: () => number }) {
  const now = options.now ?? (() => Date.now());
  const ratePerMs = options.perMinute / 60_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  let lastSweep = now();
  // One answer object for every allowed request: the hot path allocates nothing for it.
  const allowed: { readonly ok: true } = Object.freeze({ ok: true });

  function sweep(t: number): void {
    if (t - lastSweep < 60_000) return;
    lastSweep = t;
    for (const [key, b] of buckets) if (b.tokens + (t - b.at) * ratePerMs >= options.burst) buckets.delete(key);
  }

  /** Takes one token for `key`: `{ ok: true }`, or how many seconds until one is available. */
  function take(key: string): { readonly ok: true } | { ok: false; retryAfterS: number } {
    const t = now();
    sweep(t);
    const b = buckets.get(key) ?? { tokens: options.burst, at: t };
    b.tokens = Math.min(options.burst, b.tokens + (t - b.at) * ratePerMs);
    b.at = t;
    buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return allowed;
    }
    return { ok: false, retryAfterS: Math.max(1, Math.ceil((1 - b.tokens) / ratePerMs / 1000)) };
  }

  return { take };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
