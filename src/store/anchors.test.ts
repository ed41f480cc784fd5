import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { expect } from "chai";
import type { Hex } from "viem";
import { buildScoreTree, processScoreProof, proofElements, SCORE_LEAF_TYPES, type ScoreLeafValues } from "../chain/score-tree";
import { insertDailyScores, seedDailyScores } from "../test-helpers/daily-scores";
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

/** The daily scores of `day` as leaf values, in id order, with their ids. */
async function dayLeaves(db: Queryable, day: string): Promise<{ ids: number[]; values: ScoreLeafValues[] }> {
  const { rows } = await db.query<{ id: number; agent_id: string; method: string; sha256: string }>(
    "SELECT id, agent_id, method, sha256 FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY id",
    [day],
  );
  return { ids: rows.map((r) => Number(r.id)), values: rows.map((r) => [r.agent_id, day, r.method, `0x${r.sha256}`]) };
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
      await seedDailyScores(db, { ownerId: "own_1", day: DAY, at: AT, count: LEAVES, digits: 6 });
      const change = await db.query<{ id: number }>(
        "INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total) VALUES ('agt_000001', '0.2', $1, 'change', NULL, '{}', $2, '{}', 0) RETURNING id",
        [AT + 10, "ab".repeat(32)],
      );
      changeScoreId = Number(change.rows[0].id);
    });
    after(async () => {
      await testDb?.drop();
    });

    it("has no proof for a daily score before its day's tree is stored, none ever for a change score, and nothing for an unknown id", async () => {
      const { ids } = await dayLeaves(testDb.db, DAY);
      expect(await anchors.scoreProof(ids[0])).to.deep.equal({ trigger: "daily", proof: null });
      expect(await anchors.scoreProof(changeScoreId)).to.deep.equal({ trigger: "change", proof: null });
      expect(await anchors.scoreProof(999_999_999)).to.equal(null);
    });

    it("stores a day's tree once, as chunks of its nodes (64 bytes a leaf), and derives each score's proof from them", async () => {
      const { ids, values } = await dayLeaves(testDb.db, DAY);
      const tree = buildScoreTree(values);
      const stored = await anchors.storeDayTree(DAY, AT + 60);
      expect(stored).to.deep.include({ type: "stored", root: tree.root, leafCount: LEAVES });
      expect(await anchors.getDay(DAY)).to.deep.equal({
        day: DAY, root: tree.root, leafCount: LEAVES, status: "pending", builtAt: AT + 60, chainId: null, contract: null, txHash: null, rawTx: null, blockNumber: null, minedAt: null,
      });
      // The first and last scores of each page, and others across the chunks.
      for (const i of [0, PAGE_ROWS - 1, PAGE_ROWS, 2 * PAGE_ROWS, 1234, 3777, LEAVES - 1]) {
        const found = await anchors.scoreProof(ids[i]);
        expect(found?.proof, `proof ${i}`).to.deep.equal({ scoreId: ids[i], leaf: `0x${tree.leaf(i).toString("hex")}`, leafValues: values[i], proof: proofElements(tree.proof(i)), root: tree.root, day: DAY, anchor: null });
      }
      const { rows } = await testDb.db.query<{ chunks: number; bytes: number; fences: number }>(
        "SELECT count(*)::int AS chunks, sum(octet_length(nodes))::int AS bytes, count(min_leaf)::int AS fences FROM score_tree_chunks WHERE day = $1",
        [DAY],
      );
      expect(rows[0]).to.deep.equal({ chunks: Math.ceil((2 * LEAVES - 1) / CHUNK_NODES), bytes: 32 * (2 * LEAVES - 1), fences: Math.ceil((2 * LEAVES - 1) / CHUNK_NODES) - Math.floor((LEAVES - 1) / CHUNK_NODES) });
      const proofTable = await testDb.db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'score_proofs'");
      expect(proofTable.rows, "no proof stored per score").to.deep.equal([]);

      expect(await anchors.storeDayTree(DAY, AT + 120), "a second tree of the day").to.deep.equal({ type: "exists" });
      expect((await anchors.getDay(DAY))?.root).to.equal(tree.root);
    });

    it("stores nothing for a day without daily scores", async () => {
      expect(await anchors.storeDayTree("2026-01-01", AT)).to.deep.equal({ type: "empty" });
      expect(await anchors.getDay("2026-01-01")).to.equal(null);
    });

    it("serves, for trees of 1, 2, 3, 5 and 301 leaves in chunks of 2 nodes and pages of 3, every leaf's proof: StandardMerkleTree's, leading to the anchored root", async () => {
      const tiny = createAnchorRepository(testDb.db, { chunkNodes: 2, pageRows: 3 });
      for (const [k, n] of [1, 2, 3, 5, 301].entries()) {
        const day = dayAfter(k + 1);
        await insertDailyScores(testDb.db, { day, at: AT + 86400 * (k + 1), count: n, digits: 6 });
        const { ids, values } = await dayLeaves(testDb.db, day);
        const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_TYPES]);
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
    });

    it("builds a day's tree once when two instances build it at the same time", async () => {
      const day = dayAfter(10);
      await insertDailyScores(testDb.db, { day, at: AT + 86400 * 10, count: 3_000, digits: 6 });
      const other = createAnchorRepository(testDb.db, { chunkNodes: CHUNK_NODES, pageRows: 500 });
      const outcomes = await Promise.all([anchors.storeDayTree(day, AT + 1), other.storeDayTree(day, AT + 2)]);
      expect(outcomes.map((o) => o.type).sort()).to.deep.equal(["exists", "stored"]);
      const { rows } = await testDb.db.query<{ bytes: number }>("SELECT sum(octet_length(nodes))::int AS bytes FROM score_tree_chunks WHERE day = $1", [day]);
      expect(rows[0].bytes).to.equal(32 * (2 * 3_000 - 1));
      const { ids, values } = await dayLeaves(testDb.db, day);
      expect((await anchors.scoreProof(ids[7]))?.proof?.root).to.equal(buildScoreTree(values).root);
    });

    it("records a day's transaction only over the one expected, and forgets the signed bytes once mined", async () => {
      const txHash: Hex = `0x${"11".repeat(32)}`;
      const pending: PendingAnchorTx = { txHash, rawTx: "0x02f8", chainId: 31337, contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" };
      for (const day of (await anchors.unminedDays()).map((d) => d.day).filter((d) => d !== DAY)) {
        await anchors.setMined(day, { txHash: `0x${"33".repeat(32)}`, blockNumber: 1, chainId: 31337, contract: pending.contract, minedAt: AT });
      }
      expect(await anchors.setPendingTx(DAY, `0x${"22".repeat(32)}`, pending), "over a transaction the day does not have").to.equal(false);
      expect(await anchors.setPendingTx(DAY, null, pending)).to.equal(true);
      expect(await anchors.setPendingTx(DAY, null, pending), "twice").to.equal(false);
      expect((await anchors.unminedDays()).map((d) => [d.day, d.txHash, d.rawTx])).to.deep.equal([[DAY, txHash, "0x02f8"]]);

      await anchors.setMined(DAY, { txHash, blockNumber: 7, chainId: 31337, contract: pending.contract, minedAt: AT + 200 });
      expect(await anchors.unminedDays()).to.deep.equal([]);
      expect(await anchors.getDay(DAY)).to.include({ status: "mined", txHash, rawTx: null, blockNumber: 7, minedAt: AT + 200 });
      const { ids } = await dayLeaves(testDb.db, DAY);
      expect((await anchors.scoreProof(ids[0]))?.proof?.anchor).to.deep.equal({ txHash, blockNumber: 7, chainId: 31337, contract: pending.contract });
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
      await db.query("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
      for (const m of listMigrations().filter((m) => m.version < 11)) {
        for (const statement of splitStatements(m.sql)) await db.query(statement);
        await db.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      }
      const sizes = [1, 2, 3, 5, 1_500];
      await seedDailyScores(db, { ownerId: "own_1", day: dayAfter(0), at: AT, count: sizes[0], digits: 6, schemaBefore016: true });
      await db.query("INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at) SELECT 'agt_' || lpad(i::text, 6, '0'), 'own_1', 1, $1, 'x', $1 FROM generate_series(2, 1500) AS i", [AT - 86400]);
      const old: Array<{ day: string; ids: number[]; tree: ReturnType<typeof buildScoreTree> }> = [];
      for (const [k, n] of sizes.entries()) {
        const day = dayAfter(k);
        if (k > 0) await insertDailyScores(db, { day, at: AT + 86400 * k, count: n, digits: 6, schemaBefore016: true });
        const { ids, values } = await dayLeaves(db, day);
        const tree = buildScoreTree(values);
        await db.query("INSERT INTO score_anchors (day, root, leaf_count, status, built_at) VALUES ($1, $2, $3, 'pending', $4)", [day, tree.root, n, AT]);
        const proofs = ids.map((_, i) => tree.proof(i));
        await db.query(
          `INSERT INTO score_proofs (score_id, day, leaf, proof)
           SELECT u.id, $2, substring($3::bytea FROM (u.ord - 1)::int * 32 + 1 FOR 32), substring($4::bytea FROM u.off + 1 FOR u.len)
           FROM unnest($1::bigint[], $5::int[], $6::int[]) WITH ORDINALITY AS u(id, off, len, ord)`,
          [ids, day, Buffer.concat(ids.map((_, i) => tree.leaf(i))), Buffer.concat(proofs), proofs.map((_, i) => 32 * proofs.slice(0, i).reduce((sum, p) => sum + p.length / 32, 0)), proofs.map((p) => p.length)],
        );
        old.push({ day, ids, tree });
      }

      expect(await migrate(db)).to.include("011_score_tree_chunks.sql");

      const anchors = createAnchorRepository(db);
      for (const { day, ids, tree } of old) {
        const { rows } = await db.query<{ bytes: number }>("SELECT sum(octet_length(nodes))::int AS bytes FROM score_tree_chunks WHERE day = $1", [day]);
        expect(rows[0].bytes, day).to.equal(32 * (2 * tree.leafCount - 1));
        for (let i = 0; i < ids.length; i += ids.length > 100 ? 37 : 1) {
          const found = await anchors.scoreProof(ids[i]);
          expect(found?.proof, `${day} leaf ${i}`).to.deep.include({ leaf: `0x${tree.leaf(i).toString("hex")}`, proof: proofElements(tree.proof(i)), root: tree.root, day });
        }
      }
      const { rows } = await db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'score_proofs'");
      expect(rows, "score_proofs dropped").to.deep.equal([]);
    });
  });
}
