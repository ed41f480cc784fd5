/**
 * Webhooks (issue #28) through the API, on both stores: receivers are real HTTP servers on 127.0.0.1,
 * reached by names that the server's configurable resolver points there (as `vrai dev` lets a loopback
 * name through). The delivery worker runs by hand (`runOnce`) on the manual clock, so retries and
 * their schedule are stepped through.
 */
import { expect } from "chai";
import pino from "pino";
import { Webhook } from "standardwebhooks";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { RETRY_DELAYS_S } from "../service/webhooks/schedule";
import { apiClient } from "../test-helpers/api-client";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { startHttpServer, type RecordedRequest, type TestHttpServer } from "../test-helpers/http-server";

const OPERATOR_TOKEN = "operator-test-token-webhooks-0123";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

for (const { name, create } of TEST_STORES) {
  describe(`webhooks over HTTP on ${name} (issue #28)`, function () {
    this.timeout(120_000);
    let testDb: TestDb;
    let server: ApiServer;
    let receiver: TestHttpServer;
    const clock = createManualClock(T0);
    /** Where each name resolves: every receiver name to 127.0.0.1 (the receiver), unless a test says otherwise. */
    const names = new Map<string, string>();
    let nextPath = 0;

    const { call, checkIn } = apiClient(() => server.url);
    /** One pass of the worker (the deliveries of earlier tests that are due go too: each test reads its own receiver path). */
    const deliver = () => server.webhooks.worker.runOnce();
    const advance = (seconds: number) => clock.set(clock.now() + seconds);
    const iso = (t: number) => new Date(t * 1000).toISOString().replace(".000", "");

    before(async () => {
      testDb = await create();
      receiver = await startHttpServer();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock,
        logger: pino({ level: "silent" }),
        ownerRecomputeWorker: false,
        webhooks: {
          allowLoopback: true,
          worker: false,
          timeoutMs: 1000,
          resolveAddresses: async (host) => [{ address: names.get(host) ?? "127.0.0.1", family: 4 }],
        },
      });
    });
    after(async () => {
      await server?.close();
      await receiver?.close();
      await testDb?.drop();
    });

    /** A new owner with an endpoint at a path of its own on the receiver, asking for `events` (default: all but ping). */
    async function ownerWithWebhook(events?: string[]) {
      const owner = (await call("POST", "/v1/owners", undefined, {})).json;
      const path = `/hooks/${++nextPath}`;
      const created = await call("POST", "/v1/webhooks", owner.token, {
        url: `http://receiver.example.test:${receiver.port}${path}`,
        events: events ?? [
          "score.changed",
          "agent.late",
          "agent.back",
          "penalty.added",
          "penalty.revoked",
          "outage.declared",
          "claim.changed",
        ],
        description: "tests",
      });
      expect(created.status, JSON.stringify(created.json)).to.equal(201);
      receiver.route("POST", path, { status: 200, body: "ok" });
      return { owner, path, webhook: created.json, secret: created.json.secret as string };
    }
    const claim = async (token: string) => (await call("POST", "/v1/agents", token, {})).json;
    const received = (path: string) => receiver.requestsTo(path);
    const bodyOf = (r: RecordedRequest) => JSON.parse(r.body);
    const headersOf = (r: RecordedRequest) => ({
      "webhook-id": String(r.headers["webhook-id"]),
      "webhook-timestamp": String(r.headers["webhook-timestamp"]),
      "webhook-signature": String(r.headers["webhook-signature"]),
    });
    const log = async (token: string, id: string) => (await call("GET", `/v1/webhooks/${id}/deliveries`, token)).json.deliveries;

    it("signs each delivery as Standard Webhooks says: the package verifies it with the secret shown once, and no other secret", async () => {
      const { owner, path, webhook, secret } = await ownerWithWebhook();
      expect(secret).to.match(/^whsec_[A-Za-z0-9+/]{32}$/);
      expect((await call("GET", `/v1/webhooks/${webhook.id}`, owner.token)).json).to.not.have.property("secret");
      const agent = await claim(owner.token);
      await deliver();
      const [request] = received(path);
      expect(request.method).to.equal("POST");
      expect(request.headers["content-type"]).to.equal("application/json");
      const event = new Webhook(secret).verify(request.body, headersOf(request)) as { id: string; type: string; data: unknown };
      expect(event.id).to.equal(request.headers["webhook-id"]);
      expect(event).to.deep.include({ type: "score.changed", timestamp: iso(clock.now()) });
      expect(event.data).to.deep.include({ agentId: agent.agentId, total: 200, band: "200-399", state: "provisional", previous: null });
      expect(() => new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").verify(request.body, headersOf(request))).to.throw(
        "No matching signature found",
      );
      // The same JSON from GET /v1/events.
      const events = (await call("GET", "/v1/events", owner.token)).json.events;
      expect(events).to.deep.equal([bodyOf(request)]);
      const [attempt] = await log(owner.token, webhook.id);
      expect(attempt).to.deep.include({
        eventId: event.id,
        eventType: "score.changed",
        attempt: 1,
        status: 200,
        error: null,
        response: "ok",
      });
      expect(attempt.delivery).to.deep.equal({ state: "delivered", nextAttemptAt: null });
    });

    it("retries after a 500 and after a timeout, on the schedule, with the same webhook-id, until a 2xx", async () => {
      const { owner, path, webhook } = await ownerWithWebhook();
      let answers = [{ status: 500, body: "down for maintenance" }, { hang: true }, { status: 204 }];
      receiver.route("POST", path, () => answers.shift() ?? { status: 200 });
      await claim(owner.token);
      const sent = clock.now();
      await deliver();
      let [first] = await log(owner.token, webhook.id);
      expect(first).to.deep.include({ attempt: 1, status: 500, response: "down for maintenance" });
      const due = Date.parse(first.delivery.nextAttemptAt) / 1000 - sent;
      expect(first.delivery.state).to.equal("pending");
      expect(due).to.be.within(RETRY_DELAYS_S[0] * 0.8 - 1, RETRY_DELAYS_S[0] * 1.2 + 1);
      await deliver();
      expect(received(path), "not due yet").to.have.length(1);
      advance(RETRY_DELAYS_S[0] * 2);
      await deliver();
      [first] = await log(owner.token, webhook.id);
      expect(first).to.deep.include({ attempt: 2, status: null, error: "timed out after 1000 ms" });
      expect(first.latencyMs).to.be.at.least(900);
      advance(RETRY_DELAYS_S[1] * 2);
      await deliver();
      const tries = await log(owner.token, webhook.id);
      expect(tries.map((t: { attempt: number; status: number | null }) => [t.attempt, t.status])).to.deep.equal([
        [3, 204],
        [2, null],
        [1, 500],
      ]);
      expect(tries[0].delivery.state).to.equal("delivered");
      const ids = received(path).map((r) => r.headers["webhook-id"]);
      expect(ids).to.have.length(3);
      expect(new Set(ids).size, "one webhook-id for every try").to.equal(1);
      answers = [];
    });

    it("disables an endpoint at once on 410 Gone, says so in its GET, and sends it nothing more until it is enabled again", async () => {
      const { owner, path, webhook } = await ownerWithWebhook();
      receiver.route("POST", path, { status: 410 });
      const agent = await claim(owner.token);
      await deliver();
      const got = (await call("GET", `/v1/webhooks/${webhook.id}`, owner.token)).json;
      expect(got).to.deep.include({ enabled: false, disabledReason: "the receiver answered 410 Gone", disabledAt: iso(clock.now()) });
      expect((await log(owner.token, webhook.id))[0].delivery.state).to.equal("failed");
      const penalty = await call("POST", "/v1/operator/penalties", OPERATOR_TOKEN, {
        agentId: agent.agentId,
        code: "rate_abuse",
        points: 10,
        days: 30,
        reason: "webhooks test",
      });
      expect(penalty.status).to.equal(201);
      advance(RETRY_DELAYS_S[0] * 2);
      await deliver();
      expect(received(path)).to.have.length(1);
      expect((await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {})).json.error.code).to.equal("webhook_disabled");
      // Events are still kept: the owner catches up with GET /v1/events.
      expect((await call("GET", "/v1/events", owner.token)).json.events.map((e: { type: string }) => e.type)).to.deep.equal([
        "score.changed",
        "penalty.added",
        "score.changed",
      ]);
      receiver.route("POST", path, { status: 200 });
      const enabled = await call("PATCH", `/v1/webhooks/${webhook.id}`, owner.token, { enabled: true });
      expect(enabled.json).to.deep.include({ enabled: true, disabledReason: null });
      expect((await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {})).status).to.equal(202);
      await deliver();
      expect(bodyOf(received(path)[1])).to.deep.include({ type: "ping" });
    });

    it("disables an endpoint whose every try failed for 5 days, and says so", async () => {
      const { owner, path, webhook } = await ownerWithWebhook();
      receiver.route("POST", path, { status: 503 });
      await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      await deliver();
      expect((await call("GET", `/v1/webhooks/${webhook.id}`, owner.token)).json).to.deep.include({
        enabled: true,
        failingSince: iso(clock.now()),
      });
      advance(5 * 86_400 - 60);
      await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      await deliver();
      expect((await call("GET", `/v1/webhooks/${webhook.id}`, owner.token)).json.enabled, "4 days 23 hours: still trying").to.equal(true);
      advance(120);
      await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      await deliver();
      const got = (await call("GET", `/v1/webhooks/${webhook.id}`, owner.token)).json;
      expect(got).to.deep.include({ enabled: false, disabledReason: "every try failed for 5 days in a row" });
      // Its retries wait with it: nothing more is sent.
      const sent = received(path).length;
      advance(86_400);
      await deliver();
      expect(received(path)).to.have.length(sent);
    });

    it("signs with both secrets for 24 hours after a rotation, then with the new one only", async () => {
      const { owner, path, webhook, secret: old } = await ownerWithWebhook();
      const rotated = await call("POST", `/v1/webhooks/${webhook.id}/rotate-secret`, owner.token, {});
      expect(rotated.status).to.equal(200);
      const fresh = rotated.json.secret as string;
      expect(fresh).to.not.equal(old);
      expect(rotated.json.previousSecretExpiresAt).to.equal(iso(clock.now() + 86_400));
      await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      await deliver();
      const during = received(path)[0];
      expect(String(during.headers["webhook-signature"]).split(" ")).to.have.length(2);
      expect(new Webhook(old).verify(during.body, headersOf(during))).to.deep.include({ type: "ping" });
      expect(new Webhook(fresh).verify(during.body, headersOf(during))).to.deep.include({ type: "ping" });
      advance(86_400 + 1);
      await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      await deliver();
      const after = received(path)[1];
      expect(String(after.headers["webhook-signature"]).split(" ")).to.have.length(1);
      expect(new Webhook(fresh).verify(after.body, headersOf(after))).to.deep.include({ type: "ping" });
      expect(() => new Webhook(old).verify(after.body, headersOf(after))).to.throw("No matching signature found");
    });

    it("redelivers a delivery on request: the same event and webhook-id, the next attempt in the log", async () => {
      const { owner, path, webhook } = await ownerWithWebhook();
      await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      await deliver();
      const [first] = await log(owner.token, webhook.id);
      const again = await call("POST", `/v1/webhooks/${webhook.id}/deliveries/${first.deliveryId}/redeliver`, owner.token, {});
      expect(again.status).to.equal(202);
      await deliver();
      const [one, two] = received(path);
      expect(two.headers["webhook-id"]).to.equal(one.headers["webhook-id"]);
      expect(two.body).to.equal(one.body);
      expect((await log(owner.token, webhook.id)).map((t: { attempt: number }) => t.attempt)).to.deep.equal([2, 1]);
      const unknown = await call("POST", `/v1/webhooks/${webhook.id}/deliveries/dlv_nope/redeliver`, owner.token, {});
      expect(unknown.status).to.equal(404);
    });

    it("never sends an owner another owner's events, nor lets it see or touch another owner's endpoints", async () => {
      const a = await ownerWithWebhook();
      const b = await ownerWithWebhook();
      const agent = await claim(a.owner.token);
      await call("POST", "/v1/operator/penalties", OPERATOR_TOKEN, {
        agentId: agent.agentId,
        code: "rate_abuse",
        points: 20,
        days: 30,
        reason: "isolation",
      });
      await deliver();
      expect(received(a.path).map((r) => bodyOf(r).type)).to.have.members(["score.changed", "penalty.added", "score.changed"]);
      expect(received(b.path)).to.deep.equal([]);
      expect((await call("GET", "/v1/events", b.owner.token)).json.events).to.deep.equal([]);
      for (const [method, suffix] of [
        ["GET", ""],
        ["PATCH", ""],
        ["DELETE", ""],
        ["GET", "/deliveries"],
        ["POST", "/test"],
        ["POST", "/rotate-secret"],
      ]) {
        const body = method === "GET" || method === "DELETE" ? undefined : method === "PATCH" ? { enabled: false } : {};
        const answer = await call(method, `/v1/webhooks/${a.webhook.id}${suffix}`, b.owner.token, body);
        expect(answer.status, `${method} ${suffix}`).to.equal(404);
        expect(answer.json.error.code).to.equal("webhook_not_found");
      }
      const penalty = bodyOf(received(a.path).find((r) => bodyOf(r).type === "penalty.added")!);
      expect(penalty.data).to.deep.include({ agentId: agent.agentId, code: "rate_abuse", points: 20, addedBy: "admin" });
      const changed = received(a.path)
        .map(bodyOf)
        .filter((e) => e.type === "score.changed")
        .map((e) => e.data);
      expect(changed[1]).to.deep.include({
        total: 180,
        previous: { scoreId: changed[0].scoreId, total: 200, band: "200-399", state: "provisional" },
      });
    });

    it("sends agent.late once per lapse after the V3.5 deadline, not while a declared outage covers it, and agent.back at the next check-in", async () => {
      const { owner, path } = await ownerWithWebhook(["agent.late", "agent.back"]);
      const late = await claim(owner.token);
      const excused = await claim(owner.token);
      const checkIn = (agent: { agentId: string; agentKey: string }, key: string) =>
        fetch(`${server.url}/v1/agents/${agent.agentId}/checkins`, {
          method: "POST",
          headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": key },
        });
      // The scan starts where it is now: only deadlines from here on are new.
      await server.webhooks.deadlines.scanLapses();
      const first = clock.now();
      expect((await checkIn(late, "l-1")).status).to.equal(201);
      advance(60);
      expect((await checkIn(excused, "e-1")).status).to.equal(201);
      const lateDeadline = first + 3600 + 600;
      // An open window covering the second agent's deadline (V4, lateDeadline + 60), declared once started (V4.1), before it passes.
      advance(lateDeadline + 40 - clock.now());
      const outage = await call("POST", "/v1/operator/outages", OPERATOR_TOKEN, {
        start: iso(lateDeadline + 30),
        reason: "covering the second deadline",
      });
      expect(outage.status, JSON.stringify(outage.json)).to.equal(201);
      advance(lateDeadline + 61 + 1200 - clock.now());
      expect(await server.webhooks.deadlines.scanLapses()).to.equal(1);
      expect(await server.webhooks.deadlines.scanLapses(), "once per lapse").to.equal(0);
      await deliver();
      const [alert] = received(path).map(bodyOf);
      expect(alert.type).to.equal("agent.late");
      expect(alert.data).to.deep.equal({ agentId: late.agentId, lastCheckinAt: iso(first), deadline: iso(lateDeadline) });
      expect(alert.timestamp).to.equal(iso(lateDeadline));
      advance(600);
      expect(await server.webhooks.deadlines.scanLapses()).to.equal(0);
      expect((await checkIn(late, "l-2")).status).to.equal(201);
      expect((await checkIn(excused, "e-2")).status).to.equal(201);
      await deliver();
      const back = received(path).map(bodyOf).slice(1);
      expect(back.map((e) => [e.type, e.data.agentId])).to.deep.equal([["agent.back", late.agentId]]);
      expect(back[0].data.missedDeadline).to.equal(iso(lateDeadline));
      // Once the window is closed, the next lapses are new ones, of both agents.
      expect(
        (await call("POST", `/v1/operator/outages/${outage.json.id}/close`, OPERATOR_TOKEN, { end: iso(clock.now()) })).status,
      ).to.equal(200);
      advance(7200);
      expect(await server.webhooks.deadlines.scanLapses()).to.equal(2);
    });

    it("sends no agent.late for an agent unclaimed before its deadline passed (issue #29)", async () => {
      const { owner, path } = await ownerWithWebhook(["agent.late"]);
      const [gone, kept] = [await claim(owner.token), await claim(owner.token)];
      await server.webhooks.deadlines.scanLapses();
      for (const agent of [gone, kept]) expect((await checkIn(agent.agentId, agent.agentKey, "before")).status).to.equal(201);
      expect((await call("POST", `/v1/agents/${gone.agentId}/unclaim`, owner.token, {})).status).to.equal(200);
      advance(3600 + 600 + 1);
      await server.webhooks.deadlines.scanLapses();
      await deliver();
      expect(received(path).map((r) => bodyOf(r).data.agentId)).to.deep.equal([kept.agentId]);
    });

    it("keeps events and endpoints of an owner by keyset pages, and bounds what one owner may keep (409 limit_reached)", async () => {
      const { owner, webhook } = await ownerWithWebhook();
      for (let i = 0; i < 3; i++) await call("POST", `/v1/webhooks/${webhook.id}/test`, owner.token, {});
      const first = (await call("GET", "/v1/events?limit=2", owner.token)).json;
      expect(first.events).to.have.length(2);
      const second = (await call("GET", `/v1/events?limit=2&cursor=${first.nextCursor}`, owner.token)).json;
      expect(second.events).to.have.length(1);
      expect(second.nextCursor).to.equal(null);
      expect((await call("GET", `/v1/webhooks?cursor=${first.nextCursor}`, owner.token)).json.error.code).to.equal("invalid_cursor");
      const long = await call("POST", "/v1/webhooks", owner.token, {
        url: `https://receiver.example.test/${"x".repeat(2100)}`,
        events: ["ping"],
      });
      expect(long.status).to.equal(400);
      const tooLong = await call("POST", "/v1/webhooks", owner.token, {
        url: `https://receiver.example.test/${"x".repeat(2100)}`,
        events: ["agent.late"],
      });
      expect(tooLong.status).to.equal(409);
      expect(tooLong.json.error.code).to.equal("limit_reached");
      expect(tooLong.json.error.message).to.include("MAX_WEBHOOK_URL_LENGTH");
      for (let i = 1; i < 20; i++) {
        const more = await call("POST", "/v1/webhooks", owner.token, { url: `https://receiver.example.test/${i}`, events: ["agent.late"] });
        expect(more.status).to.equal(201);
      }
      const over = await call("POST", "/v1/webhooks", owner.token, { url: "https://receiver.example.test/21", events: ["agent.late"] });
      expect(over.status).to.equal(409);
      expect(over.json.error.message).to.include("MAX_WEBHOOKS_PER_OWNER");
      const page = (await call("GET", "/v1/webhooks?limit=15", owner.token)).json;
      const rest = (await call("GET", `/v1/webhooks?limit=15&cursor=${page.nextCursor}`, owner.token)).json;
      expect([...page.webhooks, ...rest.webhooks]).to.have.length(20);
      const deleted = await call("DELETE", `/v1/webhooks/${page.webhooks[0].id}`, owner.token);
      expect(deleted.status).to.equal(200);
      expect(deleted.json).to.deep.equal(page.webhooks[0]);
      expect((await call("GET", `/v1/webhooks/${page.webhooks[0].id}`, owner.token)).status).to.equal(404);
    });

    it("tells outage.declared to every owner with an endpoint, and claim.changed to the owner who lost an agent to a transfer", async () => {
      const a = await ownerWithWebhook(["outage.declared", "claim.changed"]);
      const b = await ownerWithWebhook(["outage.declared", "claim.changed"]);
      const agent = await claim(a.owner.token);
      await deliver();
      const start = iso(clock.now());
      const outage = await call("POST", "/v1/operator/outages", OPERATOR_TOKEN, { start, end: start, reason: "everyone's" });
      const moved = await call("POST", `/v1/operator/agents/${agent.agentId}/transfer`, OPERATOR_TOKEN, {
        toOwnerId: b.owner.ownerId,
        reason: "settled",
      });
      expect(moved.status).to.equal(200);
      await deliver();
      // Order is not promised (README, webhooks): a's two deliveries may arrive either way round.
      const toA = new Map(received(a.path).map((r) => [bodyOf(r).type, bodyOf(r)]));
      expect(received(a.path).map((r) => bodyOf(r).type)).to.have.members(["outage.declared", "claim.changed"]);
      expect(received(b.path).map((r) => bodyOf(r).type)).to.deep.equal(["outage.declared"]);
      expect(toA.get("outage.declared")?.data).to.deep.include({ outageId: outage.json.id, reason: "everyone's" });
      expect(toA.get("outage.declared")?.id, "one event per owner").to.not.equal(bodyOf(received(b.path)[0]).id);
      expect(toA.get("claim.changed")?.data).to.deep.include({ agentId: agent.agentId, reason: "settled" });
    });

    it("tells agent.unclaimed, and the proof.removed of its domain proof, to the owner who unclaimed an agent (issue #29)", async () => {
      const { owner, path } = await ownerWithWebhook(["agent.unclaimed", "proof.removed"]);
      const agent = await claim(owner.token);
      await server.service.identity.recordProof({
        id: `prf_${agent.agentId}`,
        kind: "domain",
        ownerId: owner.ownerId,
        agentId: agent.agentId,
        subject: `${agent.agentId}.example.org`,
        binding: `domain:${agent.agentId}.example.org`,
        evidence: {},
      });
      const unclaimed = await call("POST", `/v1/agents/${agent.agentId}/unclaim`, owner.token, {});
      expect(unclaimed.status).to.equal(200);
      await deliver();
      // Deliveries are not in order (each is sent on its own): found by type.
      const byType = new Map(received(path).map((r) => [bodyOf(r).type, bodyOf(r)]));
      expect([...byType.keys()].sort()).to.deep.equal(["agent.unclaimed", "proof.removed"]);
      expect(byType.get("proof.removed").data).to.deep.include({ proofId: `prf_${agent.agentId}`, reason: "agent unclaimed" });
      expect(byType.get("agent.unclaimed")).to.deep.include({ timestamp: iso(clock.now()) });
      expect(byType.get("agent.unclaimed").data).to.deep.equal({ agentId: agent.agentId, unclaimedAt: iso(clock.now()) });
      // It is listed with the owner's events too.
      const events = await call("GET", "/v1/events", owner.token);
      expect(events.json.events.map((e: { type: string }) => e.type)).to.include("agent.unclaimed");
    });
  });
}

