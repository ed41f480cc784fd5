/**
 * A real daily Vrai score anchored on a local chain, for the verifier's tests (`vrai verify`, `verifyScore`,
 * the SDK package): the API on PostgreSQL with a manual clock, three agents checking in for a day, the daily
 * recompute, and the day's root anchored over HTTP JSON-RPC by an anchorer key from configuration, as
 * `vrai serve` does.
 */
import pino from "pino";
import type { Address } from "viem";
import { startApiServer, type ApiServer } from "../app/server";
import { createAnchorWriter } from "../chain/anchor-writer";
import { createManualClock } from "../service/clock";
import { startTestChain, type TestChain } from "./chain";
import { createTestPgDb, type TestDb } from "./db";
import { serveTestChainRpc, type ChainRpcServer } from "./hardhat-node";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

export type AnchoredScore = {
  server: ApiServer;
  chain: TestChain;
  rpc: ChainRpcServer;
  /** The AnchorRegistry holding the day's root. */
  registry: Address;
  /** The agent whose daily score of `day` is verified in the tests (the second of three). */
  agent: string;
  /** The three agents, each with a daily score of `day` under the anchored root, and their keys. */
  agents: Array<{ agentId: string; agentKey: string }>;
  /** `2026-11-03`. */
  day: string;
  close(): Promise<void>;
};

/**
 * Starts the API and the chain and anchors a day of three agents' daily scores (about 5 s). With `leafVersion: 1`
 * the day's scores are made as a version before migration 014 stored them (without components), so the day is
 * built and anchored as a day of version-1 leaves, as days were before.
 */
export async function startAnchoredScore(options: { leafVersion?: 1 | 2 } = {}): Promise<AnchoredScore> {
  const [testDb, chain]: [TestDb, TestChain] = await Promise.all([createTestPgDb(), startTestChain()]);
  const rpc = await serveTestChainRpc();
  const registry = await chain.deployAnchorRegistry(1);
  const writer = createAnchorWriter({ privateKey: chain.keys[1], rpcUrl: rpc.url, registry });
  const clock = createManualClock(T0);
  const server = await startApiServer({
    db: testDb.db,
    operatorToken: "op-token-anchored-score-0000",
    clock,
    logger: pino({ level: "silent" }),
    anchorWriter: writer,
  });
  const post = (path: string, token: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
    fetch(server.url + path, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<any>);
  const owner = await post("/v1/owners", undefined, {});
  const agents: Array<{ agentId: string; agentKey: string }> = [];
  for (let a = 0; a < 3; a++) agents.push(await post("/v1/agents", owner.token, {}));
  for (let h = 1; h <= 6; h++) {
    for (const [a, created] of agents.entries()) {
      clock.set(T0 + a + h * 1800);
      await post(`/v1/agents/${created.agentId}/checkins`, created.agentKey, {}, { "idempotency-key": `k${h}` });
    }
  }
  await server.scheduler.catchUpDaily();
  clock.set(T0 + 86400 + 60);
  if (options.leafVersion === 1) {
    const day = new Date((T0 + 86400) * 1000).toISOString().slice(0, 10);
    await server.service.scoring.recomputeDay(day);
    await testDb.db.query(
      "UPDATE scores SET identity_points = NULL, reliability_points = NULL, integrity_points = NULL WHERE trigger = 'daily' AND day = $1",
      [day],
    );
  }
  await server.scheduler.catchUpDaily();
  return {
    server,
    chain,
    rpc,
    registry,
    agent: agents[1].agentId,
    agents,
    day: "2026-11-03",
    async close() {
      await server.close();
      await rpc.close();
      await Promise.all([testDb.drop(), chain.close()]);
    },
  };
}
