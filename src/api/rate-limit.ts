/**
 * The API's request limits (issue #15), on rate-limiter-flexible: fixed windows of points per key,
 * in this process's memory (the default: no network round trip per request) or in Redis, so that
 * several instances share one limit. Who a request is charged to is decided in `express.ts`.
 */
import type Redis from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { BaseError } from "../errors";

/** What a limit says to a request: go on, or how many seconds until the key has a point again. */
export type Verdict = { readonly ok: true } | { readonly ok: false; readonly retryAfterS: number };

/** One limit: `points` per key in each window of `windowS` seconds. */
export type Limit = {
  /** Takes a point from `key`'s window. */
  take(key: string): Promise<Verdict>;
  /** Whether `key` has a point left, taking none. */
  peek(key: string): Promise<Verdict>;
  /** Gives back a point taken from `key` (a request charged to someone else after all). */
  giveBack(key: string): Promise<void>;
};

/** Every limit the HTTP app applies. */
export type RateLimits = {
  /** Requests without an account (pages, public reads, failed validation before authentication): per client address. */
  address: Limit;
  /** Authenticated requests: per account (owner id, agent id, operator name), never per credential. */
  account: Limit;
  /** Failed authentications per client address: once spent, authenticated routes answer 429 without looking a credential up. */
  authFailures: Limit;
  /** Account creations per client address, on top of `address`. */
  accountCreation: Limit;
};

export type RateLimitOptions = {
  /** Sustained requests per minute per address (unauthenticated) or per account (authenticated). */
  perMinute: number;
  /** Requests at once: windows of `burst` points, each lasting 60 × burst / perMinute seconds. */
  burst: number;
  /** Account creations per hour per address. */
  ownersPerHour: number;
  /** Failed authentications per minute per address: how many made-up credentials one address gets looked up. */
  authFailuresPerMinute: number;
  /**
   * Redis shared by every instance, and the prefix of this deployment's keys. While Redis cannot be
   * reached, each instance limits in its own memory with the same rules (rate-limiter-flexible's
   * insurance limiter): limits hold per instance instead of failing open or answering 5xx.
   */
  redis?: { client: Redis; keyPrefix: string };
};

/** The limits when none are given (`.env.example` lists the variables that set them). */
export const DEFAULT_RATE_LIMITS: Readonly<Omit<RateLimitOptions, "redis">> = Object.freeze({
  perMinute: 600,
  burst: 120,
  ownersPerHour: 20,
  authFailuresPerMinute: 30,
});

/** A window rule: `points` per `windowS` seconds. */
type Rule = { points: number; windowS: number };

/** A 429 with the seconds to wait, sent with `Retry-After` (src/api/http.ts). */
export class RateLimitedError extends BaseError {
  constructor(retryAfterS: number) {
    super("rate_limited", `too many requests; retry in ${retryAfterS} s`, { status: 429, retryAfterS });
  }
}

// One answer object for every allowed request: the hot path allocates nothing for it.
const ALLOWED: Verdict = Object.freeze({ ok: true });

const refusal = (res: RateLimiterRes): Verdict => ({ ok: false, retryAfterS: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) });

/**
 * The window rule of a sustained rate and a burst: `burst` points per window, the window as long as
 * the rate takes to earn them (whole seconds, at least one; Redis keeps whole seconds).
 */
export function burstWindow(perMinute: number, burst: number): Rule {
  const windowS = Math.max(1, Math.round((60 * burst) / perMinute));
  return { points: Math.max(1, Math.round((perMinute * windowS) / 60)), windowS };
}

/** Wraps one rate-limiter-flexible limiter as a `Limit`. */
function limitOf(limiter: RateLimiterAbstract): Limit {
  return {
    async take(key) {
      try {
        await limiter.consume(key);
        return ALLOWED;
      } catch (error) {
        // A RateLimiterRes is a refusal; anything else (a store error the insurance could not absorb) is a real failure.
        if (error instanceof RateLimiterRes) return refusal(error);
        throw error;
      }
    },
    async peek(key) {
      const res = await limiter.get(key);
      return res === null || res.consumedPoints < limiter.points ? ALLOWED : refusal(res);
    },
    async giveBack(key) {
      await limiter.reward(key);
    },
  };
}

/** The limits of `options`, in memory or in Redis. */
export function createRateLimits(options: RateLimitOptions): RateLimits {
  const make = (name: string, rule: Rule): Limit => {
    const memory = (keyPrefix: string) => new RateLimiterMemory({ points: rule.points, duration: rule.windowS, keyPrefix });
    if (!options.redis) return limitOf(memory(name));
    const keyPrefix = `${options.redis.keyPrefix}:${name}`;
    return limitOf(
      new RateLimiterRedis({
        storeClient: options.redis.client,
        points: rule.points,
        duration: rule.windowS,
        keyPrefix,
        // Not connected: the memory limiter at once, rather than a command waiting for a connection.
        rejectIfRedisNotReady: true,
        insuranceLimiter: memory(keyPrefix),
        // A key over its limit is refused from memory until its window ends: a flood costs Redis nothing.
        inMemoryBlockOnConsumed: rule.points + 1,
      }),
    );
  };
  const perRequest = burstWindow(options.perMinute, options.burst);
  return {
    address: make("address", perRequest),
    account: make("account", perRequest),
    authFailures: make("auth-failures", { points: options.authFailuresPerMinute, windowS: 60 }),
    accountCreation: make("account-creation", { points: options.ownersPerHour, windowS: 3600 }),
  };
}
