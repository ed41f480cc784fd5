/**
 * Indexer throughput (`npm run bench:indexer`): 100,000 `ProofSubmitted` events, one transaction per record
 * (A2 dedups records sharing a transaction), 400 per block over 250 blocks on a local Hardhat node, indexed into
 * PostgreSQL (127.0.0.1:5432) from the first eth_getLogs to the last committed row. Target: 5,000 events/s.
 *
 * Environment: BENCH_EVENTS (default 100000), BENCH_PER_BLOCK (400), BENCH_RANGE (20 blocks per eth_getLogs,
 * 8,000 logs: under the 10,000-result cap common providers apply), TEST_PG_ADMIN_URL.
 * Then runs the anchoring benchmark (`benchAnchoring`).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { createIndexer } from "../../src/indexer/indexer";
import { readFollowedDeployment } from "../../src/chain/deployment";
import { createChainRpc } from "../../src/indexer/rpc";
import { systemClock } from "../../src/service/clock";
import { createDerivedScores } from "../../src/service/derived-scores";
import { createNetworkScores } from "../../src/service/network-scores";
import { createChainStore, type ChainStore } from "../../src/store/chain-store";
import { migrate } from "../../src/store/migrate";
import { createTestPgDb } from "../../src/test-helpers/db";
import { deployToNode, startHardhatNode, traceRoot, type Tx } from "../../src/test-helpers/node";
import { benchAnchoring } from "./anchoring";

const TARGET_EVENTS_PER_S = 5_000;
const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000);
const PER_BLOCK = Number(process.env.BENCH_PER_BLOCK ?? 400);
const RANGE = Number(process.env.BENCH_RANGE ?? 20);
const AGENTS = 100;
// submitProof costs about 35,000 gas; 70,000 lets 400 fit in Hardhat's 30,000,000-gas blocks.
const PROOF_GAS = 70_000;

async function main(): Promise<void> {
  const node = await startHardhatNode();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-bench-indexer-"));
  const testDb = await createTestPgDb();
  try {
    const chain = await deployToNode(node.url, dir);
    const owners = chain.accounts.slice(2, 12);
    const agents: Array<{ owner: (typeof owners)[number]; id: bigint }> = [];
    for (const owner of owners) for (const id of await chain.register(owner, AGENTS / owners.length)) agents.push({ owner, id });

    const generating = Date.now();
    await chain.setAutomine(false);
    for (let sent = 0; sent < EVENTS; sent += PER_BLOCK) {
      const txs: Tx[] = [];
      for (let i = sent; i < Math.min(EVENTS, sent + PER_BLOCK); i++) {
        const agent = agents[i % agents.length];
        txs.push(
          chain.proofTx(agent.owner, agent.id, {
            success: i % 10 !== 0,
            riskLevel: (i % 4) as 0 | 1 | 2 | 3,
            policyViolations: i % 17 === 0 ? 1 : 0,
            traceRoot: traceRoot(`b${i}`),
          }),
        );
      }
      await chain.send(txs, { gas: PROOF_GAS });
      await chain.mine();
    }
    await chain.setAutomine(true);
    console.log(
      `chain: ${EVENTS.toLocaleString("en")} ProofSubmitted events, ${PER_BLOCK} per block, generated in ${((Date.now() - generating) / 1000).toFixed(1)} s`,
    );

    await migrate(testDb.db);
    let started = 0n;
    let lastRowAt = 0;
    const store = createChainStore(testDb.db);
    const derivedScores = createDerivedScores({ store });
    const timings = { write: 0, derived: 0 };
    const timed =
      <A extends unknown[], R>(key: keyof typeof timings, f: (...args: A) => Promise<R>) =>
      async (...args: A) => {
        const t = process.hrtime.bigint();
        try {
          return await f(...args);
        } finally {
          timings[key] += Number(process.hrtime.bigint() - t) / 1e9;
        }
      };
    // The indexer's own transactions are its ranges (a rollback too, none here): each one's end is its last committed row.
    const indexerStore: ChainStore = {
      ...store,
      async transaction(fn) {
        const t = process.hrtime.bigint();
        const result = await store.transaction(fn);
        const now = process.hrtime.bigint();
        timings.write += Number(now - t) / 1e9;
        lastRowAt = Number(now - started) / 1e9;
        return result;
      },
    };
    const indexer = createIndexer({
      store: indexerStore,
      derivedScores: { recomputeDirty: timed("derived", derivedScores.recomputeDirty) },
      networkScores: createNetworkScores(),
      rpc: createChainRpc({ url: node.url }),
      deployment: readFollowedDeployment(chain.file),
      confirmations: 0,
      clock: systemClock,
      logger: pino({ level: "warn" }),
      range: { initial: RANGE, max: RANGE },
    });
    started = process.hrtime.bigint();
    const result = await indexer.syncToHead();
    const finished = process.hrtime.bigint();
    const { rows } = await testDb.db.query<{ n: number; derived: number }>(
      "SELECT (SELECT count(*) FROM chain_proof_records)::int AS n, (SELECT count(*) FROM derived_scores)::int AS derived",
    );
    console.log(
      `time in writes ${timings.write.toFixed(2)} s (overlapping the next range's read), derived scores ${timings.derived.toFixed(2)} s`,
    );
    const seconds = Number(finished - started) / 1e9;
    const rate = rows[0].n / lastRowAt;
    if (result.type !== "synced") throw new Error(`unexpected ${result.type}`);
    console.log(
      `indexed: ${rows[0].n.toLocaleString("en")} records in ${result.ranges} ranges of ${RANGE} blocks, ${rows[0].derived} derived scores recomputed`,
    );
    console.log(
      `indexer: first eth_getLogs to last committed row ${lastRowAt.toFixed(2)} s = ${Math.round(rate).toLocaleString("en")} events/s ` +
        `(target ${TARGET_EVENTS_PER_S.toLocaleString("en")}: ${rate >= TARGET_EVENTS_PER_S ? "met" : "NOT met"})`,
    );
    console.log(
      `         with the derived scores of the ${rows[0].derived} executors recomputed after: ${seconds.toFixed(2)} s = ` +
        `${Math.round(rows[0].n / seconds).toLocaleString("en")} events/s`,
    );
  } finally {
    await testDb.drop();
    await node.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // The other half of the issue: the anchoring figures (scripts/bench/anchoring.ts).
  await benchAnchoring();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
