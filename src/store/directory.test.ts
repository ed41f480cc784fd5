import { expect } from "chai";
import { bandOf } from "../method";
import { createManualClock } from "../service/clock";
import { createVraiService } from "../service";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { migrate } from "./migrate";
import { createDirectoryRepository } from "./directory";
import { createSqlStore, type SqlStore } from "./sql-store";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

for (const { name, create } of TEST_STORES) {
  describe(`directory store on ${name}`, () => {
    let testDb: TestDb;
    let store: SqlStore;

    before(async () => {
      testDb = await create();
      await migrate(testDb.db);
      store = createSqlStore(testDb.db);
    });
    after(() => testDb.drop());

    const ranked = () => createDirectoryRepository(testDb.db).rankedAgents({ limit: 100 });
    /** A copy of the agent's latest score with `total` at `at`. */
    async function scoreOf(agentId: string, total: number, at: number) {
      const { id: _id, ...previous } = (await store.read.latestScore(agentId))!;
      return { ...previous, at, total, result: { ...previous.result, total, band: bandOf(total), state: "established" as const } };
    }

    it("keeps each agent's latest score on its row as the store writes scores, and as SQL changes or deletes them", async () => {
      const service = createVraiService({ store, clock: createManualClock(T0), busy: () => false });
      const { ownerId } = await service.accounts.createOwner();
      const a = (await service.accounts.claimNewAgent(ownerId, { name: "a" })).agentId;
      const b = (await service.accounts.claimNewAgent(ownerId, { name: "b" })).agentId;
      const totals = async () => Object.fromEntries((await ranked()).map((e) => [e.agentId, [e.total, e.band, e.state]]));
      expect(await totals()).to.deep.equal({ [a]: [200, "200-399", "provisional"], [b]: [200, "200-399", "provisional"] });

      // The bulk path (one multi-row INSERT): each agent's latest by `at`, not by the order of the rows.
      // The SQL store's transactions are daily batches too (service/scoring.ts looks for it the same way).
      const batch = store.read.scoreBatch();
      for (const score of [await scoreOf(a, 450, T0 + 20), await scoreOf(a, 300, T0 + 10), await scoreOf(b, 250, T0 + 5)]) batch.add(score);
      await store.read.insertScores(batch);
      expect(await totals()).to.deep.equal({ [a]: [450, "400-599", "established"], [b]: [250, "200-399", "established"] });
      // An older score written later does not replace a newer one.
      await store.read.insertScore(await scoreOf(b, 900, T0 + 1));
      expect((await totals())[b]).to.deep.equal([250, "200-399", "established"]);

      await testDb.db.query("DELETE FROM scores WHERE agent_id = $1 AND at = $2", [a, T0 + 20]);
      expect((await totals())[a]).to.deep.equal([300, "200-399", "established"]);
      await testDb.db.query(
        "UPDATE scores SET total = 610, result = json_build_object('band', '600-799', 'state', 'provisional') WHERE agent_id = $1 AND at = $2",
        [a, T0 + 10],
      );
      expect((await totals())[a]).to.deep.equal([610, "600-799", "provisional"]);
      await testDb.db.query("DELETE FROM scores WHERE agent_id = $1", [b]);
      expect(Object.keys(await totals())).to.deep.equal([a]);
      await testDb.db.query("TRUNCATE scores");
      expect(await ranked()).to.deep.equal([]);
    });
  });
}
