/**
 * The API while PostgreSQL ends the service's sessions (issue #30's soak, as a test): an operator's
 * `pg_terminate_backend` on every connection of the service's database, three times under a load of check-ins
 * and score reads. PostgreSQL stays up; the pool reconnects. Every answer is a 2xx or a 503 with Retry-After
 * (the statements caught in a terminated session), and every acknowledged check-in is stored exactly once.
 */
import { expect } from "chai";
import pg from "pg";
import pino from "pino";
import { createPgDb, type Db } from "../store/db";
import { createTestPgDb, type TestDb } from "../test-helpers/db";
import { startApiServer, type ApiServer } from "./server";

const OPERATOR_TOKEN = "operator-token-for-the-termination-test";
const AGENTS = 120;
const WORKERS = 8;
/** The sessions are terminated after this many answers, and again after each further this many. */
const ANSWERS_BETWEEN_TERMINATIONS = 40;
const TERMINATIONS = 3;

type Answer = { status: number; retryAfter: string | null; code: string | null };

describe("the API while its database sessions are terminated (pg_terminate_backend)", function () {
  this.timeout(120_000);
  let testDb: TestDb;
  let db: Db;
  let server: ApiServer;
  let admin: pg.Client;
  before(async () => {
    testDb = await createTestPgDb();
    db = createPgDb(testDb.url!, { max: 8 });
    server = await startApiServer({
      db,
      operatorToken: OPERATOR_TOKEN,
      logger: pino({ level: "silent" }),
      rateLimit: { perMinute: 1_000_000, burst: 1_000_000 },
    });
    admin = new pg.Client({ connectionString: testDb.url });
    await admin.connect();
  });
  after(async () => {
    await server.close();
    await db.close();
    await admin.end();
    await testDb.drop();
  });

  it("answers only 2xx or 503 with Retry-After, and stores each acknowledged check-in once", async () => {
    const send = async (path: string, init: RequestInit = {}): Promise<Answer> => {
      const res = await fetch(server.url + path, init);
      const body = (await res.json()) as { error?: { code: string } };
      return { status: res.status, retryAfter: res.headers.get("retry-after"), code: body.error?.code ?? null };
    };
    const post = (path: string, token?: string, headers: Record<string, string> = {}) =>
      fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
        body: "{}",
      }).then((res) => res.json() as Promise<{ token: string; agentId: string; agentKey: string }>);
    const owner = await post("/v1/owners");
    const agents: Array<{ agentId: string; agentKey: string }> = [];
    for (let i = 0; i < AGENTS; i++) agents.push(await post("/v1/agents", owner.token));

    const answers: Answer[] = [];
    const acknowledged: string[] = [];
    const terminated: number[] = [];
    let terminating: Promise<void> = Promise.resolve();
    /** Ends every session of the service's database but this test's own, once each ANSWERS_BETWEEN_TERMINATIONS answers. */
    const recorded = (answer: Answer) => {
      answers.push(answer);
      if (terminated.length < TERMINATIONS && answers.length === (terminated.length + 1) * ANSWERS_BETWEEN_TERMINATIONS) {
        terminating = admin
          .query<{ n: number }>(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity " +
              "WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
          )
          .then(({ rows }) => void terminated.push(rows[0].n));
      }
      return answer;
    };
    let next = 0;
    const worker = async () => {
      while (next < agents.length) {
        const agent = agents[next++];
        const key = `terminated-${agent.agentId}`;
        // As an agent does on a 503: the same check-in, with the same key, until it is acknowledged (V3.1).
        for (;;) {
          const init = {
            method: "POST",
            headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": key },
          };
          const checkin = recorded(await send(`/v1/agents/${agent.agentId}/checkins`, init));
          recorded(await send(`/v1/agents/${agent.agentId}/score`));
          if (checkin.status === 201) break;
        }
        acknowledged.push(key);
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, worker));
    await terminating;

    expect(terminated, "each termination ended sessions of the service").to.have.length(TERMINATIONS);
    for (const n of terminated) expect(n).to.be.greaterThan(0);
    const other = answers.filter(
      (a) => a.status >= 300 && !(a.status === 503 && a.code === "database_unavailable" && a.retryAfter === "5"),
    );
    expect(other, "every answer is a 2xx or a 503 with Retry-After").to.deep.equal([]);
    const { rows } = await admin.query<{ idempotency_key: string; n: number }>(
      "SELECT idempotency_key, count(*)::int AS n FROM checkins GROUP BY idempotency_key ORDER BY idempotency_key",
    );
    expect(rows).to.deep.equal(acknowledged.sort().map((key) => ({ idempotency_key: key, n: 1 })));
  });
});
