/**
 * Examples of the API's main bodies, for the OpenAPI document. The score and its inputs are computed
 * by the method engine from a small inputs document, so they are a real score, not a made-up one;
 * the route declarations type each example against its schema.
 */
import { buildScoreInputs, scoreFromInputs, toRfc3339 } from "../method";
import type { PenaltyRow, ScoreRow } from "../service/ports";

const DAY_S = 86_400;
/** 2026-11-02T10:00:00Z, the example's "now". */
const AT = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const CLAIMED_AT = AT - 20 * DAY_S;

export const agentId = "agt_3f9c0d1e2b4a5968";

export const owner = { ownerId: "own_9a41c7e05d2b8f36", token: "vo_own_9a41c7e05d2b8f36.t_W2q4kq7tS8l0cQm1xZr5dVbN3aYpE6uHgJ9fKiLoTs0" };

export const claim = {
  agentId, ownerId: owner.ownerId, agentKey: "va_agt_3f9c0d1e2b4a5968.k_0cYp4m2RkN8sL5qWd1XzE7bT3uGh6JiFoAvKe9rMnQw", claimId: 1, claimedAt: toRfc3339(CLAIMED_AT),
};

export const checkin = {
  agentId, result: "counted", arrival: toRfc3339(AT), next_heartbeat_s: 3600, on_time: true, excused: false, credit: 3600,
} satisfies { result: "counted"; [field: string]: unknown };

export const checkinRefused = {
  error: { code: "checkin_refused", message: "less than 1,200 s since the previous counted check-in; retry in 840 s" }, retry_after_s: 840,
};

// Two days with check-ins, a GitHub proof: what the method engine makes of them (V5–V10).
const days = [1, 2].map((back) => ({
  day: toRfc3339(AT - back * DAY_S).slice(0, 10), checkins: 24, onTime: 24, creditS: 86_400, coverageS: 86_400,
  digest: back === 1 ? "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592" : "7d793037a0760186574b0282f2f435e77d793037a0760186574b0282f2f435e7",
}));

/** The inputs document of the example score (V9). */
export const scoreInputs = buildScoreInputs({ agent: agentId, method: "0.2", at: AT, claimedAt: CLAIMED_AT, proofs: [{ kind: "github" }], penalties: [], days });

const computed = scoreFromInputs(scoreInputs);

export const score = {
  id: 42, scoreType: "vrai", agentId, method: computed.result.method, at: computed.result.at, trigger: "change", day: null,
  sha256: computed.sha256, total: computed.result.total, result: computed.result,
  links: { inputs: "/v1/scores/42/inputs", self: "/v1/scores/42" },
} satisfies { scoreType: "vrai"; trigger: ScoreRow["trigger"]; [field: string]: unknown };

export const outage = {
  id: "out_51e0a2c4d6b8f193", start: toRfc3339(AT - 3 * 3600), end: toRfc3339(AT - 2 * 3600), declared_at: toRfc3339(AT - 3600),
  reason: "database failover", declared_by: "alice", closed_by: null,
};

export const penalty = {
  id: "pen_2b7d9f1a3c5e8640", agentId, code: "rate_abuse", points: 20, days: 30, addedAt: toRfc3339(AT), reason: "check-ins scripted from 40 addresses to dodge the 1,200 s rule",
  revokedAt: null, revokeReason: null, addedBy: "alice", revokedBy: null,
} satisfies { code: PenaltyRow["code"]; [field: string]: unknown };
