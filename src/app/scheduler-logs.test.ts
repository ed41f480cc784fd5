import { Resolver } from "node:dns/promises";
import { expect } from "chai";
import { createManualClock } from "../service/clock";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { startDnsServer, type TestDnsServer } from "../test-helpers/dns-server";
import { capturedLogger } from "../test-helpers/logs";
import { startApiServer, type ApiServer } from "./server";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("the scheduler's log: routine work at debug, what a person wants to know at info (issue #31)", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let dns: TestDnsServer;
  const clock = createManualClock(T0);
  const logs = capturedLogger("debug");
  const { call, ownerWithAgent } = apiClient(() => server.url);

  before(async () => {
    testDb = await createTestPgliteDb();
    dns = await startDnsServer();
    const resolver = new Resolver();
    resolver.setServers([dns.address]);
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "operator-token-scheduler-logs",
      clock,
      logger: logs.logger,
      proofSources: { resolveTxt: (n) => resolver.resolveTxt(n), sleep: async () => undefined, retry: { tries: 1, baseDelayMs: 1 } },
    });
  });
  after(async () => {
    await server.close();
    await dns.close();
    await testDb.drop();
  });

  /** What one scheduler pass logged at `level` and above (info 30, debug 20), by message, the per-request lines aside. */
  async function tickLogs(): Promise<Array<[string, string]>> {
    logs.clear();
    await server.scheduler.tick();
    return logs
      .entries()
      .filter((e) => e.msg !== "request")
      .map((e) => [e.level === 30 ? "info" : e.level === 20 ? "debug" : String(e.level), e.msg]);
  }

  it("logs a pass that only created partitions, deleted expired challenges and re-checked a proof that held at debug, and a new day at info", async () => {
    // The first pass: today's daily recompute (a new store starts with today) and the partitions ahead.
    expect(await tickLogs()).to.deep.equal([
      ["info", "daily recompute done"],
      ["debug", "check-in partitions created ahead"],
    ]);
    expect(await tickLogs()).to.deep.equal([]);

    const { owner, agent } = await ownerWithAgent();
    const challenge = (
      await call("POST", "/v1/proofs/challenges", owner.token, { kind: "domain", subject: "logs.example.org", agentId: agent.agentId })
    ).json;
    dns.setTxt("_vrai.logs.example.org", [challenge.token]);
    expect(
      (
        await call("POST", "/v1/proofs", owner.token, {
          challengeId: challenge.id,
          evidence: { domain: "logs.example.org", method: "dns" },
        })
      ).status,
    ).to.equal(201);
    await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "octocat" });
    // An hour and a minute later the unused challenge has expired: deleting it is routine.
    clock.set(T0 + 3660);
    expect(await tickLogs()).to.deep.equal([["debug", "expired challenges deleted"]]);

    // A week later, still the same day of the week at 10:00: the domain proof's re-check holds (routine), a new day is computed (info).
    clock.set(T0 + 7 * 86400);
    const weekLater = await tickLogs();
    expect(weekLater.filter(([level]) => level === "info").map(([, msg]) => msg)).to.include("daily recompute done");
    expect(weekLater).to.deep.include(["debug", "proof re-checks done"]);
    expect(weekLater).to.not.deep.include(["info", "proof re-checks done"]);
    // Days of check-ins past their retention are dropped: that is said at info.
    expect(weekLater[weekLater.length - 1]).to.deep.equal(["info", "check-in partitions maintained"]);
  });
});
