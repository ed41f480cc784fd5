import { expect } from "chai";
import { promises as dns } from "node:dns";
import pino from "pino";
import type { PublicClient } from "viem";
import { startApiServer, type ApiServer } from "../app/server";
import { DAY_S } from "../method";
import { createManualClock } from "../service/clock";
import { MAX_REGISTRATION_FILE_BYTES, REGISTRATION_V1_TYPE } from "../service/proofs/registration-file";
import { apiClient } from "../test-helpers/api-client";
import { startTestChain, type DeployedContract, type TestChain } from "../test-helpers/chain";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { startHttpServer, type TestHttpServer } from "../test-helpers/http-server";

const OPERATOR_TOKEN = "operator-test-token-erc8004-registration";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
/** Where the tests' registration files are published: `https://files.example.com/<path>`, served by the test server on 127.0.0.1. */
const FILES = "https://files.example.com/";
const HOSTILE = "<script>alert(1)</script>";
const FILE = {
  type: REGISTRATION_V1_TYPE,
  name: `Research Agent ${HOSTILE}`,
  description: "Finds and summarises papers.",
  image: "https://files.example.com/logo.png",
  services: [{ name: "MCP", endpoint: "https://agent.example.org/mcp", version: "2025-06-18" }],
  active: true,
  supportedTrust: ["reputation"],
};