describe("webhook URLs outside vrai dev (issue #28)", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let receiver: TestHttpServer;
  /** Where the one name resolves: a public address when the endpoint is made (nothing connects to it), then 127.0.0.1. */
  let resolvesTo = "127.0.0.1";
  const { call } = apiClient(() => server.url);

  before(async () => {
    testDb = await TEST_STORES[1].create();
    receiver = await startHttpServer();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      clock: createManualClock(T0),
      logger: pino({ level: "silent" }),
      webhooks: { worker: false, timeoutMs: 1000, resolveAddresses: async () => [{ address: resolvesTo, family: 4 }] },
    });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await testDb?.drop();
  });

  it("refuses a URL whose name resolves to a loopback address (422), http:// anywhere (400), and connects to nothing", async () => {
    const owner = (await call("POST", "/v1/owners", undefined, {})).json;
    for (const url of [
      `https://receiver.example.test:${receiver.port}/hook`,
      `https://localhost:${receiver.port}/`,
      "https://127.0.0.1/",
    ]) {
      const refused = await call("POST", "/v1/webhooks", owner.token, { url, events: ["agent.late"] });
      expect(refused.status, url).to.equal(422);
      expect(refused.json.error.code).to.equal("webhook_forbidden_address");
      // It names the host given, never what a name resolved to.
      expect(refused.json.error.message).to.match(
        new RegExp(`^${new URL(url).hostname.replace(/\./g, "\\.")} is not reachable for webhooks`),
      );
      if (!url.includes("127.0.0.1")) expect(refused.json.error.message).to.not.include("127.0.0.1");
    }
    const plain = await call("POST", "/v1/webhooks", owner.token, {
      url: `http://receiver.example.test:${receiver.port}/`,
      events: ["agent.late"],
    });
    expect(plain.status).to.equal(400);
    expect(plain.json.error.message).to.include("https:// only");
    expect(receiver.connectionCount()).to.equal(0);
  });

  it("refuses again at delivery, inside the connection: a name that resolved to a public address when the endpoint was made and to loopback now", async () => {
    const owner = (await call("POST", "/v1/owners", undefined, {})).json;
    resolvesTo = "93.184.216.34";
    const made = await call("POST", "/v1/webhooks", owner.token, {
      url: `https://rebinding.example.test:${receiver.port}/`,
      events: ["agent.late"],
    });
    expect(made.status).to.equal(201);
    resolvesTo = "127.0.0.1";
    await call("POST", `/v1/webhooks/${made.json.id}/test`, owner.token, {});
    expect(await server.webhooks.worker.runOnce()).to.equal(1);
    const [attempt] = (await call("GET", `/v1/webhooks/${made.json.id}/deliveries`, owner.token)).json.deliveries;
    expect(attempt).to.deep.include({ status: null });
    expect(attempt.error).to.include("rebinding.example.test is not reachable for webhooks");
    expect(attempt.delivery.state).to.equal("pending");
    expect(receiver.connectionCount()).to.equal(0);
  });
});
