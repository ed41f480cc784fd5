/**
 * Examples of the API's main bodies, for the OpenAPI document. The score and its inputs are computed
 * by the method engine from a small inputs document, so they are a real score, not a made-up one;
 * the route declarations type each example against its schema.
 */
import { getAddress } from "viem";
import {
  buildScoreTree,
  proofElements,
  SCORE_LEAF_V2_TYPES,
  SCORE_LEAF_VERSIONS,
  scoreLeafV2,
  scoreLeafV2Fields,
} from "../chain/score-tree";
import { buildScoreInputs, deriveScores, scoreFromInputs, toRfc3339, type ProofRecord } from "../method";
import type { PenaltyRow, ScoreRow } from "../service/ports";
import { SELF_DECLARED_NOTE } from "../service/registration-files";

const DAY_S = 86_400;
/** 2026-11-02T10:00:00Z, the example's "now". */
const AT = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const CLAIMED_AT = AT - 20 * DAY_S;

export const agentId = "agt_3f9c0d1e2b4a5968";

export const owner = { ownerId: "own_9a41c7e05d2b8f36", token: "vo_own_9a41c7e05d2b8f36.t_W2q4kq7tS8l0cQm1xZr5dVbN3aYpE6uHgJ9fKiLoTs0" };

export const claim = {
  agentId,
  ownerId: owner.ownerId,
  agentKey: "va_agt_3f9c0d1e2b4a5968.k_0cYp4m2RkN8sL5qWd1XzE7bT3uGh6JiFoAvKe9rMnQw",
  claimId: 1,
  claimedAt: toRfc3339(CLAIMED_AT),
};

/** The agent's key rotated a day after its claim: same claim, new key. */
export const keyRotation = {
  agentId,
  agentKey: "va_agt_3f9c0d1e2b4a5968.k_Q7wErT5yUi2oPa9sDf3GhJ8kLz4XcV6bNm1QwEr0TyU",
  claimId: 1,
  rotatedAt: toRfc3339(CLAIMED_AT + 86_400),
};

/** The agent unclaimed by its owner two days after its claim (issue #29). */
export const unclaim = { agentId, unclaimedAt: toRfc3339(CLAIMED_AT + 2 * 86_400) };

/** An agent with what it says of itself in its ERC-8004 registration file (issue #27). */
export const agent = {
  agentId,
  name: "research-agent",
  claimedAt: toRfc3339(CLAIMED_AT),
  links: { page: `/agents/${agentId}`, score: `/v1/agents/${agentId}/score`, proofs: `/v1/agents/${agentId}/proofs` },
  selfDeclared: {
    source: "erc8004-registration-file",
    note: SELF_DECLARED_NOTE,
    identity: "8453:0x8004a169fb4a3325136eb29fa0ceb6d2e539a432:42",
    uri: "https://agent.example.org/registration.json",
    readAt: toRfc3339(AT),
    status: "read",
    reason: null,
    name: "Research Agent",
    description: "Finds and summarises papers.",
    image: "https://agent.example.org/logo.png",
    services: [{ name: "A2A", endpoint: "https://agent.example.org/.well-known/agent-card.json", version: "0.3.0" }],
  },
} satisfies { selfDeclared: { source: "erc8004-registration-file"; status: "read"; [field: string]: unknown }; [field: string]: unknown };

export const checkin = {
  agentId,
  result: "counted",
  arrival: toRfc3339(AT),
  next_heartbeat_s: 3600,
  on_time: true,
  excused: false,
  credit: 3600,
} satisfies { result: "counted"; [field: string]: unknown };

export const checkinRefused = {
  error: { code: "checkin_refused", message: "less than 1,200 s since the previous counted check-in; retry in 840 s" },
  retry_after_s: 840,
};

// Two days with check-ins, a GitHub proof: what the method engine makes of them (V5–V10).
const days = [1, 2].map((back) => ({
  day: toRfc3339(AT - back * DAY_S).slice(0, 10),
  checkins: 24,
  onTime: 24,
  creditS: 86_400,
  coverageS: 86_400,
  digest:
    back === 1
      ? "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592"
      : "7d793037a0760186574b0282f2f435e77d793037a0760186574b0282f2f435e7",
}));

/** The inputs document of the example score (V9). */
export const scoreInputs = buildScoreInputs({
  agent: agentId,
  method: "0.2",
  at: AT,
  claimedAt: CLAIMED_AT,
  proofs: [{ kind: "github" }],
  penalties: [],
  days,
});

const computed = scoreFromInputs(scoreInputs);

export const score = {
  id: 42,
  scoreType: "vrai",
  agentId,
  method: computed.result.method,
  at: computed.result.at,
  trigger: "change",
  day: null,
  sha256: computed.sha256,
  total: computed.result.total,
  result: computed.result,
  links: { inputs: "/v1/scores/42/inputs", self: "/v1/scores/42" },
} satisfies { scoreType: "vrai"; trigger: ScoreRow["trigger"]; [field: string]: unknown };

export const outage = {
  id: "out_51e0a2c4d6b8f193",
  start: toRfc3339(AT - 3 * 3600),
  end: toRfc3339(AT - 2 * 3600),
  declared_at: toRfc3339(AT - 3600),
  reason: "database failover",
  declared_by: "alice",
  closed_by: null,
};

