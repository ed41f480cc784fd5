/** Unclaiming an agent through the API (issue #29): POST /v1/agents/{id}/unclaim, and a new claim of it by any owner (V2). */
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("POST /v1/agents/{id}/unclaim (issue #29)", function () {
  this.timeout(60_000);
  let testDb: TestDb;
  let server: ApiServer;
  const clock = createManualClock(T0);
  const { call, ownerWithAgent, checkIn } = apiClient(() => server.url);

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "operator-test-token-unclaim-0123456",
      clock,
      logger: pino({ level: "silent" }),
    });
  });
  after(async () => {
    await server?.close();
    await testDb?.drop();
  });

  const unclaim = (agentId: string, token?: string, body: unknown = {}) => call("POST", `/v1/agents/${agentId}/unclaim`, token, body);
  /** The directory's entries found by the agent's id. */
  const listed = async (agentId: string) =>
    (await call("GET", `/v1/agents?q=${agentId}`)).json.agents.map((a: { agentId: string }) => a.agentId);
  /** The agent as its owner and the public see it while claimed: its key takes check-ins, its score is served and listed. */
  async function expectClaimed(owner: { token: string }, agentId: string, key: string, idempotencyKey: string): Promise<void> {
    expect((await checkIn(agentId, key, idempotencyKey)).status).to.equal(201);
    expect((await call("GET", `/v1/agents/${agentId}/score`)).status).to.equal(200);
    expect((await call("GET", "/v1/owners/me", owner.token)).json.agents).to.include(agentId);
    expect(await listed(agentId)).to.deep.equal([agentId]);
  }

  it("answers 200 with when; from then on the key is refused, and the agent's score, page, badge and proof answer 404", async () => {
    clock.set(T0);
    const { owner, agent } = await ownerWithAgent();
    const id = agent.agentId;
    // Read first, so the server's latest-score cache holds it: the unclaim's commit drops it.
    await expectClaimed(owner, id, agent.agentKey, "k1");
    clock.set(T0 + 3600);
    const done = await unclaim(id, owner.token);
    expect(done).to.deep.equal({ status: 200, json: { agentId: id, unclaimedAt: "2026-11-02T11:00:00Z" } });

    const refused = await checkIn(id, agent.agentKey, "k2");
    expect(refused.status).to.equal(401);
    expect(refused.json.error.code).to.equal("invalid_agent_key");
    for (const path of ["/score", "", "/score/proof", "/window", "/scores", "/proofs", "/penalties"]) {
      const read = await call("GET", `/v1/agents/${id}${path}`);
      expect(read.status, path).to.equal(404);
      expect(read.json.error.code, path).to.equal("agent_unclaimed");
    }
    const page = await fetch(`${server.url}/agents/${id}`);
    expect(page.status).to.equal(404);
    expect(page.headers.get("content-type")).to.match(/^text\/html/);
    const text = await page.text();
    expect(text).to.contain("<h1>Agent unclaimed</h1>").and.contain("was unclaimed by its owner");
    const badge = await fetch(`${server.url}/agents/${id}/badge.svg`);
    expect(badge.status).to.equal(404);
    expect(await badge.text()).to.contain("unknown");
    expect((await call("GET", "/v1/owners/me", owner.token)).json.agents).to.not.include(id);
    expect(await listed(id)).to.deep.equal([]);
    // Its stored scores stay, by their own ids (V9): what is anchored stays verifiable.
    const stored = await server.service.store.read.latestScore(id);
    expect((await call("GET", `/v1/scores/${stored?.id}`)).status).to.equal(200);
  });

  it("refuses no token (401), a read-only token, another owner (403), an unknown agent (404), a body with a field (400): nothing changes", async () => {
    clock.set(T0 + 2 * 3600);
    const { owner, agent } = await ownerWithAgent();
    const { owner: other } = await ownerWithAgent();
    const id = agent.agentId;
    const { token: readOnly } = await server.service.ownerTokens.createReadToken(owner.ownerId, "reader");
    const refusals: Array<[string, Awaited<ReturnType<typeof call>>]> = [
      ["no token", await unclaim(id)],
      ["read-only", await unclaim(id, readOnly)],
      ["another owner", await unclaim(id, other.token)],
      ["unknown", await unclaim("agt_nobody", owner.token)],
      ["a field", await unclaim(id, owner.token, { now: true })],
    ];
    expect(refusals.map(([why, r]) => [why, r.status, r.json.error.code])).to.deep.equal([
      ["no token", 401, "missing_credentials"],
      ["read-only", 403, "read_only_token"],
      ["another owner", 403, "agent_owned_by_another_owner"],
      ["unknown", 404, "agent_not_found"],
      ["a field", 400, "invalid_request"],
    ]);
    await expectClaimed(owner, id, agent.agentKey, "still-claimed");

    expect((await unclaim(id, owner.token)).status).to.equal(200);
    for (const token of [owner.token, other.token]) {
      const again = await unclaim(id, token);
      expect(again.status).to.equal(409);
      expect(again.json.error.code).to.equal("agent_unclaimed");
    }
    // Nothing but a new claim changes it: a new key, a challenge of it or its publishing are refused.
    const changes = [
      await call("POST", `/v1/agents/${id}/rotate-key`, owner.token, {}),
      await call("POST", "/v1/proofs/challenges", owner.token, { kind: "domain", subject: "agent.example.org", agentId: id }),
      await call("PUT", `/v1/agents/${id}/erc8004-publishing`, owner.token, { enabled: false }),
    ];
    expect(changes.map((r) => [r.status, r.json.error.code])).to.deep.equal([
      [409, "agent_unclaimed"],
      [409, "agent_unclaimed"],
      [409, "agent_unclaimed"],
    ]);
  });

  it("lets another owner claim it with POST /v1/agents/{id}/claim: a new key and claim, served again, without the first owner's domain proof", async () => {
    clock.set(T0 + 4 * 3600);
    const { owner, agent } = await ownerWithAgent();
    const { owner: other } = await ownerWithAgent();
    const id = agent.agentId;
    await server.service.identity.recordProof({
      id: `prf_unclaim_${id}`,
      kind: "domain",
      ownerId: owner.ownerId,
      agentId: id,
      subject: "unclaimed.example.org",
      binding: "domain:unclaimed.example.org",
      evidence: {},
    });
    expect((await call("GET", `/v1/agents/${id}/proofs`)).json.proofs.map((p: { kind: string }) => p.kind)).to.deep.equal(["domain"]);
    // Another owner's claimed agent is still refused.
    expect((await call("POST", `/v1/agents/${id}/claim`, other.token, {})).status).to.equal(403);
    expect((await unclaim(id, owner.token)).status).to.equal(200);
    expect(await server.service.store.read.getProof(`prf_unclaim_${id}`)).to.include({ removedReason: "agent unclaimed" });

    clock.set(T0 + 5 * 3600);
    const claimed = await call("POST", `/v1/agents/${id}/claim`, other.token, {});
    expect(claimed.status).to.equal(200);
    expect(claimed.json).to.include({ agentId: id, ownerId: other.ownerId, claimedAt: "2026-11-02T15:00:00Z" });
    expect(claimed.json.claimId).to.not.equal(agent.claimId);
    expect((await checkIn(id, agent.agentKey, "old")).status).to.equal(401);
    await expectClaimed(other, id, claimed.json.agentKey, "new");
    expect((await call("GET", `/v1/agents/${id}/score`)).json.result.components.identity.value).to.equal(100);
    expect((await call("GET", `/v1/agents/${id}/proofs`)).json.proofs).to.deep.equal([]);
    expect((await call("GET", "/v1/owners/me", owner.token)).json.agents).to.not.include(id);
    // The first owner no longer has it: another owner's agent again.
    expect((await unclaim(id, owner.token)).status).to.equal(403);
  });
});
