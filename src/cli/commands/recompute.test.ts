import { expect } from "chai";
import pino from "pino";
import { startApiServer } from "../../app/server";
import { createManualClock } from "../../service/clock";
import { createTestPgDb, type TestDb } from "../../test-helpers/db";
import { memoryIo } from "../io";
import { runCli } from "../main";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("vrai recompute --verify (V9)", () => {
  let testDb: TestDb;

  before(async () => {
    testDb = await createTestPgDb();
    const clock = createManualClock(T0);
    const server = await startApiServer({
      db: testDb.db,
      operatorToken: "op-token-recompute-test-000",
      clock,
      logger: pino({ level: "silent" }),
    });
    const post = (path: string, token: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
      fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<any>);
    const owner = await post("/v1/owners", undefined, {});
    const agents = [];
    for (let a = 0; a < 3; a++) agents.push(await post("/v1/agents", owner.token, {}));
    for (let h = 1; h <= 30; h++) {
      for (const [a, agent] of agents.entries()) {
        clock.set(T0 + a + h * 3600);
        await fetch(`${server.url}/v1/agents/${agent.agentId}/checkins`, {
          method: "POST",
          headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": `k${h}` },
        });
      }
    }
    for (const [a, agent] of agents.entries()) {
      await post("/v1/operator/penalties", "op-token-recompute-test-000", {
        agentId: agent.agentId,
        code: "rule_violation",
        points: 10 + a,
        days: 30,
        reason: "test",
      });
    }
    await server.scheduler.catchUpDaily();
    clock.set(T0 + 3 * 86400);
    await server.scheduler.catchUpDaily();
    await server.close();
  });
  after(() => testDb.drop());

  it("recomputes every stored score from its stored inputs and finds no mismatch", async () => {
    const io = memoryIo();
    const code = await runCli(["recompute", "--verify", "--database-url", testDb.url!], io);
    expect(code, io.out + io.err).to.equal(0);
    const summary = JSON.parse(io.out.trim().split("\n").pop()!);
    const stored = (await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM scores")).rows[0].n;
    expect(stored).to.be.greaterThan(10);
    expect(summary).to.deep.equal({ checked: stored, mismatches: 0 });
  });

  it("names a score whose stored total or digest was tampered with, or whose day aggregate changed under it, and exits 1", async () => {
    const { rows } = await testDb.db.query<{ id: number }>("SELECT id FROM scores ORDER BY id LIMIT 2");
    await testDb.db.query("UPDATE scores SET total = 999 WHERE id = $1", [rows[0].id]);
    await testDb.db.query("UPDATE scores SET sha256 = repeat('0', 64) WHERE id = $1", [rows[1].id]);
    // The last daily scores (day 3) read the check-in figures of day 1 back from agent_days (migration 010).
    const changed = await testDb.db.query<{ agent_id: string }>(
      `UPDATE agent_days SET digest = repeat('f', 64)
       WHERE (agent_id, day) = (SELECT agent_id, day FROM agent_days WHERE checkins > 0 ORDER BY agent_id, day LIMIT 1)
       RETURNING agent_id`,
    );
    const dependent = (
      await testDb.db.query<{ id: number }>(
        "SELECT id FROM scores WHERE agent_id = $1 AND facts IS NOT NULL AND trigger = 'daily' ORDER BY id DESC LIMIT 1",
        [changed.rows[0].agent_id],
      )
    ).rows[0].id;
    // A stored result (its compact form, migration 016) that is not the one its inputs give.
    const swapped = (
      await testDb.db.query<{ id: number }>(
        `UPDATE scores s SET packed = o.packed FROM scores o
       WHERE s.id = (SELECT a.id FROM scores a JOIN scores b ON b.packed <> a.packed WHERE a.id > $1 AND a.agent_id <> $2 ORDER BY a.id LIMIT 1)
         AND o.id = (SELECT b.id FROM scores a JOIN scores b ON b.packed <> a.packed WHERE a.id = s.id ORDER BY b.id LIMIT 1)
       RETURNING s.id`,
        [rows[1].id, changed.rows[0].agent_id],
      )
    ).rows[0].id;
    const io = memoryIo();
    expect(await runCli(["recompute", "--verify", "--database-url", testDb.url!], io)).to.equal(1);
    const mismatches = io.out
      .trim()
      .split("\n")
      .slice(0, -1)
      .map((l) => JSON.parse(l).mismatch);
    const problemOf = (id: number) => mismatches.find((m) => m.id === id)?.problem;
    expect(problemOf(rows[0].id)).to.contain("total differs");
    expect(problemOf(rows[1].id)).to.contain("digest differs");
    expect(problemOf(dependent)).to.contain("digest differs");
    expect(problemOf(swapped)).to.match(/^result differs|^total differs/);
  });

  it("refuses an unknown flag with exit 2 and one line", async () => {
    const io = memoryIo();
    expect(await runCli(["recompute", "--frobnicate"], io)).to.equal(2);
    expect(io.err.trim().split("\n")).to.have.length(1);
  });
});
