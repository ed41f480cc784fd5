/**
 * A started server is ready (`GET /v1/ready` 200) only once its latest-score cache is filled and its request path warmed
 * (issue #30), and the warm-up's reads are nobody's: not in its metrics, not charged to 127.0.0.1's rate limit.
 */
import { expect } from "chai";
import { startApiServer } from "./server";
import type { Db } from "../store/db";
import { createMigratedTestDb, type TestDb } from "../test-helpers/db";
import { seedDailyScores } from "../test-helpers/daily-scores";
import { capturedLogger } from "../test-helpers/logs";

const OPERATOR_TOKEN = "operator-ready-test-0123456789";
const METRICS_TOKEN = "metrics-token-ready-test-0123456789";
const AT = 1_790_000_000;
/** More than the directory's first page (100): the warm-up reads agents sampled from the cache, not that page's. */
const AGENTS = 120;
/** More than the default rate limit's burst (120) from one address. */
const WARM_UP_REQUESTS = 300;

describe("a started server is ready once its cache is filled and its request path warmed (issue #30)", () => {
  let testDb: TestDb;
  before(async () => {
    testDb = await createMigratedTestDb();
    await seedDailyScores(testDb.db, { ownerId: "own_ready", day: "2026-09-21", at: AT, count: AGENTS, digits: 4 });
  });
  after(async () => {
    await testDb?.drop();
  });

  it("answers 503 warming_up until then, 200 after; the warm-up read scores, and is neither in /metrics nor rate limited", async () => {
    // The cache fills once the server hears other processes' writes: held here until the test lets it.
    let letListen: () => void = () => undefined;
    const listenHeld = new Promise<void>((resolve) => (letListen = resolve));
    const listen = testDb.db.listen?.bind(testDb.db);
    if (listen === undefined) throw new Error("PostgreSQL listens");
    const db: Db = {
      ...testDb.db,
      listen: (channel, handlers) =>
        listen(channel, { ...handlers, listening: (on) => void listenHeld.then(() => handlers.listening(on)) }),
    };
    const log = capturedLogger();
    const server = await startApiServer({
      db,
      operatorToken: OPERATOR_TOKEN,
      logger: log.logger,
      metrics: { token: METRICS_TOKEN },
      warmUpRequests: WARM_UP_REQUESTS,
    });
    let ready = false;
    void server.ready.then(() => (ready = true));
    try {
      const warming = await fetch(`${server.url}/v1/ready`);
      expect(warming.status).to.equal(503);
      expect(warming.headers.get("retry-after")).to.equal("1");
      expect(((await warming.json()) as { error: { code: string } }).error.code).to.equal("warming_up");
      expect(ready, "ready before the cache is filled").to.equal(false);

      letListen();
      await server.ready;
      const answer = await fetch(`${server.url}/v1/ready`);
      expect(answer.status).to.equal(200);
      expect(await answer.json()).to.deep.equal({ status: "ready" });

      const [entry] = log.entries("api ready");
      expect(entry.warmUp).to.include({ requests: WARM_UP_REQUESTS, ok: WARM_UP_REQUESTS, agents: AGENTS });
      // The scores of the agents sampled from the cache were read, through the cache.
      const cache = server.scoreCache?.stats();
      expect(cache?.entries).to.equal(AGENTS);
      // Every request but the directory's and the method's (one in AGENTS + 1 of the rest) read a cached score.
      expect(cache?.hits).to.be.at.least(WARM_UP_REQUESTS - 1 - Math.ceil((WARM_UP_REQUESTS - 1) / (AGENTS + 1)));

      // Not counted by the API's metrics, nor charged to the address it came from (more requests than its burst).
      const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      expect(metrics).to.not.match(/vrai_http_requests_total\{[^}]*route="\/v1\/agents\/:id\/score"/);
      expect(metrics).to.not.match(/vrai_http_requests_total\{[^}]*route="\/v1\/method"/);
      const score = await fetch(`${server.url}/v1/agents/agt_0001/score`);
      expect(score.status).to.equal(200);
      await score.arrayBuffer();
    } finally {
      letListen();
      await server.close();
    }
  });

  it("is ready at once without a cache or a warm-up, and a close while it warms up stops it", async () => {
    const bare = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      scoreCacheBytes: 0,
      logger: capturedLogger().logger,
    });
    try {
      await bare.ready;
      expect((await fetch(`${bare.url}/v1/ready`)).status).to.equal(200);
    } finally {
      await bare.close();
    }
    const log = capturedLogger();
    const closing = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: log.logger, warmUpRequests: 100_000 });
    await closing.close();
    // Closed before the warm-up ended: it never reported ready.
    expect(log.entries("api ready")).to.deep.equal([]);
  });
});
