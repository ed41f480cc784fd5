import crypto from "node:crypto";
import { expect } from "chai";
import pino from "pino";
import { createManualClock } from "../service/clock";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { startApiServer, type ApiServer } from "../app/server";

const OPERATOR_TOKEN = "operator-test-token-0123456789";
const METRICS_TOKEN = "metrics-test-token-0123456789";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z

type Json = Record<string, any>;

for (const { name, create } of TEST_STORES) {
  describe(`HTTP API on ${name}`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    const clock = createManualClock(T0);

    async function call(
      method: string,
      path: string,
      options: { token?: string; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {},
    ) {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined;
      if (options.rawBody !== undefined) body = options.rawBody;
      else if (options.body !== undefined) body = JSON.stringify(options.body);
      if (body !== undefined) headers["content-type"] ??= "application/json";
      const res = await fetch(server.url + path, { method, headers, body });
      const text = await res.text();
      let json: Json = {};
      try {
        json = JSON.parse(text);
      } catch {
        json = { text };
      }
      return { status: res.status, json, text, headers: res.headers };
    }
    const checkIn = (agentId: string, key: string | null, agentKey: string) =>
      call("POST", `/v1/agents/${agentId}/checkins`, { token: agentKey, headers: key === null ? {} : { "idempotency-key": key } });

    async function newOwner() {
      const r = await call("POST", "/v1/owners", { body: {} });
      expect(r.status).to.equal(201);
      return r.json as { ownerId: string; token: string };
    }
    async function newAgent(ownerToken: string) {
      const r = await call("POST", "/v1/agents", { token: ownerToken, body: { name: "test agent" } });
      expect(r.status).to.equal(201);
      return r.json as { agentId: string; agentKey: string; ownerId: string };
    }
    async function countRows(table: string): Promise<number> {
      return (await testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
    }

    before(async () => {
      testDb = await create();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock,
        logger: pino({ level: "silent" }),
        rateLimit: { perMinute: 100_000, burst: 10_000, ownersPerHour: 10_000 },
        metrics: { token: METRICS_TOKEN },
        // Automatic busy is tested on its own (src/service/load.test.ts); here only the operator switch sets it.
        overload: { maxInFlight: 100_000, maxLoopDelayMs: 60_000 },
      });
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    it("creates an owner whose token is returned once and stored only as a hash", async () => {
      const owner = await newOwner();
      expect(owner.token).to.match(/^vo_/);
      const stored = await testDb.db.query<{ token_hash: string }>("SELECT token_hash FROM owners WHERE id = $1", [owner.ownerId]);
      expect(stored.rows[0].token_hash).to.equal(crypto.createHash("sha256").update(owner.token).digest("hex"));
      expect(JSON.stringify(stored.rows)).not.to.contain(owner.token);
      const me = await call("GET", "/v1/owners/me", { token: owner.token });
      expect(me.json).to.deep.equal({ ownerId: owner.ownerId, agents: [], nextCursor: null });
    });

    it("scores a newly claimed agent 200 at once (V8, V9)", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      const score = await call("GET", `/v1/agents/${agent.agentId}/score`);
      expect(score.status).to.equal(200);
      expect(score.json.scoreType).to.equal("vrai");
      expect(score.json.method).to.equal("0.2");
      expect(score.json.total).to.equal(200);
      expect(score.json.result.band).to.equal("200-399");
      expect(score.json.result.state).to.equal("provisional");
    });

    it("serves a score's inputs as the exact canonical bytes with their SHA-256", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      const score = await call("GET", `/v1/agents/${agent.agentId}/score`);
      const inputs = await call("GET", score.json.links.inputs);
      expect(inputs.status).to.equal(200);
      const digest = crypto.createHash("sha256").update(Buffer.from(inputs.text, "utf8")).digest("hex");
      expect(digest).to.equal(score.json.sha256);
      expect(inputs.headers.get("x-vrai-sha256")).to.equal(digest);
    });

    it("counts, deduplicates and refuses check-ins by V3 (1,199 s refused, 1,200 s counted)", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      clock.set(T0 + 100);
      const first = await checkIn(agent.agentId, "k-1", agent.agentKey);
      expect(first.status).to.equal(201);
      expect(first.json).to.include({ result: "counted", next_heartbeat_s: 3600, on_time: null, excused: false, credit: 0 });
      expect(first.json.arrival).to.equal(new Date((T0 + 100) * 1000).toISOString().replace(".000", ""));

      clock.set(T0 + 150);
      const again = await checkIn(agent.agentId, "k-1", agent.agentKey);
      expect(again.status).to.equal(201);
      expect(again.json).to.deep.equal(first.json);
      expect(again.headers.get("idempotent-replayed")).to.equal("true");

      clock.set(T0 + 100 + 1199);
      const early = await checkIn(agent.agentId, "k-2", agent.agentKey);
      expect(early.status).to.equal(429);
      expect(early.json.retry_after_s).to.equal(1);
      expect(early.json.error.code).to.equal("checkin_refused");
      expect(early.headers.get("retry-after")).to.equal("1");

      clock.set(T0 + 100 + 1200);
      const ok = await checkIn(agent.agentId, "k-2", agent.agentKey);
      expect(ok.status).to.equal(201);
      expect(ok.json).to.include({ on_time: true, excused: false, credit: 1200 });
    });

    it("rejects check-ins without an Idempotency-Key, without a key, or with another agent's key, writing nothing", async () => {
      const owner = await newOwner();
      const a = await newAgent(owner.token);
      const b = await newAgent(owner.token);
      const before = await countRows("checkins");
      const noKey = await checkIn(a.agentId, null, a.agentKey);
      expect(noKey.status).to.equal(400);
      expect(noKey.json.error.code).to.equal("invalid_request");
      expect(noKey.json.error.message).to.contain("idempotency-key");
      const noAuth = await call("POST", `/v1/agents/${a.agentId}/checkins`, { headers: { "idempotency-key": "x" } });
      expect(noAuth.status).to.equal(401);
      const otherAgentsKey = await checkIn(a.agentId, "x", b.agentKey);
      expect(otherAgentsKey.status).to.equal(401);
      expect(otherAgentsKey.json.error.code).to.equal("invalid_agent_key");
      const unknownAgent = await checkIn("agt_nope", "x", a.agentKey);
      expect(unknownAgent.status).to.equal(401);
      expect(await countRows("checkins")).to.equal(before);
    });

    it("counts exactly one of 50 parallel check-ins of one agent", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      clock.set(T0 + 10_000);
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => checkIn(agent.agentId, `p-${i}`, agent.agentKey)));
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).to.have.length(1);
      expect(statuses.filter((s) => s === 429)).to.have.length(49);
      const rows = await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1", [agent.agentId]);
      expect(rows.rows[0].n).to.equal(1);
    });

    it("counts one idempotency key once when it is sent in parallel", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      clock.set(T0 + 20_000);
      const results = await Promise.all(Array.from({ length: 20 }, () => checkIn(agent.agentId, "same-key", agent.agentKey)));
      for (const r of results) expect([201, 409]).to.include(r.status);
      const counted = results.filter((r) => r.status === 201);
      expect(counted.length).to.be.greaterThan(0);
      for (const r of counted) expect(r.json).to.deep.equal(counted[0].json);
      const rows = await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1", [agent.agentId]);
      expect(rows.rows[0].n).to.equal(1);
    });

    it("re-claims an owner's own agent with a new key and refuses another owner's re-claim (V2)", async () => {
      const owner = await newOwner();
      const other = await newOwner();
      const agent = await newAgent(owner.token);
      const refused = await call("POST", `/v1/agents/${agent.agentId}/claim`, { token: other.token, body: {} });
      expect(refused.status).to.equal(403);
      expect(refused.json.error.code).to.equal("agent_owned_by_another_owner");
      const reclaim = await call("POST", `/v1/agents/${agent.agentId}/claim`, { token: owner.token, body: {} });
      expect(reclaim.status).to.equal(200);
      expect(reclaim.json.agentKey).not.to.equal(agent.agentKey);
      clock.set(T0 + 30_000);
      expect((await checkIn(agent.agentId, "r-1", agent.agentKey)).status).to.equal(401);
      const fresh = await checkIn(agent.agentId, "r-1", reclaim.json.agentKey);
      expect(fresh.status).to.equal(201);
      expect(fresh.json.on_time).to.equal(null);
    });

    it("lets only the operator transfer an agent, logs it, and gives the new owner a new claim", async () => {
      const owner = await newOwner();
      const buyer = await newOwner();
      const agent = await newAgent(owner.token);
      const denied = await call("POST", `/v1/operator/agents/${agent.agentId}/transfer`, {
        token: owner.token,
        body: { toOwnerId: buyer.ownerId, reason: "sold" },
      });
      expect(denied.status).to.equal(401);
      const moved = await call("POST", `/v1/operator/agents/${agent.agentId}/transfer`, {
        token: OPERATOR_TOKEN,
        body: { toOwnerId: buyer.ownerId, reason: "sold" },
      });
      expect(moved.status).to.equal(200);
      expect(moved.json.ownerId).to.equal(buyer.ownerId);
      const audit = await call("GET", "/v1/operator/audit?limit=1000", { token: OPERATOR_TOKEN });
      expect(
        audit.json.entries.some((e: Json) => e.action === "agent.transfer" && e.subject === agent.agentId && e.details.reason === "sold"),
      ).to.equal(true);
      const now = await call("POST", `/v1/agents/${agent.agentId}/claim`, { token: owner.token, body: {} });
      expect(now.status).to.equal(403);
    });

    it("adds and revokes penalties for the operator only, recomputing the score at once (V7)", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      const body = { agentId: agent.agentId, code: "rate_abuse", points: 20, days: 30, reason: "flooding" };
      expect((await call("POST", "/v1/operator/penalties", { token: owner.token, body })).status).to.equal(401);
      const bad = await call("POST", "/v1/operator/penalties", { token: OPERATOR_TOKEN, body: { ...body, points: 51 } });
      expect(bad.status).to.equal(400);
      expect(bad.json.error.message).to.contain("body.points");
      expect(await countRows("penalties")).to.equal(0);
      const added = await call("POST", "/v1/operator/penalties", { token: OPERATOR_TOKEN, body });
      expect(added.status).to.equal(201);
      expect((await call("GET", `/v1/agents/${agent.agentId}/score`)).json.total).to.equal(180);
      const revoked = await call("POST", `/v1/operator/penalties/${added.json.id}/revoke`, {
        token: OPERATOR_TOKEN,
        body: { reason: "appeal" },
      });
      expect(revoked.status).to.equal(200);
      expect((await call("GET", `/v1/agents/${agent.agentId}/score`)).json.total).to.equal(200);
      const twice = await call("POST", `/v1/operator/penalties/${added.json.id}/revoke`, {
        token: OPERATOR_TOKEN,
        body: { reason: "again" },
      });
      expect(twice.status).to.equal(409);
      const listed = await call("GET", `/v1/agents/${agent.agentId}/penalties`);
      expect(listed.json.penalties).to.have.length(1);
    });

    it("publishes declared outages and rejects a window that has not started, changing nothing (V4)", async () => {
      clock.set(T0 + 40_000);
      const start = new Date((T0 + 39_000) * 1000).toISOString().replace(".000", "");
      const future = new Date((T0 + 41_000) * 1000).toISOString().replace(".000", "");
      const rejected = await call("POST", "/v1/operator/outages", { token: OPERATOR_TOKEN, body: { start: future, reason: "x" } });
      expect(rejected.status).to.equal(400);
      expect(rejected.json.error.code).to.equal("outage_not_started");
      const declared = await call("POST", "/v1/operator/outages", {
        token: OPERATOR_TOKEN,
        body: { start, end: null, reason: "daily allowance" },
      });
      expect(declared.status).to.equal(201);
      const published = await call("GET", "/v1/outages");
      expect(published.json.outages.map((o: Json) => o.id)).to.deep.equal([declared.json.id]);
      const closed = await call("POST", `/v1/operator/outages/${declared.json.id}/close`, { token: OPERATOR_TOKEN, body: { end: future } });
      expect(closed.status).to.equal(200);
      expect(closed.json.end).to.equal(future);
      const method = await call("GET", "/v1/method");
      expect(method.json.outages[0].end).to.equal(future);
      expect(method.json.versions.map((v: Json) => v.version)).to.deep.equal(["0.2", "0.1"]);
    });

    it("gives next_heartbeat_s 7200 while the operator's busy switch is on (V3.3)", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      expect((await call("PUT", "/v1/operator/busy", { token: OPERATOR_TOKEN, body: { on: true, reason: "load test" } })).status).to.equal(
        200,
      );
      clock.set(T0 + 50_000);
      expect((await checkIn(agent.agentId, "b-1", agent.agentKey)).json.next_heartbeat_s).to.equal(7200);
      await call("PUT", "/v1/operator/busy", { token: OPERATOR_TOKEN, body: { on: false, reason: "done" } });
      clock.set(T0 + 52_000);
      expect((await checkIn(agent.agentId, "b-2", agent.agentKey)).json.next_heartbeat_s).to.equal(3600);
    });

    it("answers malformed, oversized and unknown requests with the JSON error shape and no write", async () => {
      const owner = await newOwner();
      const before = await countRows("agents");
      const malformed = await call("POST", "/v1/agents", { token: owner.token, rawBody: "{not json" });
      expect(malformed.status).to.equal(400);
      expect(malformed.json.error.code).to.equal("malformed_json");
      const huge = await call("POST", "/v1/agents", { token: owner.token, rawBody: JSON.stringify({ name: "x".repeat(40_000) }) });
      expect(huge.status).to.equal(413);
      const extra = await call("POST", "/v1/agents", { token: owner.token, body: { name: "ok", admin: true } });
      expect(extra.status).to.equal(400);
      const badAuth = await call("POST", "/v1/agents", { headers: { authorization: "Basic abc" }, body: {} });
      expect(badAuth.status).to.equal(401);
      const wrongOwner = await call("POST", "/v1/agents", { token: "vo_own_x.t_nope", body: {} });
      expect(wrongOwner.status).to.equal(401);
      expect(await countRows("agents")).to.equal(before);
      const unknown = await call("GET", "/v1/nothing-here");
      expect(unknown.status).to.equal(404);
      expect(unknown.json.error.code).to.equal("not_found");
      const badScoreId = await call("GET", "/v1/scores/abc");
      expect(badScoreId.status).to.equal(400);
    });

    it("answers the same through the route table as through Express's router (case, trailing slash, escapes, HEAD), and counts both", async () => {
      const owner = await newOwner();
      const agent = await newAgent(owner.token);
      const direct = await call("GET", `/v1/agents/${agent.agentId}/score`);
      expect(direct.status).to.equal(200);
      for (const path of [
        `/V1/AGENTS/${agent.agentId}/Score`,
        `/v1/agents/${agent.agentId}/score/`,
        `/v1/agents/${encodeURIComponent(agent.agentId).replace("_", "%5F")}/score`,
      ]) {
        const routed = await call("GET", path);
        expect(routed.status, path).to.equal(200);
        expect(routed.text, path).to.equal(direct.text);
        expect(routed.headers.get("etag"), path).to.equal(direct.headers.get("etag"));
      }
      const head = await fetch(`${server.url}/v1/agents/${agent.agentId}/score`, { method: "HEAD" });
      expect(head.status).to.equal(200);
      expect(head.headers.get("content-length")).to.equal(direct.headers.get("content-length"));
      const invalid = await call("GET", "/v1/agents/bad!id/score");
      expect(invalid.status).to.equal(400);
      expect(invalid.json.error.message).to.equal("path.id: expected 1 to 64 letters, digits, _ or -");
      expect((await call("GET", "/v1/agents/bad%21id/score")).json).to.deep.equal(invalid.json);
      const missing = await call("GET", "/v1/agents/agt_missing/score/");
      expect(missing.status).to.equal(404);
      expect(missing.json.error.code).to.equal("agent_not_found");
      const metrics = (await call("GET", "/metrics", { token: METRICS_TOKEN })).text;
      const count = (status: number) =>
        Number(
          new RegExp(`vrai_http_requests_total\\{method="GET",route="/v1/agents/:id/score",status="${status}"\\} (\\d+)`).exec(
            metrics,
          )?.[1],
        );
      expect(count(200)).to.be.at.least(4);
      expect(count(400)).to.be.at.least(2);
      expect(count(404)).to.be.at.least(1);
    });

    it("validates the body of a route that declares one, wherever the request was routed", async () => {
      const owner = await newOwner();
      for (const path of ["/v1/agents", "/V1/Agents", "/v1/agents/"]) {
        const malformed = await call("POST", path, { token: owner.token, rawBody: "{not json" });
        expect(malformed.json.error.code, path).to.equal("malformed_json");
        const extra = await call("POST", path, { token: owner.token, body: { name: "ok", admin: true } });
        expect(extra.status, path).to.equal(400);
        expect(extra.json.error.message, path).to.match(/^body/);
      }
    });

    it("describes every route in the OpenAPI document and exposes Prometheus metrics", async () => {
      const doc = (await call("GET", "/v1/openapi.json")).json;
      expect(doc.openapi).to.equal("3.1.0");
      for (const path of ["/v1/owners", "/v1/agents/{id}/checkins", "/v1/scores/{id}/inputs", "/v1/operator/penalties", "/v1/method"]) {
        expect(doc.paths).to.have.property(path);
      }
      expect(doc.paths["/v1/agents/{id}/checkins"].post.parameters.map((p: Json) => p.name)).to.include("idempotency-key");
      const metrics = await call("GET", "/metrics", { token: METRICS_TOKEN });
      expect(metrics.text).to.contain("vrai_checkins_total");
      expect(metrics.text).to.contain("vrai_http_request_duration_seconds");
    });
  });
}