for (const { name, create } of TEST_STORES) {
  describe(`ERC-8004 registration files and endpoint domains over HTTP on ${name} (issue #27)`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    let chain: TestChain;
    let registry: DeployedContract;
    /** The web on loopback: registration files under /, each domain's files under /<domain>/. */
    let web: TestHttpServer;
    const clock = createManualClock(T0);
    /** Every name the service resolved: each resolves to a private address, so it connects only to the test server's literal. */
    const resolved: string[] = [];

    const { call, ownerWithAgent } = apiClient(() => server.url);
    const total = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}/score`)).json.total as number;
    const selfDeclared = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}`)).json.selfDeclared;
    const page = async (path: string) => (await fetch(`${server.url}${path}`)).text();

    /** The API on the test's database and chain, reading proofs' sources through the test web server; `sources` on top. */
    const startServer = (sources: { httpTimeoutMs?: number; submissionTimeoutMs?: number } = {}) =>
      startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock,
        logger: pino({ level: "silent" }),
        ownerRecomputeWorker: false,
        proofSources: {
          publicClientFor: (id) => (id === chain.chain.id ? (chain.publicClient as PublicClient) : undefined),
          resolveAddresses: async (hostname) => {
            resolved.push(hostname);
            return [{ address: "10.0.0.5", family: 4 }];
          },
          registrationFileUrl: (uri) => uri.replace(FILES, `${web.url}/`),
          wellKnownUrl: (domain) => `${web.url}/${domain}/.well-known/vrai.json`,
          agentRegistrationUrl: (domain) => `${web.url}/${domain}/.well-known/agent-registration.json`,
          // No TXT record anywhere, and no query leaves the process.
          resolveTxt: async (hostname) => {
            throw Object.assign(new Error(`queryTxt ENOTFOUND ${hostname}`), { code: dns.NOTFOUND });
          },
          allowLoopbackLiteralsForTests: true,
          sleep: async () => undefined,
          retry: { tries: 3, baseDelayMs: 1 },
          httpTimeoutMs: 300,
          ...sources,
        },
      });

    before(async () => {
      testDb = await create();
      chain = await startTestChain();
      registry = await chain.deployReferenceIdentity();
      web = await startHttpServer();
      server = await startServer();
    });
    after(async () => {
      await server.close();
      await web.close();
      await chain.close();
      await testDb.drop();
    });

    /** A token of the reference registry, registered by test account `wallet` with agentURI `uri`. */
    async function registerToken(uri: string, wallet = 1): Promise<bigint> {
      const hash = await chain.walletClients[wallet].writeContract({
        address: registry.address,
        abi: registry.abi,
        functionName: "register",
        args: [uri],
      });
      const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
      const registered = receipt.logs.find(
        (log) => log.topics.length === 3 && log.address.toLowerCase() === registry.address.toLowerCase(),
      );
      if (!registered?.topics[1]) throw new Error("no Registered event");
      return BigInt(registered.topics[1]);
    }

    /** The agent proves the ERC-8004 identity of a new token whose agentURI is `uri`, through the API, as its challenge says. */
    async function proveIdentity(owner: { token: string }, agentId: string, uri: string) {
      const tokenId = await registerToken(uri);
      const subject = `${chain.chain.id}:${registry.address.toLowerCase()}:${tokenId}`;
      const challenge = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "erc8004", subject, agentId });
      expect(challenge.status).to.equal(201);
      const signature = await chain.accounts[1].signMessage({ message: challenge.json.message });
      const evidence = { ...challenge.json.instructions.evidence, signature };
      const proof = await call("POST", "/v1/proofs", owner.token, { challengeId: challenge.json.id, evidence });
      expect(proof.status, JSON.stringify(proof.json)).to.equal(201);
      return { proofId: proof.json.id as string, tokenId, subject };
    }

    it("reads the file when the ERC-8004 proof is made and shows it as the agent's own word: API, agent page, directory", async () => {
      const { owner, agent } = await ownerWithAgent();
      web.route("GET", "/agent-1.json", { body: { ...FILE, custom: { kept: true } } });
      const { subject } = await proveIdentity(owner, agent.agentId, `${FILES}agent-1.json`);

      const answer = await call("GET", `/v1/agents/${agent.agentId}`);
      expect(answer.status).to.equal(200);
      expect(answer.json).to.deep.include({ agentId: agent.agentId, name: null });
      expect(answer.json.selfDeclared).to.deep.equal({
        source: "erc8004-registration-file",
        note: "declared by the agent in its ERC-8004 registration file: not verified by Vrai, and no part of any score",
        identity: subject,
        uri: `${FILES}agent-1.json`,
        readAt: "2026-11-02T10:00:00Z",
        status: "read",
        reason: null,
        name: FILE.name,
        description: FILE.description,
        image: FILE.image,
        services: FILE.services,
      });
      // Claim 100 + ERC-8004 50 + integrity 100: the file changes nothing.
      expect(await total(agent.agentId)).to.equal(250);

      const agentPage = await page(`/agents/${agent.agentId}`);
      expect(agentPage).to.contain('<dd id="registered-name">Research Agent &lt;script&gt;alert(1)&lt;/script&gt;</dd>');
      expect(agentPage).not.to.contain(HOSTILE);
      expect(agentPage).to.contain("https://files.example.com/logo.png</code> (not shown: this page loads no image from other sites)");

      const directory = await call("GET", `/v1/agents?q=${agent.agentId}`);
      expect(directory.json.agents.map((a: { registeredName: string | null }) => a.registeredName)).to.deep.equal([FILE.name]);
      const directoryPage = await page(`/agents?q=${agent.agentId}`);
      expect(directoryPage).to.contain("Registered as “Research Agent &lt;script&gt;alert(1)&lt;/script&gt;”").and.not.contain(HOSTILE);
      // The file was read through the test server: the name files.example.com was never resolved.
      expect(resolved).not.to.include("files.example.com");
    });

    it("refuses a file too big, slow, not JSON, of the wrong type or at an address that is not public: the reason stored, no score changed", async () => {
      web.route("GET", "/big.json", { body: JSON.stringify({ ...FILE, description: "x".repeat(MAX_REGISTRATION_FILE_BYTES) }) });
      web.route("GET", "/slow.json", { hang: true });
      web.route("GET", "/page.html", { body: "<html>an agent</html>" });
      web.route("GET", "/card.json", { body: { ...FILE, type: "https://example.org/agent-card" } });
      web.route("GET", "/typed.json", { body: { ...FILE, services: [{ name: "MCP", endpoint: 8080 }] } });
      const cases = [
        [`${FILES}big.json`, `is larger than ${MAX_REGISTRATION_FILE_BYTES} bytes`],
        [`${FILES}slow.json`, "timed out after 300 ms (gave up after 3 attempts)"],
        [`${FILES}page.html`, "page.html is not JSON ("],
        [`${FILES}card.json`, 'is not a registration-v1 file: its type is "https://example.org/agent-card"'],
        [`${FILES}typed.json`, "is not a valid registration-v1 file: services.0.endpoint: Invalid input: expected string, received number"],
        ["https://inside.example.com/agent.json", "inside.example.com is not reachable"],
      ] as const;
      const requests = web.requests.length;
      for (const [uri, reason] of cases) {
        const { owner, agent } = await ownerWithAgent();
        const { proofId } = await proveIdentity(owner, agent.agentId, uri);
        const declared = await selfDeclared(agent.agentId);
        expect(declared, uri).to.include({ status: "refused", uri, name: null, description: null, image: null });
        expect(declared.reason, uri).to.include(reason);
        expect(declared.services, uri).to.deep.equal([]);
        expect(await total(agent.agentId), uri).to.equal(250);
        const { rows } = await testDb.db.query<{ status: string; reason: string }>(
          "SELECT status, reason FROM erc8004_registration_files WHERE proof_id = $1",
          [proofId],
        );
        expect(rows, uri).to.deep.equal([{ status: "refused", reason: declared.reason }]);
        expect((await page(`/agents/${agent.agentId}`)).includes('data-status="refused"'), uri).to.equal(true);
      }
      // Big, slow (three tries), not JSON, of the wrong type, of the wrong shape; the private address never.
      expect(web.requests.length - requests).to.equal(7);
      expect(resolved).to.include("inside.example.com");
    });

    it("gives the registration file only the submission's time (PROOF_SUBMISSION_TIMEOUT_MS) when the proof is made, then records the proof", async () => {
      // Each read of a file is given 60 s here, and this one never answers: only the submission's 2 s can end the wait.
      web.route("GET", "/never.json", { hang: true });
      const { owner, agent } = await ownerWithAgent();
      const usual = server;
      server = await startServer({ httpTimeoutMs: 60_000, submissionTimeoutMs: 2_000 });
      try {
        await proveIdentity(owner, agent.agentId, `${FILES}never.json`);
        const declared = await selfDeclared(agent.agentId);
        expect(declared).to.include({ status: "refused", uri: `${FILES}never.json`, name: null });
        expect(declared.reason).to.include("not read within the time a proof's submission has (PROOF_SUBMISSION_TIMEOUT_MS)");
        expect(await total(agent.agentId)).to.equal(250);
      } finally {
        await server.close();
        server = usual;
      }
    });

    it("keeps only the URI of an ipfs:// file (no gateway configured), and of none when the token has no agentURI", async () => {
      const { owner, agent } = await ownerWithAgent();
      await proveIdentity(owner, agent.agentId, "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/agent.json");
      expect(await selfDeclared(agent.agentId)).to.include({
        status: "unread",
        uri: "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/agent.json",
        reason: "ipfs:// agentURIs are read through an IPFS gateway, and none is configured (ERC8004_IPFS_GATEWAY)",
      });
      expect(await page(`/agents/${agent.agentId}`)).to.contain(
        "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/agent.json</code> was not read",
      );
    });

    it("reads it again when the agentURI changes (URIUpdated) and at each weekly re-check; shows nothing once the proof goes", async () => {
      const { owner, agent } = await ownerWithAgent();
      web.route("GET", "/moving.json", { body: { ...FILE, name: "First" } });
      const { proofId, tokenId } = await proveIdentity(owner, agent.agentId, `${FILES}moving.json`);
      expect((await selfDeclared(agent.agentId)).name).to.equal("First");

      // The owner points the token at another file; the indexer reports the identity registry's URIUpdated.
      web.route("GET", "/moved.json", { body: { ...FILE, name: "Second" } });
      const hash = await chain.walletClients[1].writeContract({
        address: registry.address,
        abi: registry.abi,
        functionName: "setAgentURI",
        args: [tokenId, `${FILES}moved.json`],
      });
      await chain.publicClient.waitForTransactionReceipt({ hash });
      clock.set(T0 + 3600);
      expect(await server.registrations.refreshIdentity(chain.chain.id, registry.address, tokenId)).to.equal(1);
      expect(await selfDeclared(agent.agentId)).to.include({ name: "Second", uri: `${FILES}moved.json`, readAt: "2026-11-02T11:00:00Z" });

      // The file changes where it is; the weekly re-check of the ERC-8004 proof reads it again.
      web.route("GET", "/moved.json", { body: { ...FILE, name: "Third" } });
      clock.set(T0 + 7 * DAY_S);
      await server.proofs.recheckDue();
      expect(await selfDeclared(agent.agentId)).to.include({ name: "Third", readAt: "2026-11-09T10:00:00Z" });

      expect((await call("DELETE", `/v1/proofs/${proofId}`, owner.token)).status).to.equal(200);
      expect(await selfDeclared(agent.agentId)).to.equal(null);
      expect(await page(`/agents/${agent.agentId}`)).not.to.contain('id="self-declared"');
      clock.set(T0);
    });

    describe("a domain proven by the standard's endpoint-domain verification", () => {
      const fileOf = (domain: string) => `/${domain}/.well-known/agent-registration.json`;
      /** An owner's new agent holding the ERC-8004 identity of a token whose registration file is `FILE` at `/<path>`. */
      async function agentWithIdentity(path: string) {
        const { owner, agent } = await ownerWithAgent();
        web.route("GET", `/${path}`, { body: FILE });
        return { owner, agent, erc8004: await proveIdentity(owner, agent.agentId, `${FILES}${path}`) };
      }
      const domainChallenge = (owner: { token: string }, agentId: string, subject: string) =>
        call("POST", "/v1/proofs/challenges", owner.token, { kind: "domain", subject, agentId });

      it("is asked for as the challenge says, counts as any domain proof (V6: 40), and goes with the ERC-8004 proof", async () => {
        const { owner, agent, erc8004 } = await agentWithIdentity("endpoint.json");
        const challenge = await domainChallenge(owner, agent.agentId, "Endpoint.Example.org");
        expect(challenge.status).to.equal(201);
        const registrations = [
          { agentRegistry: `eip155:${chain.chain.id}:${registry.address.toLowerCase()}`, agentId: Number(erc8004.tokenId) },
        ];
        expect(challenge.json.instructions.publish[2]).to.deep.equal({
          type: "https-file",
          name: "https://endpoint.example.org/.well-known/agent-registration.json",
          value: JSON.stringify({ registrations }),
        });
        // Done as told: the file as published, the evidence as shown (DNS and vrai.json have nothing: it is tried third).
        web.route("GET", fileOf("endpoint.example.org"), { body: challenge.json.instructions.publish[2].value });
        const proved = await call("POST", "/v1/proofs", owner.token, {
          challengeId: challenge.json.id,
          evidence: challenge.json.instructions.evidence,
        });
        expect(proved.status, JSON.stringify(proved.json)).to.equal(201);
        expect(await total(agent.agentId)).to.equal(290);

        const removed = await call("DELETE", `/v1/proofs/${erc8004.proofId}`, owner.token);
        expect(removed.status).to.equal(200);
        const { proofs } = (await call("GET", `/v1/agents/${agent.agentId}/proofs`)).json;
        expect(proofs).to.deep.equal([]);
        const { rows } = await testDb.db.query<{ removed_reason: string }>("SELECT removed_reason FROM proofs WHERE id = $1", [
          proved.json.id,
        ]);
        expect(rows[0].removed_reason).to.equal(
          `the ERC-8004 identity proof it rests on (${erc8004.proofId}) was removed: removed by its owner`,
        );
        expect(await total(agent.agentId)).to.equal(200);
      });

      it("is re-checked weekly like any domain proof, and removed after two failed checks in a row", async () => {
        const { owner, agent, erc8004 } = await agentWithIdentity("weekly.json");
        const challenge = await domainChallenge(owner, agent.agentId, "weekly.example.org");
        web.route("GET", fileOf("weekly.example.org"), { body: challenge.json.instructions.publish[2].value });
        const evidence = { domain: "weekly.example.org", method: "agent-registration" };
        const proved = await call("POST", "/v1/proofs", owner.token, { challengeId: challenge.json.id, evidence });
        expect(proved.status).to.equal(201);
        expect(await total(agent.agentId)).to.equal(290);

        // The domain stops listing the identity: one failed check keeps it, the second removes it (V6).
        web.route("GET", fileOf("weekly.example.org"), { body: { registrations: [] } });
        clock.set(T0 + 7 * DAY_S);
        await server.proofs.recheckDue();
        const kinds = (await call("GET", `/v1/agents/${agent.agentId}/proofs`)).json.proofs.map((p: { kind: string }) => p.kind);
        expect(kinds.sort()).to.deep.equal(["domain", "erc8004"]);
        clock.set(T0 + 14 * DAY_S);
        await server.proofs.recheckDue();
        const { rows } = await testDb.db.query<{ removed_reason: string }>("SELECT removed_reason FROM proofs WHERE id = $1", [
          proved.json.id,
        ]);
        expect(rows[0].removed_reason).to.equal("failed two checks in a row");
        expect(await total(agent.agentId)).to.equal(250);
        expect((await call("GET", `/v1/agents/${agent.agentId}/proofs`)).json.proofs.map((p: { id: string }) => p.id)).to.deep.equal([
          erc8004.proofId,
        ]);
        clock.set(T0);
      });

      it("answers bad input with a 4xx JSON error naming the problem, and changes nothing", async () => {
        const { owner, agent } = await ownerWithAgent();
        const challenge = await domainChallenge(owner, agent.agentId, "bad.example.org");
        // Without an ERC-8004 proof the challenge offers no such file, and the method is refused.
        expect(challenge.json.instructions.publish.map((p: { name: string }) => p.name)).to.deep.equal([
          "_vrai.bad.example.org",
          "https://bad.example.org/.well-known/vrai.json",
        ]);
        const submit = (evidence: unknown) => call("POST", "/v1/proofs", owner.token, { challengeId: challenge.json.id, evidence });
        const noIdentity = await submit({ domain: "bad.example.org", method: "agent-registration" });
        expect([noIdentity.status, noIdentity.json.error.code]).to.deep.equal([422, "proof_erc8004_required"]);
        const unknownMethod = await submit({ domain: "bad.example.org", method: "endpoint" });
        expect(unknownMethod.status).to.equal(400);
        expect(unknownMethod.json.error.message).to.include("method").and.include("agent-registration");

        web.route("GET", "/bad.json", { body: FILE });
        await proveIdentity(owner, agent.agentId, `${FILES}bad.json`);
        web.route("GET", fileOf("bad.example.org"), {
          body: { registrations: [{ agentRegistry: "eip155:1:0x0000000000000000000000000000000000000001", agentId: 1 }] },
        });
        const other = await submit({ domain: "bad.example.org", method: "agent-registration" });
        expect([other.status, other.json.error.code]).to.deep.equal([422, "proof_registration_missing"]);
        expect(other.json.error.message).to.include(`eip155:${chain.chain.id}:${registry.address.toLowerCase()}`);
        web.route("GET", fileOf("bad.example.org"), { body: "<html></html>" });
        const notJson = await submit({ domain: "bad.example.org", method: "agent-registration" });
        expect([notJson.status, notJson.json.error.code]).to.deep.equal([422, "proof_well_known_invalid"]);
        expect(await total(agent.agentId)).to.equal(250);

        for (const path of ["/v1/agents/agt_nobody", "/v1/agents/%3Cb%3E"]) {
          const answer = await call("GET", path);
          expect(answer.status, path).to.be.oneOf([400, 404]);
          expect(Object.keys(answer.json), path).to.deep.equal(["error"]);
        }
        expect((await call("GET", "/v1/agents/agt_nobody")).json.error.code).to.equal("agent_not_found");
      });
    });
  });
}
