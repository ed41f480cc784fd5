import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createVraiService } from "../service";
import { createManualClock } from "../service/clock";
import { createLoadMonitor } from "../service/load";
import { createReads, createSiteReads } from "../service/reads";
import { createMemoryStore } from "../store/memory-store";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { addressKey, createHttpApp } from "./express";
import { createApiMetrics } from "./metrics";
import { burstWindow, createRateLimits, DEFAULT_RATE_LIMITS, type RateLimitOptions } from "./rate-limit";
import { serviceRoutes } from "./service-routes";

const silent = pino({ level: "silent" });
const OPERATOR_TOKEN = "operator-token-rate-limit-test";
const METRICS_TOKEN = "metrics-token-rate-limit-test";
/** Limits that no test here reaches unless it means to. */
const ROOMY: Omit<RateLimitOptions, "redis"> = { perMinute: 100_000, burst: 10_000, ownersPerHour: 10_000, authFailuresPerMinute: 10_000 };

type Answer = { status: number; code: string | undefined; retryAfter: string | null };

/** A request from `client` (X-Forwarded-For: the tests connect from 127.0.0.1, a trusted proxy). */
async function send(
  url: string,
  path: string,
  options: { client?: string; token?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.client) headers["x-forwarded-for"] = options.client;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(url + path, {
    method: options.method ?? "GET",
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { status: res.status, code, retryAfter: res.headers.get("retry-after") };
}

const statuses = (answers: readonly Answer[]) => answers.map((a) => a.status);
const tally = (answers: readonly Answer[]) => {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
};

describe("rate limits", () => {
  let testDb: TestDb;
  before(async () => {
    testDb = await createTestPgliteDb();
  });
  after(async () => {
    await testDb.drop();
  });

  describe("windows", () => {
    it("turns a sustained rate and a burst into whole-second windows of the burst", () => {
      expect(burstWindow(600, 120)).to.deep.equal({ points: 120, windowS: 12 });
      expect(burstWindow(1, 2)).to.deep.equal({ points: 2, windowS: 120 });
      expect(burstWindow(100_000, 10_000)).to.deep.equal({ points: 10_000, windowS: 6 });
      expect(burstWindow(6000, 1)).to.deep.equal({ points: 100, windowS: 1 });
    });

    it("keys an IPv4 address as it is and an IPv6 address by its /64", () => {
      expect(addressKey("203.0.113.7")).to.equal("203.0.113.7");
      expect(addressKey("::ffff:203.0.113.7")).to.equal("203.0.113.7");
      expect(addressKey("2001:db8:1:2::1")).to.equal(addressKey("2001:0db8:0001:0002:ffff:1:2:3"));
      expect(addressKey("2001:db8:1:2::1")).to.equal("2001:db8:1:2::/64");
      expect(addressKey("2001:db8:1:3::1")).to.not.equal(addressKey("2001:db8:1:2::1"));
    });

    it("takes, peeks and gives back points per key in memory", async () => {
      const { account } = createRateLimits({ ...ROOMY, perMinute: 2, burst: 2 });
      expect(await account.take("a")).to.deep.equal({ ok: true });
      expect(await account.peek("a")).to.deep.equal({ ok: true });
      expect(await account.take("a")).to.deep.equal({ ok: true });
      const spent = await account.peek("a");
      expect(spent.ok).to.equal(false);
      expect(spent.ok ? 0 : spent.retryAfterS).to.be.within(1, 60);
      expect((await account.take("a")).ok).to.equal(false);
      expect(await account.take("b")).to.deep.equal({ ok: true });
      await account.giveBack("a");
      await account.giveBack("a");
      expect(await account.take("a")).to.deep.equal({ ok: true });
    });
  });

  describe("made-up credentials (finding 1)", () => {
    /** The service on the memory store behind the HTTP app, with the owner lookups counted. */
    async function appWithCountedLookups(limits: Omit<RateLimitOptions, "redis">) {
      const store = createMemoryStore();
      const service = createVraiService({ store, clock: createManualClock(Date.UTC(2026, 10, 2) / 1000), busy: () => false });
      const metrics = createApiMetrics({ busy: () => false });
      const load = createLoadMonitor({ maxInFlight: 10_000, maxLoopDelayMs: 60_000 });
      const reads = createReads({
        store,
        latestScores: { latestScoreSummary: async () => ({ agentExists: false, score: null }) },
        clock: service.clock,
        registrations: { ofAgent: async () => null },
      });
      const lookups = { owner: 0 };
      const app = createHttpApp({
        routes: serviceRoutes({
          ...service,
          reads,
          // No ERC-8004 feedback on the memory store (issue #27): every agent's publishing is off.
          publishing: { status: async () => ({ enabled: false, changedAt: null, reason: null, target: null, feedback: [] }) },
          site: createSiteReads({
            site: {
              listOutagesPage: async () => [],
              listDailyTotals: async () => [],
              dayOfClaim: async () => null,
              hasDailyScoreFrom: async () => false,
            },
            clock: service.clock,
          }),
          checkinResults: metrics.checkinResults,
        }),
        authenticateOwner: (token) => {
          lookups.owner++;
          return service.ownerTokens.authenticate(token);
        },
        authenticateOperator: service.accounts.authenticateOwner,
        authenticateAgent: async (agentId, key) => void (await service.accounts.authenticateAgent(agentId, key)),
        limits: createRateLimits(limits),
        accountCreation: { method: "post", path: "/v1/owners" },
        load,
        metrics,
        logger: silent,
      });
      const server = http.createServer(app).listen(0, "127.0.0.1");
      await new Promise((resolve) => server.once("listening", resolve));
      return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        service,
        lookups,
        close: () => {
          load.stop();
          return new Promise((resolve) => server.close(resolve));
        },
      };
    }

    const accepted = DEFAULT_RATE_LIMITS.authFailuresPerMinute;
    it(`looks up ${accepted} made-up owner tokens per minute from one address, then answers 429 without a lookup`, async () => {
      const app = await appWithCountedLookups(DEFAULT_RATE_LIMITS);
      try {
        const answers: Answer[] = [];
        for (let i = 0; i < 100; i++) answers.push(await send(app.url, "/v1/owners/me", { token: `vo_junk.${i}`, client: "203.0.113.1" }));
        expect(tally(answers)).to.deep.equal({ 401: accepted, 429: 100 - accepted });
        expect(app.lookups.owner).to.equal(accepted);
        const refused = answers[answers.length - 1];
        expect(refused.code).to.equal("rate_limited");
        // The failures' window is a minute: the figure is per minute.
        expect(Number(refused.retryAfter)).to.be.within(1, 60);
        // Made-up agent keys draw on the same failures of that address.
        expect(
          (
            await send(app.url, "/v1/agents/agt_x/checkins", {
              method: "POST",
              token: "va_junk",
              client: "203.0.113.1",
              headers: { "idempotency-key": "k" },
            })
          ).status,
        ).to.equal(429);
        // Another address has its own failures; a real owner from the spent address is refused too (no lookup can tell it apart first).
        expect((await send(app.url, "/v1/owners/me", { token: "vo_junk.other", client: "203.0.113.2" })).status).to.equal(401);
        const owner = await app.service.accounts.createOwner();
        expect((await send(app.url, "/v1/owners/me", { token: owner.token, client: "203.0.113.2" })).status).to.equal(200);
        expect((await send(app.url, "/v1/owners/me", { token: owner.token, client: "203.0.113.1" })).status).to.equal(429);
      } finally {
        await app.close();
      }
    });

    it("gives a bearer header on POST /v1/owners no bucket of its own: account creation is limited per address", async () => {
      const app = await appWithCountedLookups({ ...ROOMY, ownersPerHour: 3 });
      try {
        const answers: Answer[] = [];
        for (let i = 0; i < 6; i++)
          answers.push(await send(app.url, "/v1/owners", { method: "POST", body: {}, token: `junk-${i}`, client: "203.0.113.3" }));
        expect(statuses(answers)).to.deep.equal([201, 201, 201, 429, 429, 429]);
        expect(Number(answers[3].retryAfter)).to.be.within(1, 3600);
        expect((await send(app.url, "/v1/owners", { method: "POST", body: {}, client: "203.0.113.4" })).status).to.equal(201);
      } finally {
        await app.close();
      }
    });

    it("charges an agent's check-ins to the agent, and made-up keys for it to their address, not to the agent", async () => {
      const app = await appWithCountedLookups({ ...ROOMY, perMinute: 2, burst: 2, authFailuresPerMinute: 5 });
      try {
        const { ownerId } = await app.service.accounts.createOwner();
        const agent = await app.service.accounts.claimNewAgent(ownerId);
        const checkIn = (key: string, client: string, n: number) =>
          send(app.url, `/v1/agents/${agent.agentId}/checkins`, {
            method: "POST",
            token: key,
            client,
            headers: { "idempotency-key": `k-${n}` },
          });
        const junk: Answer[] = [];
        for (let i = 0; i < 8; i++) junk.push(await checkIn(`va_junk_${i}`, "203.0.113.5", i));
        // Until its key is verified, a request is its address's: two requests a window, then 429, whatever the key.
        expect(statuses(junk)).to.deep.equal([401, 401, 429, 429, 429, 429, 429, 429]);
        // The agent's own two points are intact: a counted check-in and a refusal by V3, then its limit.
        const own = [
          await checkIn(agent.agentKey, "203.0.113.6", 100),
          await checkIn(agent.agentKey, "203.0.113.6", 101),
          await checkIn(agent.agentKey, "203.0.113.7", 102),
        ];
        expect(own.map((a) => [a.status, a.code])).to.deep.equal([
          [201, undefined],
          [429, "checkin_refused"],
          [429, "rate_limited"],
        ]);
      } finally {
        await app.close();
      }
    });
  });

  describe("over HTTP", () => {
    it("charges an owner's requests to the owner: another owner and the address's own requests keep theirs", async () => {
      const server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        logger: silent,
        rateLimit: { ...ROOMY, perMinute: 1, burst: 2 },
      });
      try {
        const a = await server.service.accounts.createOwner();
        const b = await server.service.accounts.createOwner();
        const me = (token: string) => send(server.url, "/v1/owners/me", { token });
        expect(statuses([await me(a.token), await me(a.token), await me(a.token)])).to.deep.equal([200, 200, 429]);
        expect((await me(b.token)).status).to.equal(200);
        expect(
          statuses([await send(server.url, "/v1/method"), await send(server.url, "/v1/method"), await send(server.url, "/v1/method")]),
        ).to.deep.equal([200, 200, 429]);
      } finally {
        await server.close();
      }
    });

    it("limits requests without a credential per client address, taken from X-Forwarded-For when a loopback proxy sent them", async () => {
      const server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        logger: silent,
        rateLimit: { ...ROOMY, perMinute: 1, burst: 2 },
      });
      try {
        const get = (client: string) => send(server.url, "/v1/method", { client });
        expect(statuses([await get("203.0.113.7"), await get("203.0.113.7"), await get("203.0.113.7")])).to.deep.equal([200, 200, 429]);
        expect((await get("203.0.113.8")).status).to.equal(200);
        // A forwarded chain ending in a loopback hop names the client before it.
        expect((await get("203.0.113.7, 127.0.0.1")).status).to.equal(429);
        // Every address of one IPv6 /64 draws on one bucket.
        expect(statuses([await get("2001:db8:5:6::1"), await get("2001:db8:5:6::2"), await get("2001:db8:5:6:ffff::3")])).to.deep.equal([
          200, 200, 429,
        ]);
      } finally {
        await server.close();
      }
    });

    it("limits every route, pages, the OpenAPI document, /metrics, OPTIONS and unknown paths included (finding 8)", async () => {
      const server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        logger: silent,
        rateLimit: { ...ROOMY, perMinute: 1, burst: 1 },
        metrics: { token: METRICS_TOKEN },
      });
      try {
        const paths = [
          "/",
          "/method",
          "/agents",
          "/agents/agt_none",
          "/agents/agt_none/badge.svg",
          "/v1/openapi.json",
          "/metrics",
          "/v1/agents/agt_none/score",
          "/no-such-path",
        ];
        for (const [i, path] of paths.entries()) {
          const client = `198.51.100.${i + 1}`;
          const first = await send(server.url, path, { client, token: path === "/metrics" ? METRICS_TOKEN : undefined });
          expect(first.status, path).to.not.equal(429);
          const second = await send(server.url, path, { client, token: path === "/metrics" ? METRICS_TOKEN : undefined });
          expect([second.status, second.code], path).to.deep.equal([429, "rate_limited"]);
          expect(Number(second.retryAfter), path).to.be.within(1, 60);
          const options = await send(server.url, path, { client, method: "OPTIONS" });
          expect(options.status, `OPTIONS ${path}`).to.equal(429);
        }
      } finally {
        await server.close();
      }
    });
  });

  describe("in Redis", () => {
    const uniquePrefix = () => `vrai-test:${process.pid}:${Date.now()}:${Math.random().toString(36).slice(2)}`;

    it("shares one limit between two instances on one Redis", async () => {
      const rateLimit = {
        ...ROOMY,
        perMinute: 3,
        burst: 3,
        authFailuresPerMinute: 2,
        redis: { url: "redis://127.0.0.1:6379", keyPrefix: uniquePrefix() },
      };
      const servers: ApiServer[] = [];
      try {
        servers.push(await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: silent, rateLimit }));
        servers.push(await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: silent, rateLimit }));
        const answers: Answer[] = [];
        for (let i = 0; i < 6; i++) answers.push(await send(servers[i % 2].url, "/v1/method", { client: "203.0.113.9" }));
        expect(statuses(answers)).to.deep.equal([200, 200, 200, 429, 429, 429]);
        expect((await send(servers[1].url, "/v1/method", { client: "203.0.113.10" })).status).to.equal(200);
        // Failed authentications too: made-up tokens sent to either instance draw on one budget.
        const guesses: Answer[] = [];
        for (let i = 0; i < 4; i++)
          guesses.push(await send(servers[i % 2].url, "/v1/owners/me", { client: "203.0.113.12", token: `vo_junk.${i}` }));
        expect(statuses(guesses)).to.deep.equal([401, 401, 429, 429]);
      } finally {
        for (const server of servers) await server.close();
      }
    });

    it("limits each instance in its own memory while Redis cannot be reached, and answers no 5xx", async () => {
      const closed = await closedLoopbackPort();
      const rateLimit = {
        ...ROOMY,
        perMinute: 2,
        burst: 2,
        ownersPerHour: 1,
        redis: { url: `redis://127.0.0.1:${closed}`, keyPrefix: uniquePrefix() },
      };
      const server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: silent, rateLimit });
      try {
        const reads = [await send(server.url, "/v1/method"), await send(server.url, "/v1/method"), await send(server.url, "/v1/method")];
        expect(statuses(reads)).to.deep.equal([200, 200, 429]);
        expect(reads[2].code).to.equal("rate_limited");
        const owners = [
          await send(server.url, "/v1/owners", { method: "POST", body: {}, client: "203.0.113.11" }),
          await send(server.url, "/v1/owners", { method: "POST", body: {}, client: "203.0.113.11" }),
        ];
        expect(statuses(owners)).to.deep.equal([201, 429]);
      } finally {
        await server.close();
      }
    });
  });
});

/** A loopback port nothing listens on: one the system just gave out and took back. */
async function closedLoopbackPort(): Promise<number> {
  const probe = net.createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => probe.once("listening", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
