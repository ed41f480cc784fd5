/**
 * Examples of the API's main bodies, for the OpenAPI document. The score and its inputs are computed
 * by the method engine from a small inputs document, so they are a real score, not a made-up one;
 * the route declarations type each example against its schema.
 */
import { buildScoreInputs, deriveScores, scoreFromInputs, toRfc3339, type ProofRecord } from "../method";
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

/** An ERC-8004 identity as an executor DID (docs/executor-id.md). */
export const executor = "did:erc8004:8453:0x8004a169fb4a3325136eb29fa0ceb6d2e539a432:7";

const records: ProofRecord[] = [1, 2, 3].map((n) => ({
  txHash: `0x${String(n).repeat(64)}`, executor, success: n !== 3, riskLevel: n === 1 ? "high" : "low", policyViolations: 0, verified: true,
  traceRoot: `0x${"ab".repeat(32)}`, source: "onchain", blockNumber: 1_000 + n, logIndex: 0,
}));

/** The SDK Derived Score of three on-chain records, as the method engine derives it (F1, A2–A5). */
export const derivedScore = {
  scoreType: "sdk-derived", executor, agentId, source: "onchain", result: deriveScores(records)[executor], computedAt: toRfc3339(AT), recordCount: records.length,
  records: records.map((r) => ({ ...r, duplicate: false })),
} satisfies { scoreType: "sdk-derived"; source: "onchain"; [field: string]: unknown };

export const networkScore = {
  scoreType: "platform-network", executor, agentId, tenths: 873, score: 87.3, settlements: 41, lastSettledAt: toRfc3339(AT - 3600), mismatch: null,
} satisfies { scoreType: "platform-network"; [field: string]: unknown };
