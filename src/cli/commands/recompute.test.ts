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
    const server = await startApiServer({ db: testDb.db, operatorToken: "op-token-recompute-test-000", clock, logger: pino({ level: "silent" }) });
    const post = (path: string, token: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
      fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    const owner = await post("/v1/owners", undefined, {});
    const agents = [];
    for (let a = 0; a < 3; a++) agents.push(await post("/v1/agents", owner.token, {}));
    for (let h = 1; h <= 30; h++) {
      for (const [a, agent] of agents.entries()) {
        clock.set(T0 + a + h * 3600);
        await fetch(`${server.url}/v1/agents/${agent.agentId}/checkins`, { method: "POST", headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": `k${h}` } });
      }
    }
    for (const [a, agent] of agents.entries()) {
      await post("/v1/operator/penalties", "op-token-recompute-test-000", { agentId: agent.agentId, code: "rule_violation", points: 10 + a, days: 30, reason: "test" });
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

  it("names a score whose stored result or digest was tampered with, and exits 1", async () => {
    const { rows } = await testDb.db.query<{ id: number }>("SELECT id FROM scores ORDER BY id LIMIT 2");
    await testDb.db.query("UPDATE scores SET result = jsonb_set(result::jsonb, '{total}', '999')::json WHERE id = $1", [rows[0].id]);
    await testDb.db.query("UPDATE scores SET sha256 = repeat('0', 64) WHERE id = $1", [rows[1].id]);
    const io = memoryIo();
    expect(await runCli(["recompute", "--verify", "--database-url", testDb.url!], io)).to.equal(1);
    const lines = io.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines[0].mismatch).to.include({ id: rows[0].id });
    expect(lines[0].mismatch.problem).to.contain("result differs");
    expect(lines[1].mismatch).to.include({ id: rows[1].id });
    expect(lines[1].mismatch.problem).to.contain("digest differs");
  });

  it("refuses an unknown flag with exit 2 and one line", async () => {
    const io = memoryIo();
    expect(await runCli(["recompute", "--frobnicate"], io)).to.equal(2);
    expect(io.err.trim().split("\n")).to.have.length(1);
  });
});
