import crypto from "node:crypto";
import { expect } from "chai";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { eventually } from "../test-helpers/eventually";
import { capturedLogger, type CapturedLogger } from "../test-helpers/logs";

const OPERATOR_TOKEN = "bootstrap-operator-token-0123456789";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z
const rfc3339 = (t: number) => new Date(t * 1000).toISOString().replace(".000", "");

type Json = Record<string, any>;

// METHOD V7: penalties are added and revoked only by an operator, every add or revoke logged with who.
for (const { name, create } of TEST_STORES) {
  describe(`named operators through the API on ${name} (V7)`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    let logs: CapturedLogger;
    const clock = createManualClock(T0);
    const tokens: Record<string, string> = {};

    async function call(method: string, path: string, token: string | undefined, body?: unknown) {
      const headers: Record<string, string> = body === undefined ? {} : { "content-type": "application/json" };
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      const res = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, json: (await res.json()) as Json };
    }
    async function newAgent(): Promise<string> {
      const owner = await call("POST", "/v1/owners", undefined, {});
      const agent = await call("POST", "/v1/agents", owner.json.token, {});
      expect(agent.status).to.equal(201);
      return agent.json.agentId;
    }
    const penaltyBody = (agentId: string) => ({ agentId, code: "rule_violation", points: 10, days: 30, reason: "spam links" });
    const auditOf = async (subject: string) =>
      (await call("GET", "/v1/operator/audit?limit=1000", OPERATOR_TOKEN)).json.entries
        .filter((e: Json) => e.subject === subject)
        .map((e: Json) => [e.actor, e.action]);
    const count = async (table: string) => (await testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;

    before(async () => {
      testDb = await create();
      logs = capturedLogger("trace");
      server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, clock, logger: logs.logger });
      for (const operator of ["alice", "bob", "carol"]) tokens[operator] = (await server.operators.add(operator)).token;
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    it("names the operator who added a penalty and the one who revoked it: in the reply, the record, the audit log and the public list", async () => {
      const agentId = await newAgent();
      clock.set(T0 + 60);
      const added = await call("POST", "/v1/operator/penalties", tokens.alice, penaltyBody(agentId));
      expect(added.status).to.equal(201);
      expect(added.json).to.include({ addedBy: "alice", revokedBy: null });
      clock.set(T0 + 120);
      const revoked = await call("POST", `/v1/operator/penalties/${added.json.id}/revoke`, tokens.bob, { reason: "appeal upheld" });
      expect(revoked.status).to.equal(200);
      expect(revoked.json).to.include({ addedBy: "alice", revokedBy: "bob", revokeReason: "appeal upheld" });

      const stored = await testDb.db.query("SELECT added_by, revoked_by FROM penalties WHERE id = $1", [added.json.id]);
      expect(stored.rows).to.deep.equal([{ added_by: "alice", revoked_by: "bob" }]);
      expect(await auditOf(agentId)).to.deep.include.members([
        ["alice", "penalty.add"],
        ["bob", "penalty.revoke"],
      ]);
      const listed = await call("GET", `/v1/agents/${agentId}/penalties`, undefined);
      expect(listed.json.penalties).to.deep.equal([
        {
          id: added.json.id,
          code: "rule_violation",
          points: 10,
          days: 30,
          addedAt: rfc3339(T0 + 60),
          revokedAt: rfc3339(T0 + 120),
          addedBy: "alice",
          revokedBy: "bob",
        },
      ]);
    });

    it("names the operator who declared an outage window and the one who closed it, in the record, the audit log and the published list", async () => {
      clock.set(T0 + 1000);
      const declared = await call("POST", "/v1/operator/outages", tokens.bob, {
        start: rfc3339(T0 + 900),
        end: null,
        reason: "database failover",
      });
      expect(declared.status).to.equal(201);
      expect(declared.json).to.include({ declared_by: "bob", closed_by: null });
      clock.set(T0 + 2000);
      const closed = await call("POST", `/v1/operator/outages/${declared.json.id}/close`, tokens.alice, { end: rfc3339(T0 + 1900) });
      expect(closed.status).to.equal(200);
      expect(closed.json).to.include({ declared_by: "bob", closed_by: "alice" });

      const stored = await testDb.db.query("SELECT declared_by, closed_by FROM outages WHERE id = $1", [declared.json.id]);
      expect(stored.rows).to.deep.equal([{ declared_by: "bob", closed_by: "alice" }]);
      expect(await auditOf(declared.json.id)).to.deep.equal([
        ["bob", "outage.declare"],
        ["alice", "outage.close"],
      ]);
      const published = (await call("GET", "/v1/outages", undefined)).json.outages.find((o: Json) => o.id === declared.json.id);
      expect(published).to.include({ declared_by: "bob", closed_by: "alice" });
    });

    it("logs the busy switch with the name of the operator who turned it", async () => {
      expect((await call("PUT", "/v1/operator/busy", tokens.carol, { on: true, reason: "load test" })).status).to.equal(200);
      expect((await call("PUT", "/v1/operator/busy", tokens.alice, { on: false, reason: "load test over" })).status).to.equal(200);
      expect((await auditOf("service")).slice(-2)).to.deep.equal([
        ["carol", "busy.on"],
        ["alice", "busy.off"],
      ]);
    });

    it("logs an agent's transfer with the name of the operator who made it", async () => {
      const agentId = await newAgent();
      const to = await call("POST", "/v1/owners", undefined, {});
      const moved = await call("POST", `/v1/operator/agents/${agentId}/transfer`, tokens.carol, {
        toOwnerId: to.json.ownerId,
        reason: "sold",
      });
      expect(moved.status).to.equal(200);
      expect(await auditOf(agentId)).to.deep.include.members([["carol", "agent.transfer"]]);
    });

    it("refuses a revoked operator with 401, changing nothing, while the other operators and the bootstrap token still work", async () => {
      const agentId = await newAgent();
      const { revokedAt } = await server.operators.revoke("carol");
      const penaltiesBefore = await count("penalties");
      const auditBefore = await count("audit_log");
      for (const attempt of [
        call("POST", "/v1/operator/penalties", tokens.carol, penaltyBody(agentId)),
        call("PUT", "/v1/operator/busy", tokens.carol, { on: true, reason: "x" }),
        call("GET", "/v1/operator/audit", tokens.carol),
      ]) {
        const refused = await attempt;
        expect(refused.status).to.equal(401);
        expect(refused.json.error).to.deep.equal({
          code: "operator_revoked",
          message: `operator carol was revoked at ${rfc3339(revokedAt)}`,
        });
      }
      expect(await count("penalties")).to.equal(penaltiesBefore);
      expect(await count("audit_log")).to.equal(auditBefore);

      expect((await call("POST", "/v1/operator/penalties", tokens.bob, penaltyBody(agentId))).json).to.include({ addedBy: "bob" });
      const byAdmin = await call("POST", "/v1/operator/penalties", OPERATOR_TOKEN, penaltyBody(agentId));
      expect(byAdmin.status).to.equal(201);
      expect(byAdmin.json).to.include({ addedBy: "admin" });
      expect((await auditOf(agentId)).map(([actor]: string[]) => actor)).to.deep.equal(["bob", "admin"]);
    });

    it("refuses a token that names an operator but is not its token, and an owner's token, with 401", async () => {
      const owner = await call("POST", "/v1/owners", undefined, {});
      for (const token of [`vop_alice.t_${"A".repeat(43)}`, `${tokens.alice}x`, "vop_nobody.t_x", owner.json.token]) {
        const refused = await call("PUT", "/v1/operator/busy", token, { on: true, reason: "x" });
        expect(refused.status, token).to.equal(401);
        expect(refused.json.error.code, token).to.equal("invalid_operator_token");
      }
    });

    it("stores each token only as its SHA-256 and never logs it", async () => {
      const { rows } = await testDb.db.query<{ name: string; token_hash: string }>("SELECT name, token_hash FROM operators ORDER BY name");
      expect(rows.map((r) => r.name)).to.deep.equal(["alice", "bob", "carol"]);
      for (const r of rows) expect(r.token_hash).to.equal(crypto.createHash("sha256").update(tokens[r.name]).digest("hex"));
      await eventually(() => logs.text().includes('"msg":"request"'), "a request's log line");
      for (const token of [...Object.values(tokens), OPERATOR_TOKEN]) {
        expect(logs.text()).not.to.contain(token);
        expect(JSON.stringify((await testDb.db.query("SELECT * FROM audit_log")).rows)).not.to.contain(token);
      }
    });
  });
}
