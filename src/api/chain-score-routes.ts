/**
 * Routes over the chain's scores: an agent's SDK Derived Score (`sdk-derived`) and Platform Network Score
 * (`platform-network`), each labelled with its scoreType and never mixed; legacy self-reported summaries (A1
 * records, source self-reported, used only while the executor has no on-chain record, A2); the indexer's health.
 */
import { z } from "zod";
import { toRfc3339 } from "../method";
import type { Accounts } from "../service/accounts";
import type { ChainScores, DerivedScoreView, IndexerHealth, NetworkScoreView } from "../service/chain-scores";
import * as examples from "./examples";
import { derivedResultSchema, proofRecordSchema } from "./method-schemas";
import { defineRoute, errorResponse as e, idSchema, type Route } from "./route";

const didSchema = z
  .string()
  .regex(/^did:[a-z0-9]+:[A-Za-z0-9._:-]{1,200}$/, "expected an executor DID, e.g. did:erc8004:<chainId>:<identity registry>:<agentId>");
const page = z.object({
  limit: z.coerce.number().int().min(0).max(1_000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});
// One request carries at most this many summaries: the body limit is 32 kB.
const MAX_SUMMARIES = 100;

const derivedResponse = z.object({
  scoreType: z.literal("sdk-derived"),
  executor: z.string(),
  agentId: z.string().optional(),
  source: z.enum(["onchain", "self-reported", "none"]),
  result: derivedResultSchema,
  computedAt: z.string().nullable(),
  recordCount: z.number(),
  records: z.array(proofRecordSchema.extend({ duplicate: z.boolean().describe("A2.3: a later record of an already counted txHash") })),
});
/** A mirrored Network Score that disagrees with Registry.networkScoreOf (N4). */
const mismatchResponse = z.object({
  executor: z.string(),
  blockNumber: z.number().int(),
  mirrored: z.number(),
  onchain: z.number(),
  detectedAt: z.string(),
});
const networkResponse = z.object({
  scoreType: z.literal("platform-network"),
  executor: z.string(),
  agentId: z.string().optional(),
  tenths: z.number().int(),
  score: z.number(),
  settlements: z.number().int(),
  lastSettledAt: z.string().nullable(),
  mismatch: mismatchResponse.nullable(),
});
const healthResponse = <S extends "ok" | "mismatch">(status: S) =>
  z.object({
    status: z.literal(status),
    checkpoints: z.array(
      z.object({ chainId: z.number().int(), registry: z.string(), blockNumber: z.number().int(), updatedAt: z.string() }),
    ),
    mismatches: z.array(mismatchResponse),
  });

const mismatchJson = (m: IndexerHealth["mismatches"][number]) => ({ ...m, detectedAt: toRfc3339(m.detectedAt) });
const derivedJson = (v: DerivedScoreView) => ({ ...v, computedAt: v.computedAt === null ? null : toRfc3339(v.computedAt) });
const networkJson = (v: NetworkScoreView) => ({
  ...v,
  lastSettledAt: v.lastSettledAt === null ? null : toRfc3339(v.lastSettledAt),
  mismatch: v.mismatch && mismatchJson(v.mismatch),
});

/** The routes of the chain's scores. */
export function chainScoreRoutes(deps: { chainScores: ChainScores; accounts: Pick<Accounts, "authenticateAgent"> }): Route[] {
  const { chainScores } = deps;
  return [
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/derived-score",
      operationId: "getAgentDerivedScore",
      tag: "scores",
      auth: "none",
      summary:
        "The SDK Derived Score (scoreType sdk-derived, METHOD part A) of the agent's ERC-8004 identity: F1 result, and the records it used in A2 order.",
      params: z.object({ id: idSchema }),
      query: page,
      responses: {
        200: { description: "ok", schema: derivedResponse, example: examples.derivedScore },
        404: e("unknown agent, or no ERC-8004 identity linked (agent_not_linked)"),
      },
    }).handle(async ({ params, query }) => ({ status: 200, body: derivedJson(await chainScores.agentDerivedScore(params.id, query)) })),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/network-score",
      operationId: "getAgentNetworkScore",
      tag: "scores",
      auth: "none",
      summary:
        "The Platform Network Score (scoreType platform-network, METHOD part N) of the agent's ERC-8004 identity, mirrored from the Registry's events.",
      params: z.object({ id: idSchema }),
      responses: {
        200: { description: "ok", schema: networkResponse, example: examples.networkScore },
        404: e("unknown agent, or no ERC-8004 identity linked (agent_not_linked)"),
      },
    }).handle(async ({ params }) => ({ status: 200, body: networkJson(await chainScores.agentNetworkScore(params.id)) })),
    defineRoute({
      method: "get",
      path: "/v1/executors/:did/derived-score",
      operationId: "getExecutorDerivedScore",
      tag: "scores",
      auth: "none",
      summary: "The SDK Derived Score (sdk-derived) of an executor DID (docs/executor-id.md), with the records it used.",
      params: z.object({ did: didSchema }),
      query: page,
      responses: { 200: { description: "ok", schema: derivedResponse }, 400: e("not an executor DID") },
    }).handle(async ({ params, query }) => ({ status: 200, body: derivedJson(await chainScores.executorDerivedScore(params.did, query)) })),
    defineRoute({
      method: "get",
      path: "/v1/executors/:did/network-score",
      operationId: "getExecutorNetworkScore",
      tag: "scores",
      auth: "none",
      summary: "The Platform Network Score (platform-network) of an executor DID.",
      params: z.object({ did: didSchema }),
      responses: { 200: { description: "ok", schema: networkResponse }, 400: e("not an executor DID") },
    }).handle(async ({ params }) => ({ status: 200, body: networkJson(await chainScores.executorNetworkScore(params.did)) })),
    defineRoute({
      method: "post",
      path: "/v1/agents/:id/summaries",
      operationId: "postSummaries",
      tag: "scores",
      auth: "agent",
      summary:
        "Post legacy self-reported summaries (A1 records, source self-reported) for the agent's ERC-8004 identity; " +
        "used only while it has no on-chain record (A2).",
      params: z.object({ id: idSchema }),
      body: z.object({ records: z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_SUMMARIES) }).strict(),
      responses: {
        201: {
          description: "stored; the derived score recomputed",
          schema: derivedResponse.omit({ records: true, recordCount: true }).extend({ accepted: z.number() }),
        },
        400: e("a record breaks A1 (the message names the record and the field)"),
        401: e("no valid agent key"),
        404: e("unknown agent, or no ERC-8004 identity linked"),
      },
    }).handle(async ({ params, body, credential, keyVerified }) => {
      const agent = await deps.accounts.authenticateAgent(params.id, credential);
      await keyVerified();
      const posted = await chainScores.postSummaries(agent, body.records);
      return { status: 201, body: { ...posted, computedAt: posted.computedAt === null ? null : toRfc3339(posted.computedAt) } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/indexer/health",
      operationId: "getIndexerHealth",
      tag: "indexer",
      auth: "none",
      summary: "The indexer's checkpoints and any Network Score mirror that disagrees with Registry.networkScoreOf (503 while one does).",
      responses: {
        200: { description: "healthy", schema: healthResponse("ok") },
        503: { description: "a mirrored network score disagrees with the chain", schema: healthResponse("mismatch") },
      },
    }).handle(async () => {
      const health = await chainScores.indexerHealth();
      const checkpoints = health.checkpoints.map((c) => ({ ...c, updatedAt: toRfc3339(c.updatedAt) }));
      const mismatches = health.mismatches.map(mismatchJson);
      if (health.status === "mismatch") return { status: 503, body: { status: "mismatch", checkpoints, mismatches } };
      return { status: 200, body: { status: "ok", checkpoints, mismatches } };
    }),
  ];
}
