/**
 * The scheduler's decisions about proofs (V6), pure: when a proof is due for a re-check, and what
 * a re-check outcome does to it. The scheduler stores `lastCheckedAt` and `consecutiveFailures`.
 */
import { DAY_S, type ProofKind } from "../../method";
import { currentProofRule } from "./kinds";
import type { RecheckOutcome } from "./types";

/** V6: seconds between re-checks of a kind, from the current method's table; null: never re-checked. */
export function recheckIntervalS(kind: ProofKind): number | null {
  const days = currentProofRule(kind).recheckDays;
  return days === null ? null : days * DAY_S;
}

/** V6: "A proof that fails two checks in a row is removed." */
export const MAX_CONSECUTIVE_FAILURES = 2;

/** What the scheduler knows of a stored proof. */
export type RecheckState = {
  kind: ProofKind;
  /** Unix seconds of the last check (the initial verification counts as the first check). */
  lastCheckedAt: number;
  /** Failed checks since the last successful one. */
  consecutiveFailures: number;
};

/** The unix second at which `proof` is next due, or null for kinds never re-checked. */
export function nextRecheckAt(proof: Pick<RecheckState, "kind" | "lastCheckedAt">): number | null {
  const interval = recheckIntervalS(proof.kind);
  return interval === null ? null : proof.lastCheckedAt + interval;
}

/** True when `proof` is due at `now` (unix seconds): at or after `lastCheckedAt + interval`. */
export function dueForRecheck(proof: Pick<RecheckState, "kind" | "lastCheckedAt">, now: number): boolean {
  const at = nextRecheckAt(proof);
  return at !== null && now >= at;
}

/** What to do with a proof after a re-check. */
export type RecheckDecision = { action: "keep"; consecutiveFailures: number } | { action: "remove"; reason: "failed_twice" | "moved" };

/**
 * Applies one re-check outcome (V6): `ok` resets the failure count; `failed` (unreachable or
 * rejected alike) adds one and removes the proof at the second failure in a row; `moved` removes at once.
 * @example
 * applyRecheckOutcome({ consecutiveFailures: 1 }, { type: 'failed', reason: 'unreachable', code, message });
 * // → { action: 'remove', reason: 'failed_twice' }
 */
export function applyRecheckOutcome(state: Pick<RecheckState, "consecutiveFailures">, outcome: RecheckOutcome): RecheckDecision {
  switch (outcome.type) {
    case "ok":
      return { action: "keep", consecutiveFailures: 0 };
    case "moved":
      return { action: "remove", reason: "moved" };
    case "failed": {
      const consecutiveFailures = state.consecutiveFailures + 1;
      return consecutiveFailures >= MAX_CONSECUTIVE_FAILURES
        ? { action: "remove", reason: "failed_twice" }
        : { action: "keep", consecutiveFailures };
    }
  }
}
