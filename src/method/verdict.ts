/** Part N: the Platform Network Score is kept in tenths, 0–1000 (0.0–100.0), starting at 0. */
export const NETWORK_SCORE_MIN = 0;
export const NETWORK_SCORE_MAX = 1000;

export type Verdict = "FULFILLED" | "PARTIAL" | "VIOLATED" | "LEGACY";

/** Part N (AVIP-TRU-VDT): adjustments in tenths, executor / requester; LEGACY is an order settled without an Intent. */
export const VERDICT_ADJUSTMENTS: Readonly<Record<Verdict, { executor: number; requester: number }>> = {
  FULFILLED: { executor: 30, requester: 15 },
  PARTIAL: { executor: 5, requester: 5 },
  VIOLATED: { executor: -50, requester: -10 },
  LEGACY: { executor: 20, requester: 10 },
};

/** Part N: one adjustment, clamped to 0–1000 right after it. */
export function adjustNetworkScore(score: number, delta: number): number {
  return Math.min(NETWORK_SCORE_MAX, Math.max(NETWORK_SCORE_MIN, score + delta));
}

/**
 * Part N: applies one settled order's verdict, executor first then requester, clamping after each
 * adjustment as the Registry does; the same agent on both sides is adjusted twice, in that order.
 * @param scoreOf current score of an agent in tenths (0 for an agent never seen)
 * @returns the new scores of the agents that changed
 * @example applyVerdict(() => 0, { executor: "a", requester: "b", verdict: "VIOLATED" }) // Map { "a" => 0, "b" => 0 }
 */
export function applyVerdict(
  scoreOf: (agent: string) => number,
  settlement: { executor: string; requester: string; verdict: Verdict },
): Map<string, number> {
  const delta = VERDICT_ADJUSTMENTS[settlement.verdict];
  const updated = new Map<string, number>();
  updated.set(settlement.executor, adjustNetworkScore(scoreOf(settlement.executor), delta.executor));
  const requesterBefore = updated.get(settlement.requester) ?? scoreOf(settlement.requester);
  updated.set(settlement.requester, adjustNetworkScore(requesterBefore, delta.requester));
  return updated;
}
