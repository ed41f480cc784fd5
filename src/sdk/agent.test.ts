import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { claimAgent, simulatedSleep, startCheckinProxy } from "../test-helpers/checkin-proxy";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { createVraiAgent, defaultSleep, VraiAgentError, type CheckInResult, type CheckInWait, type VraiAgentOptions } from "./agent";

const OPERATOR_TOKEN = "operator-test-token-0123456789";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("SDK createVraiAgent against the API on PGlite", () => {
  let testDb: TestDb;
  let server: ApiServer;
  const clock = createManualClock(T0);

  function agentFor(credentials: { agentId: string; agentKey: string }, options: Partial<VraiAgentOptions> = {}) {
    return createVraiAgent({ baseUrl: server.url, ...credentials, random: () => 0.5, now: () => clock.now() * 1000, ...options });
  }

  async function countedCheckins(agentId: string): Promise<number> {
    return (await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1", [agentId])).rows[0].n;
  }

  async function setBusy(on: boolean) {
    const res = await fetch(`${server.url}/v1/operator/busy`, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `Bearer ${OPERATOR_TOKEN}` },
      body: JSON.stringify({ on, reason: "sdk test" }),
    });
    expect(res.status).to.equal(200);
  }

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      clock,
      logger: pino({ level: "silent" }),
      rateLimit: { perMinute: 100_000, burst: 10_000 },
    });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it("counts a check-in and returns the service's answer", async () => {
    const credentials = await claimAgent(server.url);
    clock.set(clock.now() + 10);
    const result = await agentFor(credentials).checkIn();
    expect(result).to.include({
      agentId: credentials.agentId,
      result: "counted",
      next_heartbeat_s: 3600,
      on_time: null,
      excused: false,
      credit: 0,
      replayed: false,
    });
    expect(result.arrival).to.equal(new Date(clock.now() * 1000).toISOString().replace(".000", ""));
    expect(await countedCheckins(credentials.agentId)).to.equal(1);
  });

  it("retries with the same Idempotency-Key after a dropped connection and gets the original check-in, counted once", async () => {
    const credentials = await claimAgent(server.url);
    const proxy = await startCheckinProxy(server.url, ["drop"]);
    try {
      const { waits, sleep } = simulatedSleep(clock);
      const result = await agentFor(credentials, { baseUrl: proxy.url, sleep }).checkIn();
      expect(proxy.keys).to.have.length(2);
      expect(proxy.keys[1]).to.equal(proxy.keys[0]);
      expect(result.replayed).to.equal(true);
      expect(result.result).to.equal("counted");
      expect(waits).to.deep.equal([500]); // full jitter: random 0.5 × 1,000 ms
      expect(await countedCheckins(credentials.agentId)).to.equal(1);
    } finally {
      await proxy.close();
    }
  });

  it("backs off with full jitter on 503 (twice) and counts on the third attempt with the same key", async () => {
    const credentials = await claimAgent(server.url);
    const proxy = await startCheckinProxy(server.url, ["503", "503"]);
    try {
      const { waits, sleep } = simulatedSleep(clock);
      const told: CheckInWait[] = [];
      const result = await agentFor(credentials, { baseUrl: proxy.url, sleep, random: () => 0.25 }).checkIn({
        onWait: (w) => told.push(w),
      });
      expect(result).to.include({ result: "counted", replayed: false });
      expect(waits).to.deep.equal([250, 500]); // 0.25 × 1,000 then 0.25 × 2,000
      // Nothing waits silently: each backoff is told first, with the failure it follows.
      expect(told.map(({ reason, ms, attempt, error }) => ({ reason, ms, attempt, status: error?.status }))).to.deep.equal([
        { reason: "retry", ms: 250, attempt: 2, status: 503 },
        { reason: "retry", ms: 500, attempt: 3, status: 503 },
      ]);
      expect(new Set(proxy.keys).size).to.equal(1);
      expect(proxy.keys).to.have.length(3);
      expect(await countedCheckins(credentials.agentId)).to.equal(1);
    } finally {
      await proxy.close();
    }
  });

  it("gives up after maxAttempts on a service that keeps answering 503 (retryable error)", async () => {
    const credentials = await claimAgent(server.url);
    const proxy = await startCheckinProxy(server.url, Array(100).fill("503"));
    try {
      const { waits, sleep } = simulatedSleep(clock);
      const error = await agentFor(credentials, { baseUrl: proxy.url, sleep, retry: { maxAttempts: 4, maxDelayMs: 3000 } })
        .checkIn()
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(VraiAgentError);
      expect((error as VraiAgentError).retryable).to.equal(true);
      expect((error as VraiAgentError).status).to.equal(503);
      expect(proxy.keys).to.have.length(4);
      expect(waits).to.deep.equal([500, 1000, 1500]); // ceilings 1,000, 2,000, then capped at 3,000
      expect(await countedCheckins(credentials.agentId)).to.equal(0);
    } finally {
      await proxy.close();
    }
  });

  it("fails fast on a 429 by default (issue #31): no wait, one request, retryAfterMs from Retry-After", async () => {
    const credentials = await claimAgent(server.url);
    await agentFor(credentials).checkIn();
    clock.set(clock.now() + 1000);
    // A second process of the same agent, which does not know about the first check-in.
    const proxy = await startCheckinProxy(server.url);
    try {
      const { waits, sleep } = simulatedSleep(clock);
      const error = await agentFor(credentials, { baseUrl: proxy.url, sleep })
        .checkIn()
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(VraiAgentError);
      expect(error).to.include({ code: "checkin_refused", status: 429, retryable: true, retryAfterMs: 200_000 });
      expect((error as VraiAgentError).message).to.equal(
        "check-in refused (429: less than 1,200 s since the previous counted check-in; retry in 200 s)",
      );
      expect(waits).to.deep.equal([]);
      expect(proxy.keys).to.have.length(1);
    } finally {
      await proxy.close();
    }
  });

  it("with wait: true, obeys Retry-After on 429, says so to onWait first, and retries with the same key", async () => {
    const credentials = await claimAgent(server.url);
    await agentFor(credentials).checkIn();
    clock.set(clock.now() + 1000);
    const proxy = await startCheckinProxy(server.url);
    try {
      const { waits, sleep } = simulatedSleep(clock);
      const told: CheckInWait[] = [];
      const result = await agentFor(credentials, { baseUrl: proxy.url, sleep }).checkIn({ wait: true, onWait: (w) => told.push(w) });
      expect(waits).to.deep.equal([200_000]);
      expect(told.map(({ reason, ms, attempt, error }) => ({ reason, ms, attempt, status: error?.status }))).to.deep.equal([
        { reason: "rate_limited", ms: 200_000, attempt: 2, status: 429 },
      ]);
      expect(proxy.keys).to.have.length(2);
      expect(proxy.keys[1]).to.equal(proxy.keys[0]);
      expect(result).to.include({ on_time: true, credit: 1200, replayed: false });
    } finally {
      await proxy.close();
    }
  });

  it("never checks in sooner than 1,200 s after its previous counted check-in: throws checkin_too_soon at once, or waits with wait: true", async () => {
    const credentials = await claimAgent(server.url);
    const { waits, sleep } = simulatedSleep(clock);
    const agent = agentFor(credentials, { sleep });
    await agent.checkIn();
    clock.set(clock.now() + 100);
    const before = await countedCheckins(credentials.agentId);
    const tooSoon = await agent.checkIn().catch((e: unknown) => e);
    expect(tooSoon).to.be.instanceOf(VraiAgentError);
    expect(tooSoon).to.include({ code: "checkin_too_soon", retryable: true, retryAfterMs: 1_100_000 });
    expect((tooSoon as VraiAgentError).message).to.equal(
      "the previous check-in was counted 100 s ago and the service counts one at least 1200 s after it (V3.2): retry in 1100 s, or pass { wait: true }",
    );
    expect(waits).to.deep.equal([]);
    expect(await countedCheckins(credentials.agentId)).to.equal(before);
    const told: CheckInWait[] = [];
    const second = await agent.checkIn({ wait: true, onWait: (w) => told.push(w) });
    expect(waits).to.deep.equal([1_100_000]);
    expect(told).to.deep.equal([{ reason: "spacing", ms: 1_100_000, attempt: 1 }]);
    expect(second).to.include({ on_time: true, credit: 1200 });
  });

  it("stops on a rejected agent key (401, not retryable) and reports it to onError", async () => {
    const credentials = await claimAgent(server.url);
    const { waits, sleep } = simulatedSleep(clock);
    const agent = agentFor({ agentId: credentials.agentId, agentKey: "va_not-the-key" }, { sleep });
    const error = await agent.checkIn().catch((e: unknown) => e);
    expect(error).to.be.instanceOf(VraiAgentError);
    expect((error as VraiAgentError).status).to.equal(401);
    expect((error as VraiAgentError).retryable).to.equal(false);
    const errors: VraiAgentError[] = [];
    const heartbeat = agent.startHeartbeat({ onError: (e) => errors.push(e) });
    await heartbeat.stop();
    expect(errors.map((e) => e.status)).to.deep.equal([401]);
    expect(waits).to.deep.equal([]);
  });

  it("heartbeats every next_heartbeat_s: 7200 while the operator's busy switch is on, each check-in on time", async () => {
    const credentials = await claimAgent(server.url);
    await setBusy(true);
    try {
      const { waits, sleep } = simulatedSleep(clock);
      const results: CheckInResult[] = [];
      let reachedThree: () => void = () => {};
      const three = new Promise<void>((resolve) => {
        reachedThree = resolve;
      });
      const heartbeat = agentFor(credentials, { sleep }).startHeartbeat({
        onCheckIn: (r) => {
          results.push(r);
          if (results.length === 3) reachedThree();
        },
        onError: (e) => expect.fail(e.message),
      });
      await three;
      await heartbeat.stop();
      expect(results.map((r) => r.next_heartbeat_s)).to.deep.equal([7200, 7200, 7200]);
      expect(results.slice(1).map((r) => [r.on_time, r.credit])).to.deep.equal([
        [true, 7170],
        [true, 7170],
      ]);
      expect(waits.slice(0, 2)).to.deep.equal([7_170_000, 7_170_000]); // 7,200 s less the 30 s safety margin
      expect(await countedCheckins(credentials.agentId)).to.equal(3);
    } finally {
      await setBusy(false);
    }
  });

  it("stop() ends the wait between heartbeats at once and no check-in follows", async () => {
    const credentials = await claimAgent(server.url);
    const results: CheckInResult[] = [];
    let first: () => void = () => {};
    const counted = new Promise<void>((resolve) => (first = resolve));
    const heartbeat = agentFor(credentials, { sleep: defaultSleep }).startHeartbeat({
      onCheckIn: (r) => {
        results.push(r);
        return first();
      },
    });
    await counted;
    const started = Date.now();
    await heartbeat.stop();
    // The wait was for the next heartbeat, an hour away: ended by stop(), not by its time.
    expect(Date.now() - started).to.be.below(10_000);
    expect(results).to.have.length(1);
    await defaultSleep(50);
    expect(await countedCheckins(credentials.agentId)).to.equal(1);
  });
});
