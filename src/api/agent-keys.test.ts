/** Rotating an agent's key through the API (issue #29): POST /v1/agents/{id}/rotate-key, the old key refused at once. */
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("POST /v1/agents/{id}/rotate-key (issue #29)", function () {
  this.timeout(60_000);
  let testDb: TestDb;
  let server: ApiServer;
  const clock = createManualClock(T0);
  const { call, checkIn } = apiClient(() => server.url);

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "operator-test-token-keys-0123456",
      clock,
      logger: pino({ level: "silent" }),
    });
  });
  after(async () => {
    await server?.close();
    await testDb?.drop();
  });

  it("answers a new key once; the old key is refused at once and the claim goes on (its check-ins keep counting)", async () => {
    const { owner, agent } = await apiClient(() => server.url).ownerWithAgent();
    expect((await checkIn(agent.agentId, agent.agentKey, "k1")).status).to.equal(201);
    clock.set(T0 + 3600);
    const rotated = await call("POST", `/v1/agents/${agent.agentId}/rotate-key`, owner.token, {});
    expect(rotated.status).to.equal(200);
    expect(rotated.json).to.include({ agentId: agent.agentId, claimId: agent.claimId, rotatedAt: "2026-11-02T11:00:00Z" });
    expect(rotated.json.agentKey).to.be.a("string").and.not.equal(agent.agentKey);
    const old = await checkIn(agent.agentId, agent.agentKey, "k2");
    expect(old.status).to.equal(401);
    expect(old.json.error.code).to.equal("invalid_agent_key");
    const fresh = await checkIn(agent.agentId, rotated.json.agentKey, "k3");
    expect(fresh.status).to.equal(201);
    // The claim of before: an on-time check-in with its credit (a re-claim's first check-in earns 0).
    expect(fresh.json).to.include({ on_time: true, credit: 3600 });
  });

  it("refuses another owner's agent (403), an unknown agent (404) and a request without the owner token (401)", async () => {
    const { agent } = await apiClient(() => server.url).ownerWithAgent();
    const { owner: other } = await apiClient(() => server.url).ownerWithAgent();
    const foreign = await call("POST", `/v1/agents/${agent.agentId}/rotate-key`, other.token, {});
    expect(foreign.status).to.equal(403);
    expect(foreign.json.error.code).to.equal("agent_owned_by_another_owner");
    expect((await call("POST", "/v1/agents/agt_nobody/rotate-key", other.token, {})).status).to.equal(404);
    expect((await call("POST", `/v1/agents/${agent.agentId}/rotate-key`, undefined, {})).status).to.equal(401);
    // Nothing changed: the agent's own key still checks in.
    expect((await checkIn(agent.agentId, agent.agentKey, "k4")).status).to.equal(201);
  });
});
