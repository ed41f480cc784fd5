import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { expect } from "chai";
import { getAddress, zeroAddress, type Hex } from "viem";
import {
  buildScoreTree,
  processScoreProof,
  proofElements,
  SCORE_LEAF_TYPES,
  SCORE_LEAF_V2_TYPES,
  scoreLeafV2,
  type AnyScoreLeafValues,
  type ScoreLeafValues,
} from "../chain/score-tree";
import { insertDailyScores, SEED_ERC8004_REGISTRY, seedDailyScores } from "../test-helpers/daily-scores";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { createAnchorRepository, type AnchorRepository, type PendingAnchorTx } from "./anchors";
import type { Queryable } from "./db";
import { listMigrations, migrate, splitStatements } from "./migrate";

const DAY = "2026-11-29";
const AT = Date.UTC(2026, 10, 29) / 1000;
/** More leaves than one page of scores and several chunks of the repository under test hold. */
const LEAVES = 5_001;
const PAGE_ROWS = 2_000;
const CHUNK_NODES = 512;

/** One agent in this many holds an ERC-8004 proof in the seeded day. */
const ERC8004_EVERY = 7;

/** The daily scores of `day` as version-1 leaf values, in id order, with their ids. */
async function dayLeavesV1(db: Queryable, day: string): Promise<{ ids: number[]; values: ScoreLeafValues[] }> {
  const { rows } = await db.query<{ id: number; agent_id: string; method: string; sha256: string }>(
    "SELECT id, agent_id, method, sha256 FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY id",
    [day],
  );
  return { ids: rows.map((r) => Number(r.id)), values: rows.map((r) => [r.agent_id, day, r.method, `0x${r.sha256}`]) };
}

/** The seeded daily scores of `day` as version-2 leaf values, in id order, from the seed's rules (daily-scores.ts), with their ids. */
async function dayLeaves(db: Queryable, day: string): Promise<{ ids: number[]; values: AnyScoreLeafValues[] }> {
  const { rows } = await db.query<{ id: number; agent_id: string; sha256: string }>(
    "SELECT id, agent_id, sha256 FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY id",
    [day],
  );
  const values = rows.map((r) => {
    const i = Number(r.agent_id.slice(4));
    return scoreLeafV2({
      agentId: r.agent_id,
      day,
      method: "0.2",
      sha256: r.sha256,
      total: 200 + 30 * (i % 2) + (i % 151),
      identity: 100 + 30 * (i % 2),
      reliability: i % 151,
      integrity: 100,
      established: i % 3 !== 0,
      erc8004Subject: i % ERC8004_EVERY === 0 ? `31337:${SEED_ERC8004_REGISTRY}:${i}` : null,
    });
  });
  return { ids: rows.map((r) => Number(r.id)), values };
}

/** A day `n` days after DAY. */
const dayAfter = (n: number) => new Date((AT + 86400 * n) * 1000).toISOString().slice(0, 10);

