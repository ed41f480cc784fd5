/**
 * The Merkle proofs of daily scores and the on-chain anchors of their roots, shaped for callers: the leaf's
 * values by name and as the tuple a contract takes (`VraiScores.Score`), the proof, the root and the anchor;
 * and which Vrai agent holds an ERC-8004 identity.
 */
import { getAddress } from "viem";
import { z } from "zod";
import { isScoreLeafV2, SCORE_LEAF_V2_TYPES, SCORE_LEAF_VERSIONS, scoreLeafV2Fields } from "../chain/score-tree";
import { toRfc3339 } from "../method";
import type { Anchoring } from "../service/anchoring";
import type { Reads } from "../service/reads";
import type { ScoreAnchor, ScoreProof } from "../store/anchors";
import * as examples from "./examples";
import { defineRoute, errorResponse as e, idSchema, type Route } from "./route";
import { positiveDecimalSchema, scoreIdSchema } from "./schemas";

const bytes32 = z.string().regex(/^0x[0-9a-f]{64}$/);
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const uint256 = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,77})$/)
  .describe("a uint256 in decimal");
const int = z.number().int();

const anchorSchema = z
  .object({
    contract: address.describe("the AnchorRegistry"),
    chainId: int,
    txHash: bytes32,
    blockNumber: int,
    anchoredAt: z
      .string()
      .nullable()
      .describe("the block's time (RFC 3339), what a contract compares for freshness; null for days anchored before it was recorded"),
  })
  .describe("the AnchorRegistry transaction that anchored the day's root");

const common = {
  scoreId: int,
  agentId: z.string(),
  day: z.string().describe("YYYY-MM-DD"),
  kind: bytes32.describe("the root's anchor kind, bytes32 of kindName"),
  leaf: bytes32.describe("StandardMerkleTree leaf hash of leafValues with leafTypes"),
  proof: z.array(bytes32).describe("sibling hashes from the leaf up to the root"),
  root: bytes32,
  anchor: anchorSchema,
};

const v1Proof = z.object({
  ...common,
  leafVersion: z.literal(1),
  kindName: z.literal("vrai-score-day"),
  leafTypes: z.tuple([z.literal("string"), z.literal("string"), z.literal("string"), z.literal("bytes32")]),
  leafValues: z.tuple([z.string(), z.string(), z.string(), bytes32]).describe("[agent, day, method, inputs sha256]"),
  leafFields: z.object({ agent: z.string(), day: z.string(), method: z.string(), inputsSha256: bytes32 }),
});

const v2Fields = z.object({
  agent: z.string(),
  day: int.describe("days since 1970-01-01"),
  method: bytes32.describe("the method version as ASCII, bytes32"),
  inputsSha256: bytes32,
  total: int,
  identity: int.describe("-1 when not active"),
  reliability: int.describe("-1 when not active"),
  integrity: int.describe("-1 when not active"),
  state: z.union([z.literal(0), z.literal(1)]).describe("0 provisional, 1 established"),
  erc8004ChainId: uint256.describe("0 when the agent held no active ERC-8004 proof at the score's time"),
  erc8004Registry: address,
  erc8004TokenId: uint256,
});

const v2Proof = z.object({
  ...common,
  leafVersion: z.literal(2),
  kindName: z.literal("vrai-score-day-v2"),
  // Spelled out, as v1's: the handler answers SCORE_LEAF_V2_TYPES, whose type must be this tuple.
  leafTypes: z.tuple([
    z.literal("string"),
    z.literal("uint32"),
    z.literal("bytes32"),
    z.literal("bytes32"),
    z.literal("uint16"),
    z.literal("int16"),
    z.literal("int16"),
    z.literal("int16"),
    z.literal("uint8"),
    z.literal("uint256"),
    z.literal("address"),
    z.literal("uint256"),
  ]),
  leafValues: z
    .tuple([z.string(), int, bytes32, bytes32, int, int, int, int, int, uint256, address, uint256])
    .describe("the VraiScores.Score tuple a contract takes, in abi.encode order (uint256 values in decimal)"),
  leafFields: v2Fields.describe("VraiScores.Score by field name"),
});

const proofResponse = z.discriminatedUnion("leafVersion", [v1Proof, v2Proof]);
type ProofJson = z.input<typeof proofResponse>;

/** A mined score proof as the API serves it: the leaf by name and as its tuple, its version's kind and types. */
function proofJson(p: ScoreProof & { anchor: ScoreAnchor }): ProofJson {
  const anchor = { ...p.anchor, anchoredAt: p.anchor.anchoredAt === null ? null : toRfc3339(p.anchor.anchoredAt) };
  const base = { scoreId: p.scoreId, agentId: p.agentId, day: p.day, leaf: p.leaf, proof: p.proof, root: p.root, anchor };
  const values = p.leafValues;
  if (isScoreLeafV2(values)) {
    const f = scoreLeafV2Fields(values);
    return {
      ...base,
      leafVersion: 2,
      kind: SCORE_LEAF_VERSIONS[2].kind,
      kindName: "vrai-score-day-v2",
      leafTypes: [...SCORE_LEAF_V2_TYPES],
      leafValues: [
        f.agent,
        f.day,
        f.method,
        f.inputsSha256,
        f.total,
        f.identity,
        f.reliability,
        f.integrity,
        f.state,
        `${f.erc8004ChainId}`,
        f.erc8004Registry,
        `${f.erc8004TokenId}`,
      ],
      leafFields: { ...f, state: f.state === 1 ? 1 : 0, erc8004ChainId: `${f.erc8004ChainId}`, erc8004TokenId: `${f.erc8004TokenId}` },
    };
  }
  const [agent, day, method, inputsSha256] = values;
  return {
    ...base,
    leafVersion: 1,
    kind: SCORE_LEAF_VERSIONS[1].kind,
    kindName: "vrai-score-day",
    leafTypes: ["string", "string", "string", "bytes32"],
    leafValues: [agent, day, method, inputsSha256],
    leafFields: { agent, day, method, inputsSha256 },
  };
}

