import { expect } from "chai";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { seedDailyScores } from "../test-helpers/daily-scores";
import { createScoreCache } from "./score-cache";
import { warmScoreCache } from "./score-cache-sync";
import { createSqlStore } from "./sql-store";

const DAY = "2026-11-02";
const AT = Date.UTC(2026, 10, 2) / 1000;
const AGENTS = 5000;
const agentId = (i: number) => `agt_${String(i).padStart(5, "0")}`;

for (const { name, create } of TEST_STORES) {
  describe(`filling the latest-score cache at start on ${name}`, () => {
    let testDb: TestDb;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      await seedDailyScores(testDb.db, { ownerId: "own_warm", day: DAY, at: AT, count: AGENTS, digits: 5 });
    });
    after(() => testDb.drop());

    it("reads every agent's latest score when they all fit, and answers them from memory", async () => {
      const cache = createScoreCache({ maxBytes: 64 * 2 ** 20 });
      expect(await warmScoreCache(createSqlStore(testDb.db), cache)).to.equal(AGENTS);
      expect(cache.stats()).to.include({ entries: AGENTS, evictions: 0 });
      const stored = await createSqlStore(testDb.db).read.latestScore(agentId(4321));
      expect(cache.get(agentId(4321))).to.deep.include({ id: stored!.id, sha256: stored!.sha256, day: DAY, at: AT });
    });

    it("stops once the cache is full instead of reading every agent, within its cap", async () => {
      // About 200 bytes an entry here: a 200 kB cache holds about a thousand of the 5,000.
      const cache = createScoreCache({ maxBytes: 200_000 });
      const offered = await warmScoreCache(createSqlStore(testDb.db), cache);
      const { entries, bytes, evictions } = cache.stats();
      // It stopped after the batch of 1,000 that filled it: not every agent was read.
      expect(evictions).to.be.greaterThan(0);
      expect(offered).to.be.at.most(2000);
      expect(entries).to.be.greaterThan(500).and.at.most(offered);
      expect(bytes).to.be.at.most(200_000);
      // Only agents it read are kept (the answers of a batch after the eviction it caused are refused, as any read's).
      const kept = Array.from({ length: AGENTS }, (_, i) => agentId(i + 1)).filter((id) => cache.get(id) !== undefined);
      expect(kept).to.have.length(entries);
      expect(kept[kept.length - 1] <= agentId(offered)).to.equal(true);
    });

    it("gives way to reads while scores are asked for: short pages, one at a time, a pause after each (issue #30)", async () => {
      const store = createSqlStore(testDb.db);
      const cache = createScoreCache({ maxBytes: 64 * 2 ** 20 });
      // The pages it asks for through the real store: their size, the agents kept when each was asked for, and when
      // each was asked for and answered.
      const pages: Array<{ limit: number; keptBefore: number; asked: number; answered: number }> = [];
      const watched = {
        async latestScoresAfter(after: string, limit: number) {
          const page = { limit, keptBefore: cache.stats().entries, asked: performance.now(), answered: Number.NaN };
          pages.push(page);
          const rows = await store.latestScoresAfter(after, limit);
          page.answered = performance.now();
          return rows;
        },
      };
      // Scores are asked for until 1,000 agents are kept, then it is quiet.
      const asked = () => cache.stats().entries < 1000;
      expect(await warmScoreCache(watched, cache, asked)).to.equal(AGENTS);
      expect(cache.stats().entries).to.equal(AGENTS);
      const whileAsked = pages.filter((p) => p.limit === 100);
      expect(whileAsked).to.have.length(10);
      expect(pages.slice(0, 10)).to.deep.equal(whileAsked);
      for (const [i, page] of whileAsked.entries()) {
        // One at a time: each asked for once the one before it was kept...
        expect(page.keptBefore).to.equal(i * 100);
        // ...and after a pause of at least three times what that one took to read and keep (1 ms for the timer's rounding).
        if (i > 0)
          expect(page.asked - whileAsked[i - 1].asked).to.be.at.least(4 * (whileAsked[i - 1].answered - whileAsked[i - 1].asked) - 1);
      }
      // Then full pages, each but the first asked for before the one before it was kept.
      const quiet = pages.slice(10);
      expect(quiet.map((p) => p.limit)).to.deep.equal([1000, 1000, 1000, 1000, 1000]);
      expect(quiet.map((p) => p.keptBefore)).to.deep.equal([1000, 1000, 2000, 3000, 4000]);
    });
  });
}