for (const { name, create } of TEST_STORES) {
  describe(`the anchor repository (${name})`, () => {
    let testDb: TestDb;
    let anchors: AnchorRepository;
    let changeScoreId: number;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      anchors = createAnchorRepository(testDb.db, { chunkNodes: CHUNK_NODES, pageRows: PAGE_ROWS });
      const { db } = testDb;
      await seedDailyScores(db, { ownerId: "own_1", day: DAY, at: AT, count: LEAVES, digits: 6, erc8004Every: ERC8004_EVERY });
      const change = await db.query<{ id: number }>(
        `INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total)
         VALUES ('agt_000001', '0.2', $1, 'change', NULL, '{}', $2, '{}', 0) RETURNING id`,
        [AT + 10, "ab".repeat(32)],
      );
      changeScoreId = Number(change.rows[0].id);
    });
    after(async () => {
      await testDb?.drop();
    });

    it("has no proof for a daily score before its day's tree is stored, none ever for a change score, and nothing for an unknown id", async () => {
      const { ids } = await dayLeaves(testDb.db, DAY);
      expect(await anchors.scoreProof(ids[0])).to.deep.equal({ trigger: "daily", proof: null, day: DAY, tree: "none" });
      expect(await anchors.scoreProof(changeScoreId)).to.deep.equal({ trigger: "change", proof: null });
      expect(await anchors.scoreProof(999_999_999)).to.equal(null);
    });

    it("stores a day's tree of version-2 leaves once, as chunks of its nodes (64 bytes a leaf), and derives each score's proof from them", async () => {
      const { ids, values } = await dayLeaves(testDb.db, DAY);
      const tree = buildScoreTree(values);
      expect(tree.root, "StandardMerkleTree's, with the version-2 types").to.equal(
        StandardMerkleTree.of(values, [...SCORE_LEAF_V2_TYPES]).root,
      );
      const stored = await anchors.storeDayTree(DAY, AT + 60);
      expect(stored).to.deep.include({ type: "stored", root: tree.root, leafCount: LEAVES, leafVersion: 2 });
      expect(await anchors.getDay(DAY)).to.deep.equal({
        day: DAY,
        root: tree.root,
        leafCount: LEAVES,
        leafVersion: 2,
        status: "pending",
        builtAt: AT + 60,
        chainId: null,
        contract: null,
        txHash: null,
        rawTx: null,
        blockNumber: null,
        minedAt: null,
        anchoredAt: null,
        finalAt: null,
      });
      // The first and last scores of each page, and others across the chunks; agents 1,234 and 3,777 (none of 7) and 1,239 (one of 7) among them.
      for (const i of [0, PAGE_ROWS - 1, PAGE_ROWS, 2 * PAGE_ROWS, 1233, 1238, 3776, LEAVES - 1]) {
        const found = await anchors.scoreProof(ids[i]);
        expect(found?.proof, `proof ${i}`).to.deep.equal({
          scoreId: ids[i],
          agentId: values[i][0],
          day: DAY,
          leafVersion: 2,
          leaf: `0x${tree.leaf(i).toString("hex")}`,
          leafValues: values[i],
          proof: proofElements(tree.proof(i)),
          root: tree.root,
          anchor: null,
        });
      }
      expect(values[1238].slice(9), "agent 1,239 with its ERC-8004 identity").to.deep.equal([
        31337n,
        getAddress(SEED_ERC8004_REGISTRY),
        1239n,
      ]);
      expect(values[1233].slice(9), "agent 1,234 without one").to.deep.equal([0n, zeroAddress, 0n]);
      const { rows } = await testDb.db.query<{ chunks: number; bytes: number; fences: number }>(
        "SELECT count(*)::int AS chunks, sum(octet_length(nodes))::int AS bytes, count(min_leaf)::int AS fences FROM score_tree_chunks WHERE day = $1",
        [DAY],
      );
      expect(rows[0]).to.deep.equal({
        chunks: Math.ceil((2 * LEAVES - 1) / CHUNK_NODES),
        bytes: 32 * (2 * LEAVES - 1),
        fences: Math.ceil((2 * LEAVES - 1) / CHUNK_NODES) - Math.floor((LEAVES - 1) / CHUNK_NODES),
      });
      const proofTable = await testDb.db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'score_proofs'");
      expect(proofTable.rows, "no proof stored per score").to.deep.equal([]);

      expect(await anchors.storeDayTree(DAY, AT + 120), "a second tree of the day").to.deep.equal({ type: "exists" });
      expect((await anchors.getDay(DAY))?.root).to.equal(tree.root);
    });

    it("stores nothing for a day without daily scores", async () => {
      expect(await anchors.storeDayTree("2026-01-01", AT)).to.deep.equal({ type: "empty" });
      expect(await anchors.getDay("2026-01-01")).to.equal(null);
    });

    it(
      "serves, for trees of 1, 2, 3, 5 and 301 leaves in chunks of 2 nodes and pages of 3, every leaf's proof: " +
        "StandardMerkleTree's, leading to the anchored root",
      async () => {
        const tiny = createAnchorRepository(testDb.db, { chunkNodes: 2, pageRows: 3 });
        for (const [k, n] of [1, 2, 3, 5, 301].entries()) {
          const day = dayAfter(k + 1);
          await insertDailyScores(testDb.db, { day, at: AT + 86400 * (k + 1), count: n, digits: 6 });
          const { ids, values } = await dayLeaves(testDb.db, day);
          const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_V2_TYPES]);
          const stored = await tiny.storeDayTree(day, AT);
          expect(stored).to.deep.include({ type: "stored", root: oz.root, leafCount: n });
          // Two chunks of parents and children plus a page, far below the tree's 2n-1 nodes.
          if (stored.type === "stored") expect(stored.peakNodesHeld).to.be.at.most(10);
          for (const [i, id] of ids.entries()) {
            const found = await tiny.scoreProof(id);
            if (!found?.proof) return expect.fail(`no proof for leaf ${i} of ${n}`);
            expect(processScoreProof(found.proof.leaf, found.proof.proof), `leaf ${i} of ${n}`).to.equal(oz.root);
            if (n < 100 || i % 29 === 0) expect(found.proof.proof, `leaf ${i} of ${n}`).to.deep.equal(oz.getProof(i));
            expect(found.proof.root).to.equal(oz.root);
          }
        }
      },
    );

    it("builds a day's tree once when two instances build it at the same time", async () => {
      const day = dayAfter(10);
      await insertDailyScores(testDb.db, { day, at: AT + 86400 * 10, count: 3_000, digits: 6 });
      const other = createAnchorRepository(testDb.db, { chunkNodes: CHUNK_NODES, pageRows: 500 });
      const outcomes = await Promise.all([anchors.storeDayTree(day, AT + 1), other.storeDayTree(day, AT + 2)]);
      expect(outcomes.map((o) => o.type).sort()).to.deep.equal(["exists", "stored"]);
      const { rows } = await testDb.db.query<{ bytes: number }>(
        "SELECT sum(octet_length(nodes))::int AS bytes FROM score_tree_chunks WHERE day = $1",
        [day],
      );
      expect(rows[0].bytes).to.equal(32 * (2 * 3_000 - 1));
      const { ids, values } = await dayLeaves(testDb.db, day);
      expect((await anchors.scoreProof(ids[7]))?.proof?.root).to.equal(buildScoreTree(values).root);
    });

    it("builds a day of version-1 leaves when one of its scores was stored before migration 014 (no components), and serves their proofs", async () => {
      const day = dayAfter(20);
      await insertDailyScores(testDb.db, { day, at: AT + 86400 * 20, count: 9, digits: 6 });
      await testDb.db.query(
        "UPDATE scores SET identity_points = NULL, reliability_points = NULL, integrity_points = NULL WHERE day = $1 AND agent_id = 'agt_000005'",
        [day],
      );
      const { ids, values } = await dayLeavesV1(testDb.db, day);
      const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_TYPES]);
      expect(await anchors.storeDayTree(day, AT)).to.deep.include({ type: "stored", root: oz.root, leafCount: 9, leafVersion: 1 });
      expect(await anchors.getDay(day)).to.include({ leafVersion: 1 });
      for (const [i, id] of ids.entries()) {
        expect((await anchors.scoreProof(id))?.proof, `leaf ${i}`).to.deep.include({
          leafVersion: 1,
          leafValues: values[i],
          proof: oz.getProof(i),
          root: oz.root,
        });
      }
    });

    it(
      "puts in a leaf the ERC-8004 identity of the agent's erc8004 proof active at the score's time, " +
        "the latest proven of two, and none otherwise",
      async () => {
        const day = dayAfter(21);
        const at = AT + 86400 * 21;
        const registry = "0x00000000000000000000000000000000000a8004";
        const proof = (id: string, agent: string, token: number, verifiedAt: number, removedAt: number | null, kind = "erc8004") =>
          testDb.db.query(
            `INSERT INTO proofs (id, kind, owner_id, agent_id, subject, binding, evidence, verified_at, last_checked_at, removed_at)
           VALUES ($1, $2, 'own_1', $3, $4, NULL, '{}', $5, $5, $6)`,
            [id, kind, agent, kind === "erc8004" ? `31337:${registry}:${token}` : "alice", verifiedAt, removedAt],
          );
        // Agents 1 to 6 (1 to 6 hold no seeded proof: one in 7 does).
        await proof("prf_t1", "agt_000001", 11, at - 10, null);
        await proof("prf_t2", "agt_000002", 12, at - 100, at - 5);
        await proof("prf_t3", "agt_000003", 13, at + 5, null);
        await proof("prf_t4a", "agt_000004", 14, at - 50, null);
        await proof("prf_t4b", "agt_000004", 44, at - 20, null);
        await proof("prf_t5", "agt_000005", 15, at - 100, at);
        await proof("prf_t6", "agt_000006", 16, at - 10, null, "domain");
        await insertDailyScores(testDb.db, { day, at, count: 6, digits: 6 });
        expect(await anchors.storeDayTree(day, at)).to.deep.include({ type: "stored", leafVersion: 2 });
        const { ids } = await dayLeaves(testDb.db, day);
        const identities = [];
        for (const id of ids) identities.push((await anchors.scoreProof(id))?.proof?.leafValues.slice(9));
        const bound = (token: bigint) => [31337n, getAddress(registry), token];
        const none = [0n, zeroAddress, 0n];
        // Removed exactly at the score's time: no longer active then (V6: active while verified_at <= t < removed_at).
        expect(identities).to.deep.equal([bound(11n), none, none, bound(44n), none, none]);
      },
    );

    it("finds an agent's latest daily score whose day is mined, and tells an agent without one from an unknown agent", async () => {
      const day = dayAfter(30);
      const later = dayAfter(31);
      await insertDailyScores(testDb.db, { day, at: AT + 86400 * 30, count: 2, digits: 6 });
      await insertDailyScores(testDb.db, { day: later, at: AT + 86400 * 31, count: 2, digits: 6 });
      await anchors.storeDayTree(day, AT);
      await anchors.storeDayTree(later, AT);
      const idOf = async (d: string) =>
        Number((await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE agent_id = 'agt_000002' AND day = $1", [d])).rows[0].id);
      const mined = (d: string) =>
        anchors.setMined(d, {
          txHash: `0x${"44".repeat(32)}`,
          blockNumber: 9,
          chainId: 31337,
          contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
          anchoredAt: AT,
          minedAt: AT,
          finalAt: AT,
        });
      const { claimedAt } = await anchors.latestAnchoredScore("agt_000002");
      expect(claimedAt).to.be.a("number");
      // The latest daily score, mined or not, says which day's root a proof waits for.
      expect(await anchors.latestAnchoredScore("agt_000002")).to.deep.equal({
        agentExists: true,
        scoreId: null,
        latestDailyDay: later,
        claimedAt,
        releasedAt: null,
      });
      await mined(day);
      expect(await anchors.latestAnchoredScore("agt_000002")).to.deep.equal({
        agentExists: true,
        scoreId: await idOf(day),
        latestDailyDay: later,
        claimedAt,
        releasedAt: null,
      });
      await mined(later);
      expect(await anchors.latestAnchoredScore("agt_000002")).to.deep.equal({
        agentExists: true,
        scoreId: await idOf(later),
        latestDailyDay: later,
        claimedAt,
        releasedAt: null,
      });
      expect(await anchors.latestAnchoredScore("agt_nobody")).to.deep.equal({
        agentExists: false,
        scoreId: null,
        latestDailyDay: null,
        claimedAt: null,
        releasedAt: null,
      });
    });

    it("records a day's transaction only over the one expected, keeps the signed bytes until the anchor is final, and puts a dropped anchor back", async () => {
      const txHash: Hex = `0x${"11".repeat(32)}`;
      const pending: PendingAnchorTx = { txHash, rawTx: "0x02f8", chainId: 31337, contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" };
      for (const day of (await anchors.unfinalDays()).map((d) => d.day).filter((d) => d !== DAY)) {
        await anchors.setMined(day, {
          txHash: `0x${"33".repeat(32)}`,
          blockNumber: 1,
          chainId: 31337,
          contract: pending.contract,
          anchoredAt: AT,
          minedAt: AT,
          finalAt: AT,
        });
      }
      expect(await anchors.anchoringLag()).to.deep.equal({ days: 1, oldestDay: DAY, oldestBuiltAt: (await anchors.getDay(DAY))?.builtAt });
      expect(await anchors.setPendingTx(DAY, `0x${"22".repeat(32)}`, pending), "over a transaction the day does not have").to.equal(false);
      expect(await anchors.setPendingTx(DAY, null, pending)).to.equal(true);
      expect(await anchors.setPendingTx(DAY, null, pending), "twice").to.equal(false);
      expect((await anchors.unfinalDays()).map((d) => [d.day, d.txHash, d.rawTx])).to.deep.equal([[DAY, txHash, "0x02f8"]]);

      const mined = { txHash, blockNumber: 7, chainId: 31337, contract: pending.contract, anchoredAt: AT + 90, minedAt: AT + 200 };
      await anchors.setMined(DAY, { ...mined, finalAt: null });
      expect(await anchors.anchoringLag()).to.deep.equal({ days: 0, oldestDay: null, oldestBuiltAt: null });
      expect(
        (await anchors.unfinalDays()).map((d) => [d.day, d.status, d.rawTx]),
        "mined, not final",
      ).to.deep.equal([[DAY, "mined", "0x02f8"]]);
      expect(await anchors.setDropped(DAY, `0x${"22".repeat(32)}`), "another transaction's").to.equal(false);
      expect(await anchors.setDropped(DAY, txHash)).to.equal(true);
      expect(await anchors.getDay(DAY)).to.include({
        status: "pending",
        txHash,
        rawTx: "0x02f8",
        blockNumber: null,
        minedAt: null,
        finalAt: null,
      });
      expect((await anchors.anchoringLag()).days).to.equal(1);

      await anchors.setMined(DAY, { ...mined, finalAt: AT + 300 });
      expect(await anchors.unfinalDays()).to.deep.equal([]);
      expect(await anchors.setDropped(DAY, txHash), "once final").to.equal(false);
      expect(await anchors.getDay(DAY)).to.include({
        status: "mined",
        txHash,
        rawTx: null,
        blockNumber: 7,
        minedAt: AT + 200,
        anchoredAt: AT + 90,
        finalAt: AT + 300,
      });
      const { ids } = await dayLeaves(testDb.db, DAY);
      expect((await anchors.scoreProof(ids[0]))?.proof?.anchor).to.deep.equal({
        txHash,
        blockNumber: 7,
        chainId: 31337,
        contract: pending.contract,
        anchoredAt: AT + 90,
      });
      expect(await anchors.setPendingTx(DAY, txHash, null), "once mined").to.equal(false);
    });
  });

  describe(`migration 011 (${name})`, () => {
    let testDb: TestDb;
    after(async () => {
      await testDb?.drop();
    });

    it("turns the days stored as one proof per score (migration 003) into chunks, and serves the same proofs after", async () => {
      testDb = await create();
      const { db } = testDb;
      // The schema before 011, applied as the runner would, and days stored in the old layout.
      await db.query(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      for (const m of listMigrations().filter((m) => m.version < 11)) {
        for (const statement of splitStatements(m.sql)) await db.query(statement);
        await db.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      }
      const sizes = [1, 2, 3, 5, 1_500];
      await seedDailyScores(db, { ownerId: "own_1", day: dayAfter(0), at: AT, count: sizes[0], digits: 6, beforeMigration014: true });
      await db.query(
        `INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at)
         SELECT 'agt_' || lpad(i::text, 6, '0'), 'own_1', 1, $1, 'x', $1 FROM generate_series(2, 1500) AS i`,
        [AT - 86400],
      );
      const old: Array<{ day: string; ids: number[]; tree: ReturnType<typeof buildScoreTree> }> = [];
      for (const [k, n] of sizes.entries()) {
        const day = dayAfter(k);
        if (k > 0) await insertDailyScores(db, { day, at: AT + 86400 * k, count: n, digits: 6, beforeMigration014: true });
        const { ids, values } = await dayLeavesV1(db, day);
        const tree = buildScoreTree(values);
        await db.query("INSERT INTO score_anchors (day, root, leaf_count, status, built_at) VALUES ($1, $2, $3, 'pending', $4)", [
          day,
          tree.root,
          n,
          AT,
        ]);
        const proofs = ids.map((_, i) => tree.proof(i));
        await db.query(
          `INSERT INTO score_proofs (score_id, day, leaf, proof)
           SELECT u.id, $2, substring($3::bytea FROM (u.ord - 1)::int * 32 + 1 FOR 32), substring($4::bytea FROM u.off + 1 FOR u.len)
           FROM unnest($1::bigint[], $5::int[], $6::int[]) WITH ORDINALITY AS u(id, off, len, ord)`,
          [
            ids,
            day,
            Buffer.concat(ids.map((_, i) => tree.leaf(i))),
            Buffer.concat(proofs),
            proofs.map((_, i) => 32 * proofs.slice(0, i).reduce((sum, p) => sum + p.length / 32, 0)),
            proofs.map((p) => p.length),
          ],
        );
        old.push({ day, ids, tree });
      }

      expect(await migrate(db)).to.include.members(["011_score_tree_chunks.sql", "014_score_leaf_v2.sql"]);

      const anchors = createAnchorRepository(db);
      for (const { day, ids, tree } of old) {
        const { rows } = await db.query<{ bytes: number }>(
          "SELECT sum(octet_length(nodes))::int AS bytes FROM score_tree_chunks WHERE day = $1",
          [day],
        );
        expect(rows[0].bytes, day).to.equal(32 * (2 * tree.leafCount - 1));
        for (let i = 0; i < ids.length; i += ids.length > 100 ? 37 : 1) {
          const found = await anchors.scoreProof(ids[i]);
          expect(found?.proof, `${day} leaf ${i}`).to.deep.include({
            leafVersion: 1,
            leaf: `0x${tree.leaf(i).toString("hex")}`,
            proof: proofElements(tree.proof(i)),
            root: tree.root,
            day,
          });
        }
      }
      const { rows } = await db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'score_proofs'");
      expect(rows, "score_proofs dropped").to.deep.equal([]);
    });
  });
}
