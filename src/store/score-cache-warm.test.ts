import { expect } from "chai";
import pino from "pino";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { seedDailyScores } from "../test-helpers/daily-scores";
import type { Db } from "./db";
import { createScoreCache } from "./score-cache";
import { createSyncedScoreCache, type LoopLoad, warmPauseMs, warmScoreCache } from "./score-cache-sync";
import { createSqlStore } from "./sql-store";

const DAY = "2026-11-02";
const AT = Date.UTC(2026, 10, 2) / 1000;
const AGENTS = 5000;
const agentId = (i: number) => `agt_${String(i).padStart(5, "0")}`;

/** A loop load that always reports `busy`. */
const steadyLoad = (busy: number): LoopLoad => ({ start: () => undefined, busy: () => busy });

describe("warmPauseMs: the fill's pause after a page while scores are asked for (issue #30)", () => {
  it("takes a quarter of the time to spare, a quarter of the process's time at most and 2 % at least", () => {
    // Nothing else to do: a quarter of the time (a pause three times the page).
    expect(warmPauseMs(10, 0)).to.equal(30);
    // Half the loop busy: a quarter of the other half, 1/8 of the time.
    expect(warmPauseMs(10, 0.5)).to.equal(70);
    // No time to spare: 2 %, a pause 49 times the page.
    expect(warmPauseMs(10, 1)).to.be.closeTo(490, 1e-9);
    // Figures out of range count as their bound.
    expect(warmPauseMs(10, 1.7)).to.equal(warmPauseMs(10, 1));
    expect(warmPauseMs(10, -0.2)).to.equal(warmPauseMs(10, 0));
  });

  it("waits longer the busier the loop, in proportion to the page", () => {
    const busy = [0, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 1];
    const pauses = busy.map((b) => warmPauseMs(4, b));
    for (let i = 1; i < pauses.length; i++) expect(pauses[i]).to.be.at.least(pauses[i - 1]);
    expect(warmPauseMs(8, 0.7)).to.equal(2 * warmPauseMs(4, 0.7));
  });
});

for (const { name, create } of TEST_STORES) {
  describe(`filling the latest-score cache at start on ${name}`, () => {
    let testDb: TestDb;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      await seedDailyScores(testDb.db, { ownerId: "own_warm", day: DAY, at: AT, count: AGENTS, digits: 5 });
    });
    after(() => testDb.drop());

    /**
     * `store` for a fill, watched: the pages it asks for through the real store, their size, the agents `kept` when each
     * was asked for, and when each was asked for and answered.
     */
    const watching = (store: ReturnType<typeof createSqlStore>, kept: () => number) => {
      const pages: Array<{ limit: number; keptBefore: number; asked: number; answered: number }> = [];
      return {
        pages,
        latestScoreSummary: store.latestScoreSummary,
        async latestScoresAfter(after: string, limit: number) {
          const page = { limit, keptBefore: kept(), asked: performance.now(), answered: Number.NaN };
          pages.push(page);
          const rows = await store.latestScoresAfter(after, limit);
          page.answered = performance.now();
          return rows;
        },
      };
    };

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

    it(
      "gives way to reads while scores are asked for: short pages, one at a time, a pause after each " +
        "(issue #30; ten pages of 100, each followed by a pause of 3 times its read: 3-20 s, the longer the busier the machine)",
      async () => {
        const cache = createScoreCache({ maxBytes: 64 * 2 ** 20 });
        const watched = watching(createSqlStore(testDb.db), () => cache.stats().entries);
        const { pages } = watched;
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
      },
    );

    it(
      "waits the longer the less time the event loop had to spare while it waited last: 2 % of the time when none " +
        "(issue #30; two pauses of 49 times a page's read: 14 s on PGlite in a CI run)",
      async () => {
        const cache = createScoreCache({ maxBytes: 64 * 2 ** 20 });
        const watched = watching(createSqlStore(testDb.db), () => cache.stats().entries);
        // Scores are asked for until 300 agents are kept, the loop busy all the while; then it is quiet.
        expect(await warmScoreCache(watched, cache, () => cache.stats().entries < 300, steadyLoad(1))).to.equal(AGENTS);
        const whileAsked = watched.pages.filter((p) => p.limit === 100);
        expect(whileAsked).to.have.length(3);
        // The pause after the second page follows from the load measured during the first pause (the first pause counts
        // the loop as busy whatever it does, the next test): 49 times what the page took (50 times from asked to asked;
        // 1 ms for the timer). An idle loop would have given 3 times.
        const [, second, third] = whileAsked;
        expect(third.asked - second.asked).to.be.at.least(50 * (second.answered - second.asked) - 1);
      },
    );

    it("counts the loop as busy until it has waited once: the first pause is the longest", async () => {
      const cache = createScoreCache({ maxBytes: 64 * 2 ** 20 });
      const watched = watching(createSqlStore(testDb.db), () => cache.stats().entries);
      expect(await warmScoreCache(watched, cache, () => cache.stats().entries < 200, steadyLoad(0))).to.equal(AGENTS);
      const [first, second] = watched.pages;
      expect([first.limit, second.limit]).to.deep.equal([100, 100]);
      expect(second.asked - first.asked).to.be.at.least(50 * (first.answered - first.asked) - 1);
    });

    it("a server's first fill reads full pages while nobody asks: no traffic comes before it is ready (issue #30)", async () => {
      // On PostgreSQL the fill starts once the server listens for other processes' writes: here 300 ms after its start,
      // longer than a read counts as recent, as a loaded machine may take to connect.
      const listen: Db["listen"] = testDb.db.listen?.bind(testDb.db);
      const db: Db = listen
        ? {
            ...testDb.db,
            listen: (channel, handlers) =>
              listen(channel, { ...handlers, listening: (on) => void setTimeout(() => handlers.listening(on), 300) }),
          }
        : testDb.db;
      const synced = createSyncedScoreCache(db, 64 * 2 ** 20, pino({ level: "silent" }));
      const watched = watching(createSqlStore(testDb.db), () => synced.server.stats().entries);
      synced.over(watched);
      synced.start();
      try {
        await synced.server.warmed;
      } finally {
        await synced.stop();
      }
      expect(synced.server.stats().entries).to.equal(AGENTS);
      // Nobody asked: full pages from the first on, and one more that finds none (it ends the fill).
      expect(watched.pages.map((p) => p.limit)).to.deep.equal([1000, 1000, 1000, 1000, 1000, 1000]);
    });
  });
}
