import { expect } from "chai";
import pino from "pino";
import { buildScoreInputs, packResult, scoreFromInputs } from "../method";
import { createVraiService } from "../service";
import { createManualClock } from "../service/clock";
import { createPgDb, type Db } from "../store/db";
import { createSqlStore } from "../store/sql-store";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { eventually } from "../test-helpers/eventually";
import { startApiServer, type ApiServer } from "../app/server";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const OPERATOR = "operator-cache-test-0123456789";
const METRICS_TOKEN = "metrics-cache-test-0123456789";

async function start(testDb: TestDb): Promise<ApiServer> {
  const server = await startApiServer({
    db: testDb.db,
    operatorToken: OPERATOR,
    clock: createManualClock(T0),
    logger: pino({ level: "silent" }),
    rateLimit: { perMinute: 100_000, burst: 10_000 },
    metrics: { token: METRICS_TOKEN },
  });
  await server.scoreCache?.warmed;
  return server;
}

async function claim(server: ApiServer): Promise<string> {
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const owner = (await (await post("/v1/owners", {})).json()) as { token: string };
  return ((await (await post("/v1/agents", {}, owner.token)).json()) as { agentId: string }).agentId;
}

async function latest(server: ApiServer, agentId: string): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${server.url}/v1/agents/${agentId}/score`);
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/**
 * Runs `test` with a server on `testDb` and another process's pool on the same database (its
 * writes reach the server only by notification), closing both afterwards.
 */
async function withOtherProcess(testDb: TestDb, test: (server: ApiServer, other: Db) => Promise<void>): Promise<void> {
  const server = await start(testDb);
  const other = createPgDb(testDb.url as string);
  try {
    await test(server, other);
  } finally {
    await other.close();
    await server.close();
  }
}

/** Scores `agentId` an hour after T0 through the service of the other process. */
const scoreElsewhere = (other: Db, agentId: string) =>
  createVraiService({ store: createSqlStore(other), clock: createManualClock(T0 + 3600), busy: () => false }).scoring.scoreNow(agentId);

const storedLatest = async (testDb: TestDb, agentId: string) =>
  (
    await testDb.db.query<{ id: number; total: number }>(
      "SELECT id, total FROM scores WHERE agent_id = $1 ORDER BY at DESC, id DESC LIMIT 1",
      [agentId],
    )
  ).rows[0];

for (const { name, create } of TEST_STORES) {
  describe(`latest-score cache of the API on ${name}`, () => {
    let testDb: TestDb;

    beforeEach(async () => {
      testDb = await create();
    });
    afterEach(async () => {
      await testDb.drop();
    });

    it(
      "serves a score the service wrote as soon as it commits, read through once and then from memory, " +
        "and the new one as soon as a penalty changes it",
      async () => {
        const server = await start(testDb);
        try {
          const agentId = await claim(server);
          const before = server.scoreCache!.stats();
          const first = await latest(server, agentId);
          expect(first.body).to.include({ id: (await storedLatest(testDb, agentId)).id, total: 200 });
          expect(server.scoreCache!.stats()).to.include({ hits: before.hits, misses: before.misses + 1 });
          expect((await latest(server, agentId)).body).to.deep.equal(first.body);
          expect(server.scoreCache!.stats()).to.include({ hits: before.hits + 1, misses: before.misses + 1 });

          const penalty = await fetch(`${server.url}/v1/operator/penalties`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${OPERATOR}` },
            body: JSON.stringify({ agentId, code: "rate_abuse", points: 20, days: 30, reason: "test" }),
          });
          expect(penalty.status).to.equal(201);
          const second = await latest(server, agentId);
          const stored = await storedLatest(testDb, agentId);
          expect(second.body).to.include({ id: stored.id, total: stored.total });
          expect(stored.total).to.be.below(200);
          // The cached result is the one a read of the table gives (computed from the stored inputs, migration 010).
          const read = await createSqlStore(testDb.db).read.getScore(stored.id);
          expect(JSON.stringify(second.body.result)).to.equal(JSON.stringify(read!.result));
          // The penalty's commit dropped the entry: one read through again, then from memory.
          expect(server.scoreCache!.stats().misses).to.equal(before.misses + 2);
          expect((await latest(server, agentId)).body).to.deep.equal(second.body);
          expect(server.scoreCache!.stats().misses).to.equal(before.misses + 2);
        } finally {
          await server.close();
        }
      },
    );

    it("fills itself from the database at start, then answers without reading it", async () => {
      const first = await start(testDb);
      const agents = [await claim(first), await claim(first), await claim(first)];
      await first.close();
      const server = await start(testDb);
      try {
        expect(server.scoreCache!.stats()).to.include({ entries: 3, enabled: true });
        for (const agentId of agents) expect((await latest(server, agentId)).body.id).to.equal((await storedLatest(testDb, agentId)).id);
        expect(server.scoreCache!.stats()).to.include({ hits: 3, misses: 0 });
        // An agent nobody asked for is still a 404, and is not cached.
        expect((await latest(server, "agt_nobodyhere00")).status).to.equal(404);
        expect(server.scoreCache!.stats().entries).to.equal(3);
        const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
        expect(metrics).to.match(/^vrai_score_cache_entries 3$/m);
        expect(metrics).to.match(/^vrai_score_cache_hits_total 3$/m);
        expect(metrics).to.match(/^vrai_score_cache_misses_total 1$/m);
      } finally {
        await server.close();
      }
    });

    it("leaves out an agent its owner unclaimed: dropped at the unclaim's commit, and not filled at start (issue #29)", async () => {
      const first = await start(testDb);
      const [kept, gone] = [await claim(first), await claim(first)];
      expect((await latest(first, gone)).status).to.equal(200);
      await first.service.accounts.unclaim((await first.reads.agent(gone)).ownerId, gone);
      expect((await latest(first, gone)).body.error.code).to.equal("agent_unclaimed");
      await first.close();
      const server = await start(testDb);
      try {
        expect(server.scoreCache!.stats()).to.include({ entries: 1 });
        expect((await latest(server, kept)).status).to.equal(200);
        const answer = await latest(server, gone);
        expect([answer.status, answer.body.error.code]).to.deep.equal([404, "agent_unclaimed"]);
        expect(server.scoreCache!.stats().entries).to.equal(1);
      } finally {
        await server.close();
      }
    });

    if (name !== "postgresql") return;

    it("hears an agent another process unclaims, and answers 404 agent_unclaimed (issue #29)", () =>
      withOtherProcess(testDb, async (server, other) => {
        const agentId = await claim(server);
        expect((await latest(server, agentId)).status).to.equal(200);
        const elsewhere = createVraiService({ store: createSqlStore(other), clock: createManualClock(T0 + 3600), busy: () => false });
        await elsewhere.accounts.unclaim((await server.reads.agent(agentId)).ownerId, agentId);
        await eventually(async () => (await latest(server, agentId)).status === 404, "the agent's score to be gone");
        expect((await latest(server, agentId)).body.error.code).to.equal("agent_unclaimed");
      }));

    it("hears scores another process writes or deletes, and serves the table's latest", () =>
      withOtherProcess(testDb, async (server, other) => {
        const agentId = await claim(server);
        const cachedId = (await latest(server, agentId)).body.id as number;
        const written = await scoreElsewhere(other, agentId);
        expect(written.id).to.be.above(cachedId);
        await eventually(async () => (await latest(server, agentId)).body.id === written.id, "the new score to be served");
        await other.query("DELETE FROM scores WHERE agent_id = $1", [agentId]);
        await eventually(async () => (await latest(server, agentId)).status === 404, "the agent's score to be gone");
        expect((await latest(server, agentId)).body.error.code).to.equal("score_not_found");
      }));

    it("turns itself off while it cannot hear other processes, and does not serve what it missed meanwhile", () =>
      withOtherProcess(testDb, async (server, other) => {
        const agentId = await claim(server);
        const cachedId = (await latest(server, agentId)).body.id as number;
        const { rows } = await other.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN vrai_scores'",
        );
        expect(rows).to.have.length(1);
        await other.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
        await eventually(() => !server.scoreCache!.stats().enabled, "the cache to be switched off", 900);
        // Written while nobody listens: its notification is lost.
        const written = await scoreElsewhere(other, agentId);
        expect(written.id).to.be.above(cachedId);
        expect((await latest(server, agentId)).body.id).to.equal(written.id);
        await eventually(() => server.scoreCache!.stats().enabled, "the cache to be on again");
        await eventually(() => server.scoreCache!.stats().entries === 1, "one entry cached");
        const hits = server.scoreCache!.stats().hits;
        expect((await latest(server, agentId)).body.id).to.equal(written.id);
        expect(server.scoreCache!.stats().hits).to.equal(hits + 1);
      }));

    it("after another process rescored too many agents to name in one notification, drops everything and fills again", () =>
      withOtherProcess(testDb, async (server, other) => {
        const agentId = await claim(server);
        await latest(server, agentId);
        // 700 agents scored in one statement elsewhere: their ids do not fit a notification, which says "*".
        await other.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('own_bulk', 'x', 0)");
        await other.query(
          `INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at)
           SELECT 'agt_bulk_' || i, 'own_bulk', i, 0, 'x', 0 FROM generate_series(1, 700) AS i`,
        );
        // Each with the compact result of a newly claimed agent at T0 (the row's agent, digest and total go with it).
        const { result } = scoreFromInputs(
          buildScoreInputs({ agent: "agt_bulk", method: "0.2", at: T0, claimedAt: T0 - 86_400, proofs: [], penalties: [], days: [] }),
        );
        const packed = packResult(result, T0);
        // Each agent's row marked with its latest score in the same statement, as another instance's store does (migration 008).
        await other.query(
          `WITH inserted AS (
             INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total, packed)
             SELECT 'agt_bulk_' || i, '0.2', $1::bigint, 'change', NULL, '{}', repeat('0', 64), '{}', i, $2 FROM generate_series(1, 700) AS i
             RETURNING id, agent_id, at, total
           )
           UPDATE agents a SET score_id = n.id, score_at = n.at, score_total = n.total, score_band = $3, score_state = $4
           FROM inserted n WHERE a.id = n.agent_id`,
          [T0, packed, result.band, result.state],
        );
        await eventually(() => server.scoreCache!.stats().entries === 701, "701 entries cached");
        const hits = server.scoreCache!.stats().hits;
        const bulk = await latest(server, "agt_bulk_7");
        expect(bulk.body).to.include({ agentId: "agt_bulk_7", total: 7 });
        expect(bulk.body.result).to.deep.equal({ ...result, agent: "agt_bulk_7", total: 7, sha256: "0".repeat(64) });
        expect(server.scoreCache!.stats().hits).to.equal(hits + 1);
      }));
  });
}