export const penalty = {
  id: "pen_2b7d9f1a3c5e8640",
  agentId,
  code: "rate_abuse",
  points: 20,
  days: 30,
  addedAt: toRfc3339(AT),
  reason: "check-ins scripted from 40 addresses to dodge the 1,200 s rule",
  revokedAt: null,
  revokeReason: null,
  addedBy: "alice",
  revokedBy: null,
} satisfies { code: PenaltyRow["code"]; [field: string]: unknown };

/** An ERC-8004 identity as an executor DID (docs/executor-id.md). */
export const executor = "did:erc8004:8453:0x8004a169fb4a3325136eb29fa0ceb6d2e539a432:7";

const records: ProofRecord[] = [1, 2, 3].map((n) => ({
  txHash: `0x${String(n).repeat(64)}`,
  executor,
  success: n !== 3,
  riskLevel: n === 1 ? "high" : "low",
  policyViolations: 0,
  verified: true,
  traceRoot: `0x${"ab".repeat(32)}`,
  source: "onchain",
  blockNumber: 1_000 + n,
  logIndex: 0,
}));

/** The SDK Derived Score of three on-chain records, as the method engine derives it (F1, A2–A5). */
export const derivedScore = {
  scoreType: "sdk-derived",
  executor,
  agentId,
  source: "onchain",
  result: deriveScores(records)[executor],
  computedAt: toRfc3339(AT),
  recordCount: records.length,
  records: records.map((r) => ({ ...r, duplicate: false })),
} satisfies { scoreType: "sdk-derived"; source: "onchain"; [field: string]: unknown };

export const networkScore = {
  scoreType: "platform-network",
  executor,
  agentId,
  tenths: 873,
  score: 87.3,
  settlements: 41,
  lastSettledAt: toRfc3339(AT - 3600),
  mismatch: null,
} satisfies { scoreType: "platform-network"; [field: string]: unknown };

// The example score's daily leaf of version 2 in a day of three, as GET /v1/scores/{id}/proof serves it.
const erc8004Registry = getAddress("0x8004a169fb4a3325136eb29fa0ceb6d2e539a432");
const leafValues = scoreLeafV2({
  agentId,
  day: "2026-11-02",
  method: computed.result.method,
  sha256: computed.sha256,
  total: computed.result.total,
  identity: computed.result.components.identity.value,
  reliability: computed.result.components.reliability.value,
  integrity: computed.result.components.integrity.value,
  established: computed.result.state === "established",
  erc8004Subject: `8453:${erc8004Registry.toLowerCase()}:7`,
});
const others = [1, 2].map((n) =>
  scoreLeafV2({
    agentId: `agt_example${n}`,
    day: "2026-11-02",
    method: "0.2",
    sha256: String(n).repeat(64),
    total: 200,
    identity: 100,
    reliability: 0,
    integrity: 100,
    established: false,
    erc8004Subject: null,
  }),
);
const day = buildScoreTree([leafValues, ...others]);
const fields = scoreLeafV2Fields(leafValues);
const leafTuple: [string, number, string, string, number, number, number, number, number, string, string, string] = [
  fields.agent,
  fields.day,
  fields.method,
  fields.inputsSha256,
  fields.total,
  fields.identity,
  fields.reliability,
  fields.integrity,
  0,
  "8453",
  erc8004Registry,
  "7",
];

export const scoreProof = {
  scoreId: 42,
  agentId,
  day: "2026-11-02",
  leafVersion: 2,
  kind: SCORE_LEAF_VERSIONS[2].kind,
  kindName: "vrai-score-day-v2",
  leafTypes: [...SCORE_LEAF_V2_TYPES],
  leafValues: leafTuple,
  leafFields: { ...fields, state: 0, erc8004ChainId: "8453", erc8004TokenId: "7" },
  leaf: `0x${day.leaf(0).toString("hex")}`,
  proof: proofElements(day.proof(0)),
  root: day.root,
  anchor: {
    contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    chainId: 8453,
    txHash: `0x${"5e".repeat(32)}`,
    blockNumber: 24_311_042,
    anchoredAt: "2026-11-02T00:01:04Z",
  },
} satisfies {
  leafVersion: 2;
  kindName: "vrai-score-day-v2";
  leafTypes: [...typeof SCORE_LEAF_V2_TYPES];
  leafFields: { state: 0; [field: string]: unknown };
  [field: string]: unknown;
};

export const erc8004Holder = {
  chainId: 8453,
  registry: erc8004Registry,
  tokenId: "7",
  agentId,
  provenAt: toRfc3339(AT - 5 * DAY_S),
  score: {
    id: 42,
    at: computed.result.at,
    trigger: "change",
    method: computed.result.method,
    total: computed.result.total,
    sha256: computed.sha256,
  },
  links: { agent: `/v1/agents/${agentId}`, score: `/v1/agents/${agentId}/score`, proof: `/v1/agents/${agentId}/score/proof` },
} satisfies { score: { trigger: "change"; [field: string]: unknown }; [field: string]: unknown };
