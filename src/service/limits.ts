/**
 * What one owner may keep (issue #15: storage per caller is bounded). The API server sets them from
 * its configuration (MAX_OPEN_CHALLENGES_PER_OWNER, MAX_AGENTS_PER_OWNER); `vrai replay` sets none:
 * they are the service's protection, not rules of the method.
 */
import { ConflictError } from "./errors";

export type OwnerLimits = {
  /** Challenges neither used nor expired at once (V6 challenges expire after an hour). */
  openChallenges: number;
  /** Agents claimed by the owner, unclaimed ones not counted (an operator's transfer is not held to it). */
  agents: number;
};

/** 409 `limit_reached`, naming the limit, its configuration variable and what frees room. */
export function limitReached(what: string, limit: number, variable: string, remedy: string): ConflictError {
  return new ConflictError("limit_reached", `limit reached: an owner may have at most ${limit} ${what} (${variable}); ${remedy}`);
}
