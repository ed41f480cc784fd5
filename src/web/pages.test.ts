import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const OPERATOR_TOKEN = "operator-test-token-0123456789";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z

describe("GET /agents/:id on PGlite", function () {
  let testDb: TestDb;
  let server: ApiServer;

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, clock: createManualClock(T0), logger: pino({ level: "silent" }) });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  async function claimAgent(name: string): Promise<string> {
    const owner = await (await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json();
    const res = await fetch(`${server.url}/v1/agents`, {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` }, body: JSON.stringify({ name }),
    });
    return (await res.json()).agentId;
  }

  it("serves the page of a claimed agent as HTML that allows no script", async () => {
    const agentId = await claimAgent("route agent");
    const res = await fetch(`${server.url}/agents/${agentId}`);
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).to.contain("default-src 'none'");
    const page = await res.text();
    expect(page).to.contain("<h1>route agent</h1>");
    expect(page).to.contain('<p class="total" id="total">200</p>');
  });

  it("answers an unknown agent with a 404 HTML page saying so", async () => {
    const res = await fetch(`${server.url}/agents/agt_nobody`);
    expect(res.status).to.equal(404);
    expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
    const page = await res.text();
    expect(page).to.contain("<h1>Agent not found</h1>");
    expect(page).to.contain("Vrai has no agent with the id <code>agt_nobody</code>.");
  });

  it("answers an invalid id with a 404 HTML page, the id escaped", async () => {
    const res = await fetch(`${server.url}/agents/${encodeURIComponent("<img src=x onerror=alert(1)>")}`);
    expect(res.status).to.equal(404);
    expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
    const page = await res.text();
    expect(page).to.contain("<code>&lt;img src=x onerror=alert(1)&gt;</code> is not a valid agent id");
    expect(page).not.to.contain("<img");
  });

  it("says so when the agent has no score yet", async () => {
    const owner = await server.service.accounts.createOwner();
    await server.service.store.transaction((tx) =>
      tx.insertAgent({ id: "agt_unscored", name: null, ownerId: owner.ownerId, claimId: 0, claimedAt: 0, keyHash: "", last: null, createdAt: T0 }),
    );
    const res = await fetch(`${server.url}/agents/agt_unscored`);
    expect(res.status).to.equal(200);
    const page = await res.text();
    expect(page).to.contain("<h2 id=\"score-heading\">No score yet</h2>");
    expect(page).not.to.contain('id="total"');
  });

  it("leaves the API's JSON 404 for other paths as it was", async () => {
    const res = await fetch(`${server.url}/agents`);
    expect(res.status).to.equal(404);
    expect(await res.json()).to.deep.equal({ error: { code: "not_found", message: "no such route" } });
  });
});
