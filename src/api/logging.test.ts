import { expect } from "chai";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { eventually } from "../test-helpers/eventually";
import { capturedLogger } from "../test-helpers/logs";
import { startApiServer, type ApiServer } from "../app/server";

const OPERATOR_TOKEN = "operator-token-never-logged-0123456789";

describe("structured logs", () => {
  let testDb: TestDb;
  let server: ApiServer;
  const logs = capturedLogger("trace");

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: logs.logger });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it("logs every request as JSON with no token, key or idempotency key in them", async () => {
    const post = (path: string, token: string, headers: Record<string, string> = {}) =>
      fetch(server.url + path, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
        body: "{}",
      });
    const owner = (await (
      await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    ).json()) as { token: string };
    const agent = (await (await post("/v1/agents", owner.token)).json()) as { agentId: string; agentKey: string };
    expect(
      (await post(`/v1/agents/${agent.agentId}/checkins`, agent.agentKey, { "idempotency-key": "secret-idem-key-42" })).status,
    ).to.equal(201);
    expect((await post("/v1/operator/penalties", OPERATOR_TOKEN)).status).to.equal(400);
    await eventually(() => logs.entries("request").length >= 4, "the four requests' log lines");
    const entries = logs.entries();
    expect(entries.filter((e) => e.msg === "request").map((e) => e.route)).to.include("/v1/agents/:id/checkins");
    for (const secret of [owner.token, agent.agentKey, OPERATOR_TOKEN, "secret-idem-key-42"]) expect(logs.text()).not.to.contain(secret);
  });
});
