import crypto from "node:crypto";
import { Resolver } from "node:dns/promises";
import { expect } from "chai";
import pino from "pino";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../app/server";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { startDnsServer, type TestDnsServer } from "../test-helpers/dns-server";

const OPERATOR_TOKEN = "vop_admin.operator-test-token-error-hints";

describe("error messages point to the fix (issue #31)", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let dns: TestDnsServer;
  const { call, ownerWithAgent } = apiClient(() => server.url);
  /** A raw request: status, headers and the parsed error. */
  const send = async (method: string, path: string, init: { token?: string; body?: unknown } = {}) => {
    const res = await fetch(server.url + path, {
      method,
      headers: {
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
        "idempotency-key": crypto.randomUUID(),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      error: (text ? JSON.parse(text) : {}).error as { code: string; message: string } | undefined,
    };
  };

  before(async () => {
    testDb = await createTestPgliteDb();
    dns = await startDnsServer();
    const resolver = new Resolver();
    resolver.setServers([dns.address]);
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      logger: pino({ level: "silent" }),
      ownerRecomputeWorker: false,
      proofSources: { resolveTxt: (n) => resolver.resolveTxt(n), sleep: async () => undefined, retry: { tries: 1, baseDelayMs: 1 } },
    });
  });
  after(async () => {
    await server.close();
    await dns.close();
    await testDb.drop();
  });

  it("names the field: a domain challenge without an agent says agentId, a wallet one with an agent says to leave agentId out", async () => {
    const { owner, agent } = await ownerWithAgent();
    const missing = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "domain", subject: "example.org" });
    expect(missing.status).to.equal(400);
    expect(missing.json.error).to.deep.equal({
      code: "proof_agent_required",
      message: "a domain proof belongs to one agent: name the agent (agentId)",
    });
    const named = await call("POST", "/v1/proofs/challenges", owner.token, {
      kind: "wallet",
      subject: privateKeyToAccount(generatePrivateKey()).address,
      agentId: agent.agentId,
    });
    expect(named.json.error).to.deep.equal({
      code: "proof_agent_not_allowed",
      message: "a wallet proof belongs to the owner and counts for all its agents: leave agentId out",
    });
  });

  it("tells an owner-level subject held by another owner (proof_bound_to_another_owner) from one this owner holds already (proof_already_proven)", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const prove = async (token: string) => {
      const challenge = (await call("POST", "/v1/proofs/challenges", token, { kind: "wallet", subject: wallet.address })).json;
      const signature = await wallet.signMessage({ message: challenge.message });
      return call("POST", "/v1/proofs", token, {
        challengeId: challenge.id,
        evidence: { address: wallet.address, signature, signatureType: "eip191" },
      });
    };
    const first = await ownerWithAgent();
    expect((await prove(first.owner.token)).status).to.equal(201);
    const again = await prove(first.owner.token);
    expect([again.status, again.json.error.code]).to.deep.equal([409, "proof_already_proven"]);
    expect(again.json.error.message).to.equal(
      `${wallet.address.toLowerCase()} is already proven by this owner: nothing to do; GET /v1/agents/{id}/proofs lists it`,
    );
    const other = await ownerWithAgent();
    const taken = await prove(other.owner.token);
    expect([taken.status, taken.json.error.code]).to.deep.equal([409, "proof_bound_to_another_owner"]);
    expect(taken.json.error.message).to.match(
      /^0x[0-9a-fA-F]{40} is already proven by another owner: it proves one owner at a time \(V6\), .*DELETE \/v1\/proofs\/\{id\}/,
    );
  });

  it("tells an agent-level subject held by another agent (proof_bound_to_another_agent) from one this agent holds already", async () => {
    const domain = "hints.example.org";
    const prove = async (token: string, agentId: string) => {
      const challenge = (await call("POST", "/v1/proofs/challenges", token, { kind: "domain", subject: domain, agentId })).json;
      dns.setTxt(`_vrai.${domain}`, [challenge.token]);
      return call("POST", "/v1/proofs", token, { challengeId: challenge.id, evidence: { domain, method: "dns" } });
    };
    const a = await ownerWithAgent();
    expect((await prove(a.owner.token, a.agent.agentId)).status).to.equal(201);
    const again = await prove(a.owner.token, a.agent.agentId);
    expect(again.json.error).to.deep.equal({
      code: "proof_already_proven",
      message: `${domain} is already proven by this agent (${a.agent.agentId}): nothing to do; GET /v1/agents/{id}/proofs lists it`,
    });
    const b = await ownerWithAgent();
    const taken = await prove(b.owner.token, b.agent.agentId);
    expect(taken.json.error.code).to.equal("proof_bound_to_another_agent");
    expect(taken.json.error.message).to.equal(
      `${domain} is already proven by another agent: it proves one agent at a time (V6), ` +
        "so that agent's owner must remove its proof (DELETE /v1/proofs/{id}) first",
    );
  });

  it(
    "says which credential was sent where another belongs: agent key for owner token, owner token for agent key, " +
      "another agent's key, either for an operator token",
    async () => {
      const { owner, agent } = await ownerWithAgent();
      const other = await ownerWithAgent();
      const asOwner = await send("GET", "/v1/owners/me", { token: agent.agentKey });
      expect(asOwner.status).to.equal(401);
      expect(asOwner.error?.message).to.equal(
        "the owner token is not valid: this is an agent key (va_…); this route takes the owner token (vo_…) that POST /v1/owners returned",
      );
      const asAgent = await send("POST", `/v1/agents/${agent.agentId}/checkins`, { token: owner.token, body: {} });
      expect(asAgent.status).to.equal(401);
      expect(asAgent.error?.message).to.equal(
        "the agent key is not valid for this agent: this is an owner token (vo_…); " +
          "this route takes the agent's key (va_…) that POST /v1/agents returned with its agentId",
      );
      const anotherAgent = await send("POST", `/v1/agents/${agent.agentId}/checkins`, { token: other.agent.agentKey, body: {} });
      expect(anotherAgent.error?.message).to.equal(
        `the agent key is not valid for this agent: this is the key of agent ${other.agent.agentId}, not of agent ${agent.agentId}`,
      );
      const asOperator = await send("GET", "/v1/operator/audit", { token: owner.token });
      expect(asOperator.status).to.equal(401);
      expect(asOperator.error?.message).to.equal(
        "the operator token is not valid: this is an owner token (vo_…); " +
          "this route takes an operator token (vop_…: OPERATOR_TOKEN, or vrai operator add; vrai dev keeps one in ./data/operator-token)",
      );
      const operatorAsOwner = await send("GET", "/v1/owners/me", { token: OPERATOR_TOKEN });
      expect(operatorAsOwner.error?.message).to.match(/this is an operator token \(vop_…\); this route takes the owner token/);
      // A credential of the right kind that does not hold says only that: nothing about a secret.
      const wrong = await send("GET", "/v1/owners/me", { token: `${owner.token}x` });
      expect(wrong.error).to.deep.equal({ code: "invalid_owner_token", message: "the owner token is not valid" });
    },
  );

  it("answers a known path asked with another method 405 with Allow, and names /v1 for an API path asked without it", async () => {
    const { agent } = await ownerWithAgent();
    const wrongMethod = await send("DELETE", `/v1/agents/${agent.agentId}/score`);
    expect(wrongMethod.status).to.equal(405);
    expect(wrongMethod.headers.get("allow")).to.equal("GET, HEAD, OPTIONS");
    expect(wrongMethod.error).to.deep.equal({
      code: "method_not_allowed",
      message: `DELETE /v1/agents/${agent.agentId}/score is not allowed: this path answers GET, HEAD, OPTIONS`,
    });
    const getOwners = await send("GET", "/v1/owners");
    expect([getOwners.status, getOwners.headers.get("allow")]).to.deep.equal([405, "POST, OPTIONS"]);
    // The agent page answers GET only; the API's agent routes are under /v1.
    const postPage = await send("POST", `/agents/${agent.agentId}`, { body: {} });
    expect(postPage.status).to.equal(405);
    expect(postPage.headers.get("allow")).to.equal("GET, HEAD, OPTIONS");

    const noV1 = await send("POST", "/owners", { body: {} });
    expect(noV1.status).to.equal(404);
    expect(noV1.error).to.deep.equal({
      code: "not_found",
      message: "no such route: the API is under /v1, did you mean /v1/owners (POST)?",
    });
    const noV1Score = await send("GET", `/agents/${agent.agentId}/score`);
    expect(noV1Score.error?.message).to.equal(`no such route: the API is under /v1, did you mean /v1/agents/${agent.agentId}/score (GET)?`);
    const unknown = await send("GET", "/v1/nothing-here");
    expect(unknown.status).to.equal(404);
    expect(unknown.error?.message).to.equal("no such route (the API is under /v1; /v1/openapi.json lists every route)");
    // What is declared is still answered by its route.
    expect((await send("GET", `/v1/agents/${agent.agentId}/score`)).status).to.equal(200);
    expect((await send("OPTIONS", "/v1/owners")).status).to.equal(204);
  });
});
