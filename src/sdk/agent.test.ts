import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { createVraiAgent, defaultSleep, VraiAgentError, type CheckInResult, type VraiAgentOptions } from "./agent";

const OPERATOR_TOKEN = "operator-test-token-0123456789";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

/**
 * A proxy in front of the API that misbehaves on the first requests: `drop` forwards the request and
 * closes the client's connection instead of answering; `503` answers 503 without forwarding.
 */
type Proxy = { url: string; keys: string[]; close(): Promise<void> };
async function startProxy(upstream: string, misbehave: { mode: "drop" | "503"; times: number }): Promise<Proxy> {
  const keys: string[] = [];
  let left = misbehave.times;
  const server = http.createServer(async (req, res) => {
    keys.push(String(req.headers["idempotency-key"]));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const misbehaving = left > 0;
    if (misbehaving) left--;
    if (misbehaving && misbehave.mode === "503") {
      res.writeHead(503, { "content-type": "text/html" }).end("<h1>503 Service Unavailable</h1>");
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of ["authorization", "idempotency-key", "content-type"]) if (req.headers[name]) headers[name] = String(req.headers[name]);
    const answer = await fetch(upstream + req.url, { method: req.method, headers, body: Buffer.concat(chunks) });
    const body = await answer.text();
    if (misbehaving) {
      req.socket.destroy();
      return;
    }
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => void (out[name] = value));
    delete out["content-length"];
    delete out["transfer-encoding"];
    res.writeHead(answer.status, out).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

describe("SDK createVraiAgent against the API on PGlite", function () {
  let testDb: TestDb;
  let server: ApiServer;
  const clock = createManualClock(T0);

  /** A sleep that records what it was asked and moves the service's clock instead of waiting. */
  function simulatedSleep() {
    const waits: number[] = [];
    const sleep = async (ms: number, signal?: AbortSignal) => {
      if (signal?.aborted) throw signal.reason;
      waits.push(ms);
      // Let the test act (e.g. stop()) before the wait is over, as it could during a real wait.
      await new Promise((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw signal.reason;
      clock.set(clock.now() + Math.ceil(ms / 1000));
    };
    return { waits, sleep };
  }

  async function newAgent(): Promise<{ agentId: string; agentKey: string }> {
    const owner = (await (await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as { token: string };
    const res = await fetch(`${server.url}/v1/agents`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` }, body: "{}" });
    return (await res.json()) as { agentId: string; agentKey: string };
  }

  function agentFor(credentials: { agentId: string; agentKey: string }, options: Partial<VraiAgentOptions> = {}) {
    return createVraiAgent({ baseUrl: server.url, ...credentials, random: () => 0.5, now: () => clock.now() * 1000, ...options });
  }

  async function countedCheckins(agentId: string): Promise<number> {
    return (await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1", [agentId])).rows[0].n;
  }

  async function setBusy(on: boolean) {
    const res = await fetch(`${server.url}/v1/operator/busy`, {
      method: "PUT", headers: { "content-type": "application/json", authorization: `Bearer ${OPERATOR_TOKEN}` }, body: JSON.stringify({ on, reason: "sdk test" }),
    });
    expect(res.status).to.equal(200);
  }

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, clock, logger: pino({ level: "silent" }), rateLimit: { perMinute: 100_000, burst: 10_000 } });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it("counts a check-in and returns the service's answer", async () => {
    const credentials = await newAgent();
    clock.set(clock.now() + 10);
    const result = await agentFor(credentials).checkIn();
    expect(result).to.include({ agentId: credentials.agentId, result: "counted", next_heartbeat_s: 3600, on_time: null, excused: false, credit: 0, replayed: false });
    expect(result.arrival).to.equal(new Date(clock.now() * 1000).toISOString().replace(".000", ""));
    expect(await countedCheckins(credentials.agentId)).to.equal(1);
  });

  it("retries with the same Idempotency-Key after a dropped connection and gets the original check-in, counted once", async () => {
    const credentials = await newAgent();
    const proxy = await startProxy(server.url, { mode: "drop", times: 1 });
    try {
      const { waits, sleep } = simulatedSleep();
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
    const credentials = await newAgent();
    const proxy = await startProxy(server.url, { mode: "503", times: 2 });
    try {
      const { waits, sleep } = simulatedSleep();
      const result = await agentFor(credentials, { baseUrl: proxy.url, sleep, random: () => 0.25 }).checkIn();
      expect(result).to.include({ result: "counted", replayed: false });
      expect(waits).to.deep.equal([250, 500]); // 0.25 × 1,000 then 0.25 × 2,000
      expect(new Set(proxy.keys).size).to.equal(1);
      expect(proxy.keys).to.have.length(3);
      expect(await countedCheckins(credentials.agentId)).to.equal(1);
    } finally {
      await proxy.close();
    }
  });

  it("gives up after maxAttempts on a service that keeps answering 503 (retryable error)", async () => {
    const credentials = await newAgent();
    const proxy = await startProxy(server.url, { mode: "503", times: 100 });
    try {
      const { waits, sleep } = simulatedSleep();
      const error = await agentFor(credentials, { baseUrl: proxy.url, sleep, retry: { maxAttempts: 4, maxDelayMs: 3000 } }).checkIn().catch((e: unknown) => e);
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

  it("obeys Retry-After on 429 and retries with the same key", async () => {
    const credentials = await newAgent();
    await agentFor(credentials).checkIn();
    clock.set(clock.now() + 1000);
    // A second process of the same agent, which does not know about the first check-in.
    const proxy = await startProxy(server.url, { mode: "503", times: 0 });
    try {
      const { waits, sleep } = simulatedSleep();
      const result = await agentFor(credentials, { baseUrl: proxy.url, sleep }).checkIn();
      expect(waits).to.deep.equal([200_000]);
      expect(proxy.keys).to.have.length(2);
      expect(proxy.keys[1]).to.equal(proxy.keys[0]);
      expect(result).to.include({ on_time: true, credit: 1200, replayed: false });
    } finally {
      await proxy.close();
    }
  });

  it("never checks in sooner than 1,200 s after its previous counted check-in", async () => {
    const credentials = await newAgent();
    const { waits, sleep } = simulatedSleep();
    const agent = agentFor(credentials, { sleep });
    await agent.checkIn();
    clock.set(clock.now() + 100);
    const second = await agent.checkIn();
    expect(waits).to.deep.equal([1_100_000]);
    expect(second).to.include({ on_time: true, credit: 1200 });
  });

  it("stops on a rejected agent key (401, not retryable) and reports it to onError", async () => {
    const credentials = await newAgent();
    const { waits, sleep } = simulatedSleep();
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
    const credentials = await newAgent();
    await setBusy(true);
    try {
      const { waits, sleep } = simulatedSleep();
      const results: CheckInResult[] = [];
      let heartbeat: { stop(): Promise<void> } | undefined;
      let reachedThree: () => void = () => {};
      const three = new Promise<void>((resolve) => (reachedThree = resolve));
      heartbeat = agentFor(credentials, { sleep }).startHeartbeat({
        onCheckIn: (r) => {
          results.push(r);
          if (results.length === 3) reachedThree();
        },
        onError: (e) => expect.fail(e.message),
      });
      await three;
      await heartbeat.stop();
      expect(results.map((r) => r.next_heartbeat_s)).to.deep.equal([7200, 7200, 7200]);
      expect(results.slice(1).map((r) => [r.on_time, r.credit])).to.deep.equal([[true, 7170], [true, 7170]]);
      expect(waits.slice(0, 2)).to.deep.equal([7_170_000, 7_170_000]); // 7,200 s less the 30 s safety margin
      expect(await countedCheckins(credentials.agentId)).to.equal(3);
    } finally {
      await setBusy(false);
    }
  });

  it("stop() ends the wait between heartbeats at once and no check-in follows", async () => {
    const credentials = await newAgent();
    const results: CheckInResult[] = [];
    let first: () => void = () => {};
    const counted = new Promise<void>((resolve) => (first = resolve));
    const heartbeat = agentFor(credentials, { sleep: defaultSleep }).startHeartbeat({ onCheckIn: (r) => (results.push(r), first()) });
    await counted;
    const started = Date.now();
    await heartbeat.stop();
    expect(Date.now() - started).to.be.below(1000);
    expect(results).to.have.length(1);
    await defaultSleep(50);
    expect(await countedCheckins(credentials.agentId)).to.equal(1);
  });
});