const TOKEN_ID = /^(0|[1-9][0-9]{0,77})$/;
const erc8004Params = z.object({
  chainId: positiveDecimalSchema("a chain id"),
  registry: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "expected an identity registry address: 0x and 40 hex digits"),
  tokenId: z
    .string()
    .regex(TOKEN_ID, "expected a token id: a non-negative integer in decimal")
    // A refinement runs after a failed regex too: only a decimal reaches BigInt.
    .refine((id) => !TOKEN_ID.test(id) || BigInt(id) < 2n ** 256n, "expected a token id below 2^256")
    .transform(BigInt),
});

const holderResponse = z.object({
  chainId: int,
  registry: address,
  tokenId: uint256,
  agentId: z.string(),
  provenAt: z.string().describe("when the agent's erc8004 proof of it was verified (RFC 3339)"),
  score: z
    .object({ id: int, at: z.string(), trigger: z.enum(["daily", "change"]), method: z.string(), total: int, sha256: z.string() })
    .nullable()
    .describe("the agent's latest score; null before its first"),
  links: z.object({
    agent: z.string(),
    score: z.string(),
    proof: z.string().describe("the proof of its latest anchored daily score, for a contract"),
  }),
});

/** The routes of daily scores' proofs and of ERC-8004 identities' agents. */
export function anchorRoutes(anchoring: Pick<Anchoring, "proofOf" | "latestProofOf">, reads: Pick<Reads, "erc8004Holder">): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/scores/:id/proof",
      operationId: "getScoreProof",
      tag: "scores",
      auth: "none",
      summary:
        "The Merkle proof of a daily score against its day's anchored root: the leaf's values by name (leafFields) and as the tuple a contract takes " +
        "(leafValues, with leafTypes; version 2 for days anchored as vrai-score-day-v2, version 1 before), the proof, the root and its AnchorRegistry anchor.",
      params: z.object({ id: scoreIdSchema }),
      responses: {
        200: { description: "ok", schema: proofResponse, example: examples.scoreProof },
        404: e(
          "score_not_found, score_not_daily (only daily scores are anchored) or proof_not_ready " +
            "(the day's root is not anchored yet: no proof is served against a root that is not on chain)",
        ),
      },
    }).handle(async ({ params }) => ({ status: 200, body: proofJson(await anchoring.proofOf(params.id)) })),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/score/proof",
      operationId: "getLatestScoreProof",
      tag: "scores",
      auth: "none",
      summary:
        "The Merkle proof of the agent's latest daily score whose day's root is anchored, as GET /v1/scores/{id}/proof gives it: " +
        "what a contract checks with VraiScores.verify (contracts/VraiScores.sol).",
      params: z.object({ id: idSchema }),
      responses: {
        200: { description: "ok", schema: proofResponse, example: examples.scoreProof },
        404: e(
          "agent_not_found, agent_unclaimed (its owner unclaimed it: the proofs of its anchored scores stay at GET /v1/scores/{id}/proof), " +
            "or proof_not_ready (no daily score of the agent is anchored yet)",
        ),
      },
    }).handle(async ({ params }) => ({ status: 200, body: proofJson(await anchoring.latestProofOf(params.id)) })),
    defineRoute({
      method: "get",
      path: "/v1/erc8004/:chainId/:registry/:tokenId",
      operationId: "getIdentityAgent",
      tag: "scores",
      auth: "none",
      summary:
        "The Vrai agent that holds ERC-8004 identity tokenId of registry on chainId now (by an active erc8004 proof, V6), " +
        "its latest score and the link to its proof.",
      params: erc8004Params,
      responses: {
        200: { description: "ok", schema: holderResponse, example: examples.erc8004Holder },
        404: e("erc8004_identity_not_held: no Vrai agent holds that identity"),
      },
    }).handle(async ({ params }) => {
      const registry = getAddress(params.registry.toLowerCase());
      const holder = await reads.erc8004Holder({ chainId: params.chainId, registry, agentId: params.tokenId });
      const { score } = holder;
      const agent = `/v1/agents/${holder.agentId}`;
      return {
        status: 200,
        body: {
          chainId: params.chainId,
          registry,
          tokenId: params.tokenId.toString(10),
          agentId: holder.agentId,
          provenAt: toRfc3339(holder.provenAt),
          score: score && {
            id: score.id,
            at: toRfc3339(score.at),
            trigger: score.trigger,
            method: score.method,
            total: score.total,
            sha256: score.sha256,
          },
          links: { agent, score: `${agent}/score`, proof: `${agent}/score/proof` },
        },
      };
    }),
  ];
}
