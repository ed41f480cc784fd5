import { expect } from "chai";
import pino from "pino";
import { createTestPgliteDb } from "../test-helpers/db";
import { createRateLimiter } from "./rate-limit";
import { startApiServer } from "../app/server";

describe("per-key rate limits", () => {
  it("allows a burst, then refuses with the seconds until the next token, per key", () => {
    let now = 0;
    const limiter = createRateLimiter({ perMinute: 60, burst: 3, now: () => now });
    for (let i = 0; i < 3; i++) expect(limiter.take("a")).to.deep.equal({ ok: true });
    expect(limiter.take("a")).to.deep.equal({ ok: false, retryAfterS: 1 });
    expect(limiter.take("b")).to.deep.equal({ ok: true });
    now += 1000;
    expect(limiter.take("a")).to.deep.equal({ ok: true });
    expect(limiter.take("a").ok).to.equal(false);
  });
});

describe("rate limits over HTTP", () => {
  it("answer 429 rate_limited with Retry-After once a credential's burst is spent, other credentials unaffected", async () => {
    const testDb = await createTestPgliteDb();
    const server = await startApiServer({ db: testDb.db, operatorToken: "operator-token-rate-limit-test", logger: pino({ level: "silent" }), rateLimit: { perMinute: 1, burst: 2 } });
    try {
      const get = (token: string) => fetch(`${server.url}/v1/owners/me`, { headers: { authorization: `Bearer ${token}` } });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await get("vo_x.token-a")).status);
      expect(statuses).to.deep.equal([401, 401, 429]);
      const limited = await get("vo_x.token-a");
      expect(limited.headers.get("retry-after")).to.match(/^\d+$/);
      expect(((await limited.json()) as { error: { code: string } }).error.code).to.equal("rate_limited");
      expect((await get("vo_x.token-b")).status).to.equal(401);
    } finally {
      await server.close();
      await testDb.drop();
    }
  });

  it("limit requests without a credential per client address, taken from X-Forwarded-For when a loopback proxy sent them", async () => {
    const testDb = await createTestPgliteDb();
    const server = await startApiServer({ db: testDb.db, operatorToken: "operator-token-rate-limit-test", logger: pino({ level: "silent" }), rateLimit: { perMinute: 1, burst: 2 } });
    try {
      // The test connects from 127.0.0.1, a trusted proxy ("trust proxy": loopback), so the forwarded address is the client's.
      const get = (client: string) => fetch(`${server.url}/v1/method`, { headers: { "x-forwarded-for": client } });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await get("203.0.113.7")).status);
      expect(statuses).to.deep.equal([200, 200, 429]);
      expect((await get("203.0.113.8")).status).to.equal(200);
      // A forwarded chain ending in a loopback hop names the client before it.
      expect((await get("203.0.113.7, 127.0.0.1")).status).to.equal(429);
    } finally {
      await server.close();
      await testDb.drop();
    }
  });
});
