import { expect } from "chai";
import type { Hex } from "viem";
import { buildScoreTree, proofElements } from "../chain/score-tree";
import { seedDailyScores } from "../test-helpers/daily-scores";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { createAnchorRepository, type AnchorRepository, type PendingAnchorTx } from "./anchors";

const DAY = "2026-11-29";
const AT = Date.UTC(2026, 10, 29) / 1000;
/** One more than the proofs one INSERT carries, so that a tree is stored in two statements. */
const LEAVES = 20_001;

for (const { name, create } of TEST_STORES) {
  describe(`the anchor repository (${name})`, () => {
    let testDb: TestDb;
    let anchors: AnchorRepository;
    let changeScoreId: number;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      anchors = createAnchorRepository(testDb.db);
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

    it("reads a day's daily scores as leaf values in id order, and a score's proof only once its day's tree is stored", async () => {
      const { ids, values } = await anchors.dayLeaves(DAY);
      expect(ids).to.have.length(LEAVES);
      expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));
      expect(values[0]).to.deep.equal(["agt_000001", DAY, "0.2", `0x${(await testDb.db.query<{ sha256: string }>("SELECT sha256 FROM scores WHERE id = $1", [ids[0]])).rows[0].sha256}`]);
      expect(await anchors.scoreProof(ids[0])).to.deep.equal({ trigger: "daily", proof: null });
      expect(await anchors.scoreProof(changeScoreId)).to.deep.equal({ trigger: "change", proof: null });
      expect(await anchors.scoreProof(999_999_999)).to.equal(null);
    });

    it("stores a tree's root and every score's leaf and proof once, across insert batches", async () => {
      const { ids, values } = await anchors.dayLeaves(DAY);
      const tree = buildScoreTree(values);
      expect(await anchors.insertTree(DAY, ids, tree, AT + 60)).to.equal(true);
      expect(await anchors.getDay(DAY)).to.deep.equal({
        day: DAY, root: tree.root, leafCount: LEAVES, status: "pending", builtAt: AT + 60, chainId: null, contract: null, txHash: null, rawTx: null, blockNumber: null, minedAt: null,
      });
      // The first and last proofs of each INSERT batch.
      for (const i of [0, 19_999, 20_000, LEAVES - 1]) {
        const found = await anchors.scoreProof(ids[i]);
        expect(found?.proof, `proof ${i}`).to.deep.include({ scoreId: ids[i], leaf: `0x${tree.leaf(i).toString("hex")}`, leafValues: values[i], proof: proofElements(tree.proof(i)), root: tree.root, day: DAY, anchor: null });
      }
      const { rows } = await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM score_proofs");
      expect(rows[0].n).to.equal(LEAVES);

      const other = buildScoreTree(values.slice(1));
      expect(await anchors.insertTree(DAY, ids.slice(1), other, AT + 120), "a second tree of the day").to.equal(false);
      expect((await anchors.getDay(DAY))?.root).to.equal(tree.root);
    });

    it("records a day's transaction only over the one expected, and forgets the signed bytes once mined", async () => {
      const txHash: Hex = `0x${"11".repeat(32)}`;
      const pending: PendingAnchorTx = { txHash, rawTx: "0x02f8", chainId: 31337, contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3" };
      expect(await anchors.setPendingTx(DAY, `0x${"22".repeat(32)}`, pending), "over a transaction the day does not have").to.equal(false);
      expect(await anchors.setPendingTx(DAY, null, pending)).to.equal(true);
      expect(await anchors.setPendingTx(DAY, null, pending), "twice").to.equal(false);
      expect((await anchors.unminedDays()).map((d) => [d.day, d.txHash, d.rawTx])).to.deep.equal([[DAY, txHash, "0x02f8"]]);

      await anchors.setMined(DAY, { txHash, blockNumber: 7, chainId: 31337, contract: pending.contract, minedAt: AT + 200 });
      expect(await anchors.unminedDays()).to.deep.equal([]);
      expect(await anchors.getDay(DAY)).to.include({ status: "mined", txHash, rawTx: null, blockNumber: 7, minedAt: AT + 200 });
      const { ids } = await anchors.dayLeaves(DAY);
      expect((await anchors.scoreProof(ids[0]))?.proof?.anchor).to.deep.equal({ txHash, blockNumber: 7, chainId: 31337, contract: pending.contract });
      expect(await anchors.setPendingTx(DAY, txHash, null), "once mined").to.equal(false);
    });
  });
}
