/**
 * The anchoring benchmark (part of `npm run bench:indexer`; alone: `tsx scripts/bench/anchoring.ts`).
 *
 * 1. A fresh PostgreSQL database holds 1,000,000 daily scores of one day (synthetic agents, digests and
 *    components, one agent in ten with an active ERC-8004 proof, bulk-loaded with SQL, not timed): leaves of
 *    version 2, which carry the score and the ERC-8004 identity.
 * 2. The daily anchoring's own code builds that day's tree in bounded memory and stores it once, in chunks
 *    (leaf hashes on one worker thread per core, sorted by PostgreSQL, nodes made chunk by chunk): timed
 *    (leaves/s, target ≤ 60 s), with the node process's peak heap during the build (sampled every 20 ms)
 *    and the bytes stored per leaf (table, TOAST and index).
 * 3. Proofs derived on demand: `GET /v1/scores/{id}/proof`'s repository call for a few hundred random
 *    daily scores, one at a time: latency p50 and p99.
 * 4. Roots of 1, 1,000 and 1,000,000 leaves are anchored with `anchorRoot` on the in-process Hardhat
 *    chain: gas per anchored score = the transaction's gas / the leaves it covers.
 *
 * Environment: BENCH_ANCHOR_LEAVES (1000000), BENCH_ANCHOR_PROOFS (500), TEST_PG_ADMIN_URL. With
 * `node --expose-gc --import tsx scripts/bench/anchoring.ts`, the heap the build retains is printed too.
 */
import crypto from "node:crypto";
import os from "node:os";
import { performance } from "node:perf_hooks";
import pg from "pg";
import pino from "pino";
import type { Hex } from "viem";
import { anchorRegistryAbi } from "../../src/chain/abi/anchorRegistry";
import type { AnchorWriter } from "../../src/chain/anchor-writer";
import { buildScoreTree, processScoreProof, SCORE_DAY_V2_KIND, scoreLeafV2 } from "../../src/chain/score-tree";
import { createAnchoring } from "../../src/service/anchoring";
import { createManualClock } from "../../src/service/clock";
import { createAnchorRepository } from "../../src/store/anchors";
import { createPgDb } from "../../src/store/db";
import { migrate } from "../../src/store/migrate";
import { startTestChain } from "../../src/test-helpers/chain";
import { seedDailyScores } from "../../src/test-helpers/daily-scores";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const LEAVES = process.env.BENCH_ANCHOR_LEAVES ? Number(process.env.BENCH_ANCHOR_LEAVES) : 1_000_000;
const PROOFS = process.env.BENCH_ANCHOR_PROOFS ? Number(process.env.BENCH_ANCHOR_PROOFS) : 500;
const TARGET_S = 60;
const DAY = "2026-11-29";
const AT = Date.UTC(2026, 10, 29) / 1000;

