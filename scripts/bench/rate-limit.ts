/**
 * The rate limits' figures (issue #15): the cost of the limiter on a check-in's path (in memory:
 * the failures' peek and the agent's take), and how many made-up owner tokens one address gets
 * looked up per minute under the default limits. Run: `npx tsx scripts/bench/rate-limit.ts`.
 */
import pino from "pino";
import { createRateLimits, DEFAULT_RATE_LIMITS } from "../../src/api/rate-limit";
import { startApiServer } from "../../src/app/server";
import { createTestPgliteDb } from "../../src/test-helpers/db";

const DECISIONS = 1_000_000;
const AGENTS = 10_000;
const GUESSES = 200;

async function limiterCost(): Promise<void> {
  const limits = createRateLimits({ ...DEFAULT_RATE_LIMITS, perMinute: 1_000_000_000, burst: 1_000_000_000 });
  const keys = Array.from({ length: AGENTS }, (_, i) => `a:agt_${i.toString(16).padStart(16, "0")}`);
  const run = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await limits.authFailures.peek("203.0.113.1");
      await limits.account.take(keys[i % AGENTS]);
    }
  };
  await run(DECISIONS / 10);
  const started = process.hrtime.bigint();
  await run(DECISIONS);
  const ns = Number(process.hrtime.bigint() - started) / DECISIONS;
  console.log(
    `limiter on a check-in's path (failures peek + agent take, memory, ${AGENTS} agents): ${(ns / 1000).toFixed(2)} µs per request`,
  );
}

async function madeUpTokens(): Promise<void> {
  const testDb = await createTestPgliteDb();
  const server = await startApiServer({ db: testDb.db, operatorToken: "operator-bench-rate-limit-000", logger: pino({ level: "silent" }) });
  try {
    const counts: Record<number, number> = {};
    for (let i = 0; i < GUESSES; i++) {
      const res = await fetch(`${server.url}/v1/owners/me`, {
        headers: { authorization: `Bearer vo_junk.${i}`, "x-forwarded-for": "203.0.113.1" },
      });
      await res.arrayBuffer();
      counts[res.status] = (counts[res.status] ?? 0) + 1;
    }
    console.log(
      `made-up owner tokens from one address, ${GUESSES} sent at once: ${counts[401] ?? 0} looked up (401), ` +
        `${counts[429] ?? 0} refused without a lookup (429); ` +
        `the window is 60 s, so at most ${DEFAULT_RATE_LIMITS.authFailuresPerMinute} per minute`,
    );
  } finally {
    await server.close();
    await testDb.drop();
  }
}

void (async () => {
  await limiterCost();
  await madeUpTokens();
})();
