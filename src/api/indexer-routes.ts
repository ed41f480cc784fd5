/**
 * Routes over the indexer's tables: an agent's SDK Derived Score (`sdk-derived`) and Platform Network Score
 * (`platform-network`), each labelled with its scoreType and never mixed; legacy self-reported summaries (A1
 * records, source self-reported, used only while the executor has no on-chain record, A2); the indexer's health.
 */
import { z } from "zod";
import { toRfc3339, validateRecord, type ProofRecord } from "../method";
import type { VraiService } from "../service";
import { NotFoundError } from "../service/errors";
import type { AgentRow } from "../service/ports";
import type { Db } from "../store/db";
import type { Clock } from "../service/clock";
import type { IndexerStore } from "../indexer/store";
import { errorSchema, idSchema, type RouteSpec } from "./routes";

const e = (description: string) => ({ description, schema: errorSchema });
const didSchema = z.string().regex(/^did:[a-z0-9]+:[A-Za-z0-9._:-]{1,200}$/, "expected an executor DID, e.g. did:erc8004:<chainId>:<identity registry>:<agentId>");
const page = z.object({
  limit: z.coerce.number().int().min(0).max(1_000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});
// One request carries at most this many summaries: the body limit is 32 kB.
const MAX_SUMMARIES = 100;

const derivedResponse = z.object({
  scoreType: z.literal("sdk-derived"), executor: z.string(), agentId: z.string().optional(), source: z.enum(["onchain", "self-reported", "none"]),
  result: z.record(z.string(), z.unknown()), computedAt: z.string().nullable(), recordCount: z.number(), records: z.array(z.record(z.string(), z.unknown())),
});
const networkResponse = z.object({
  scoreType: z.literal("platform-network"), executor: z.string(), agentId: z.string().optional(), tenths: z.number(), score: z.number(),
  settlements: z.number(), lastSettledAt: z.string().nullable(), mismatch: z.record(z.string(), z.unknown()).nullable(),
});

/**
 * The indexer-backed routes.
 * @example startApiServer({ ..., extraRoutes: (service) => indexerRoutes({ service, db, store, clock }) })
 */
export function indexerRoutes(deps: { service: VraiService; db: Db; store: IndexerStore; clock: Clock }): RouteSpec[] {
  const { service, db, store, clock } = deps;

  async function executorOfAgent(agentId: string): Promise<string> {
    if (!(await service.store.read.getAgent(agentId))) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    const executor = await store.linkedExecutor(agentId);
    if (!executor) throw new NotFoundError("agent_not_linked", `agent ${agentId} has no ERC-8004 identity: prove one (kind erc8004) to link its on-chain records`);
    return executor;
  }

  async function derivedJson(executor: string, query: { limit: number; offset: number }, agentId?: string) {
    const stored = await store.getDerived(executor);
    const { records, count } = await store.listRecords(executor, query);
    return {
      scoreType: "sdk-derived" as const, executor, ...(agentId ? { agentId } : {}), source: (stored?.source ?? "none") as "onchain" | "self-reported" | "none",
      result: stored?.result ?? store.emptyDerived(), computedAt: stored ? toRfc3339(stored.computedAt) : null, recordCount: count, records,
    };
  }

  async function networkJson(executor: string, agentId?: string) {
    const row = await store.getNetworkScore(executor);
    const mismatch = (await store.listMismatches()).find((m) => m.executor === executor) ?? null;
    const tenths = row?.score ?? 0;
    return {
      scoreType: "platform-network" as const, executor, ...(agentId ? { agentId } : {}), tenths, score: tenths / 10, settlements: row?.settlements ?? 0,
      lastSettledAt: row && row.lastSettledAt > 0 ? toRfc3339(row.lastSettledAt) : null, mismatch,
    };
  }

  return [
    {
      method: "get", path: "/v1/agents/:id/derived-score", tag: "scores", auth: "none",
      summary: "The SDK Derived Score (scoreType sdk-derived, METHOD part A) of the agent's ERC-8004 identity: F1 result, and the records it used in A2 order.",
      params: z.object({ id: idSchema }), query: page,
      responses: { 200: { description: "ok", schema: derivedResponse }, 404: e("unknown agent, or no ERC-8004 identity linked (agent_not_linked)") },
      handler: async ({ params, query }) => ({ status: 200, body: await derivedJson(await executorOfAgent(params.id), query as never, params.id) }),
    },
    {
      method: "get", path: "/v1/agents/:id/network-score", tag: "scores", auth: "none",
      summary: "The Platform Network Score (scoreType platform-network, METHOD part N) of the agent's ERC-8004 identity, mirrored from the Registry's events.",
      params: z.object({ id: idSchema }),
      responses: { 200: { description: "ok", schema: networkResponse }, 404: e("unknown agent, or no ERC-8004 identity linked (agent_not_linked)") },
      handler: async ({ params }) => ({ status: 200, body: await networkJson(await executorOfAgent(params.id), params.id) }),
    },
    {
      method: "get", path: "/v1/executors/:did/derived-score", tag: "scores", auth: "none",
      summary: "The SDK Derived Score (sdk-derived) of an executor DID (docs/executor-id.md), with the records it used.",
      params: z.object({ did: didSchema }), query: page,
      responses: { 200: { description: "ok", schema: derivedResponse }, 400: e("not an executor DID") },
      handler: async ({ params, query }) => ({ status: 200, body: await derivedJson(params.did, query as never) }),
    },
    {
      method: "get", path: "/v1/executors/:did/network-score", tag: "scores", auth: "none",
      summary: "The Platform Network Score (platform-network) of an executor DID.",
      params: z.object({ did: didSchema }),
      responses: { 200: { description: "ok", schema: networkResponse }, 400: e("not an executor DID") },
      handler: async ({ params }) => ({ status: 200, body: await networkJson(params.did) }),
    },
    {
      method: "post", path: "/v1/agents/:id/summaries", tag: "scores", auth: "agent",
      summary: "Post legacy self-reported summaries (A1 records, source self-reported) for the agent's ERC-8004 identity; used only while it has no on-chain record (A2).",
      params: z.object({ id: idSchema }),
      body: z.object({ records: z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_SUMMARIES) }).strict(),
      responses: {
        201: { description: "stored; the derived score recomputed", schema: derivedResponse.omit({ records: true, recordCount: true }).extend({ accepted: z.number() }) },
        400: e("a record breaks A1 (the message names the record and the field)"), 401: e("no valid agent key"), 404: e("unknown agent, or no ERC-8004 identity linked"),
      },
      handler: async ({ params, body, credential }) => {
        const checkAgentKey: (agent: AgentRow | null, key: string) => asserts agent is AgentRow = service.accounts.checkAgentKey;
        checkAgentKey(await service.store.read.getAgent(params.id), credential);
        const executor = await executorOfAgent(params.id);
        const records: ProofRecord[] = (body as { records: Array<Record<string, unknown>> }).records.map((r, i) =>
          validateRecord({ ...r, executor, source: "self-reported", verified: false, blockNumber: undefined, logIndex: undefined }, i),
        );
        const at = clock.now();
        await db.transaction(async (tx) => {
          await store.insertSelfReported(tx, params.id, records, at);
          await store.recomputeDerived(tx, [executor], at);
        });
        const stored = await store.getDerived(executor);
        return {
          status: 201,
          body: {
            scoreType: "sdk-derived", executor, agentId: params.id, accepted: records.length, source: stored?.source ?? "none",
            result: stored?.result ?? store.emptyDerived(), computedAt: stored ? toRfc3339(stored.computedAt) : null,
          },
        };
      },
    },
    {
      method: "get", path: "/v1/indexer/health", tag: "indexer", auth: "none",
      summary: "The indexer's checkpoints and any Network Score mirror that disagrees with Registry.networkScoreOf (503 while one does).",
      responses: {
        200: { description: "healthy", schema: z.object({ status: z.literal("ok") }).passthrough() },
        503: { description: "a mirrored network score disagrees with the chain", schema: z.object({ status: z.literal("mismatch") }).passthrough() },
      },
      handler: async () => {
        const mismatches = await store.listMismatches();
        const checkpoints = (await store.listCheckpoints()).map((c) => ({ chainId: c.chainId, registry: c.registry, blockNumber: c.blockNumber, updatedAt: toRfc3339(c.updatedAt) }));
        return {
          status: mismatches.length > 0 ? 503 : 200,
          body: { status: mismatches.length > 0 ? "mismatch" : "ok", checkpoints, mismatches: mismatches.map((m) => ({ ...m, detectedAt: toRfc3339(m.detectedAt) })) },
        };
      },
    },
  ];
}