const seconds = (from: number, to: number) => (to - from) / 1000;
const fmt = (n: number) => n.toLocaleString("en");
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** Runs the anchoring benchmark and prints its figures beside the targets of the issue. */
export async function benchAnchoring(): Promise<void> {
  const name = `vrai_bench_anchoring_${crypto.randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const db = createPgDb(ADMIN_URL.replace(/\/[^/]*$/, `/${name}`), { max: 4 });
  const chain = await startTestChain();
  try {
    await migrate(db);
    const t = performance.now();
    await seedDailyScores(db, { ownerId: "own_bench", day: DAY, at: AT, count: LEAVES, digits: 7, erc8004Every: 10 });
    await db.query("ANALYZE scores");
    await db.query("ANALYZE proofs");
    console.log(
      `anchoring: ${fmt(LEAVES)} daily scores of ${DAY} loaded in ${seconds(t, performance.now()).toFixed(1)} s (setup, not timed)`,
    );

    const repo = createAnchorRepository(db);
    // CPU seconds of this process (all its threads) beside wall time: on a shared machine the wall time
    // also measures the other processes' load.
    const cpu = () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1e6;
    };
    // With --expose-gc, the heap is also measured after a full collection every 200 ms: what the build
    // retains, without the garbage a sample of heapUsed also counts.
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const baseline = process.memoryUsage().heapUsed;
    let peakHeap = baseline;
    let peakRetained = baseline;
    let samples = 0;
    const sampler = setInterval(() => {
      peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
      if (gc && ++samples % 10 === 0) {
        gc();
        peakRetained = Math.max(peakRetained, process.memoryUsage().heapUsed);
      }
    }, 20);
    const c0 = cpu();
    const t0 = performance.now();
    const built = await repo.storeDayTree(DAY, AT);
    const t1 = performance.now();
    const c1 = cpu();
    clearInterval(sampler);
    peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
    if (built.type !== "stored" || built.leafCount !== LEAVES || built.leafVersion !== 2)
      throw new Error(`built ${JSON.stringify(built)}, expected ${LEAVES} leaves of version 2`);
    const total = seconds(t0, t1);
    const { rows } = await db.query<{ bytes: number; chunks: number }>(
      "SELECT pg_total_relation_size('score_tree_chunks') AS bytes, (SELECT count(*)::int FROM score_tree_chunks) AS chunks",
    );
    console.log(
      `anchoring: tree of ${fmt(LEAVES)} scores (leaves of version 2) built and stored in ${total.toFixed(1)} s = ` +
        `${fmt(Math.round(LEAVES / total))} leaves/s (CPU of this process ${(c1 - c0).toFixed(1)} s; ` +
        `target ≤ ${TARGET_S} s: ${total <= TARGET_S ? "met" : "NOT met"}; ${os.availableParallelism()} cores, load average ${os.loadavg()[0].toFixed(1)})`,
    );
    console.log(
      `anchoring: stored ${fmt(rows[0].chunks)} chunks, ${fmt(Number(rows[0].bytes))} bytes = ` +
        `${(Number(rows[0].bytes) / LEAVES).toFixed(1)} bytes per leaf (table, TOAST, indexes); ` +
        `build heap peak ${mib(peakHeap)} (${mib(peakHeap - baseline)} over the ${mib(baseline)} before it` +
        (gc ? `; after full collections at most ${mib(peakRetained - baseline)} over it` : "; run with --expose-gc for the heap retained") +
        `), at most ${fmt(built.peakNodesHeld)} hashes held by the tree build`,
    );

    // Proofs on demand, as GET /v1/scores/{id}/proof asks for them: one at a time, random scores.
    const ids = (
      await db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY random() LIMIT $2", [DAY, PROOFS])
    ).rows.map((r) => Number(r.id));
    const latencies: number[] = [];
    for (const id of ids) {
      const started = performance.now();
      const found = await repo.scoreProof(id);
      latencies.push(performance.now() - started);
      if (!found?.proof || processScoreProof(found.proof.leaf, found.proof.proof) !== built.root)
        throw new Error(`score ${id}: no proof leading to the root`);
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `anchoring: ${fmt(ids.length)} proofs derived on demand, each checked against the root: ` +
        `p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms`,
    );

    // Gas: anchorRoot costs the same whatever the leaf count; per anchored score it shrinks with the batch.
    const registry = (await chain.deployContract("AnchorRegistry", [chain.accounts[0].address])).address;
    const role = await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "ANCHORER_ROLE" });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "grantRole",
        args: [role, chain.accounts[1].address],
      }),
    });
    const writer: AnchorWriter = { publicClient: chain.publicClient, walletClient: chain.walletClients[1], contract: registry };
    const small = (n: number) =>
      buildScoreTree(
        Array.from({ length: n }, (_, i) =>
          scoreLeafV2({
            agentId: `agt_${i}`,
            day: DAY,
            method: "0.2",
            sha256: crypto.createHash("sha256").update(`${n}:${i}`).digest("hex"),
            total: 230,
            identity: 130,
            reliability: 0,
            integrity: 100,
            established: false,
            erc8004Subject: null,
          }),
        ),
      );
    const gasOf = async (root: Hex, leaves: number) => {
      const hash = await chain.walletClients[1].writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "anchorRoot",
        args: [root, BigInt(leaves), SCORE_DAY_V2_KIND],
      });
      return (await chain.publicClient.waitForTransactionReceipt({ hash })).gasUsed;
    };
    for (const n of [1, 1_000]) {
      const gas = await gasOf(small(n).root, n);
      console.log(
        `anchoring gas: ${fmt(n)} leaves: anchorRoot ${fmt(Number(gas))} gas = ` +
          `${(Number(gas) / n).toLocaleString("en", { maximumFractionDigits: 2 })} gas per anchored score`,
      );
    }
    // The 1,000,000-leaf root goes through the service's own anchoring (signed, stored, sent, mined).
    const anchoring = createAnchoring({ anchors: repo, clock: createManualClock(AT + 60), logger: pino({ level: "silent" }), writer });
    const [outcome] = await anchoring.anchorDue();
    await anchoring.stop();
    if (outcome?.type !== "mined") throw new Error(`anchoring the ${fmt(LEAVES)}-leaf root: ${JSON.stringify(outcome)}`);
    const gas = (await chain.publicClient.getTransactionReceipt({ hash: outcome.txHash })).gasUsed;
    console.log(
      `anchoring gas: ${fmt(LEAVES)} leaves: anchorRoot ${fmt(Number(gas))} gas = ` +
        `${(Number(gas) / LEAVES).toLocaleString("en", { maximumFractionDigits: 4 })} gas per anchored score`,
    );
  } finally {
    await chain.close();
    await db.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

if (require.main === module) {
  benchAnchoring().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
