import { Resolver } from "node:dns/promises";
import { expect } from "chai";
import pino from "pino";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createManualClock } from "../service/clock";
import { apiClient } from "../test-helpers/api-client";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { startDnsServer, type TestDnsServer } from "../test-helpers/dns-server";
import { startHttpServer, type TestHttpServer } from "../test-helpers/http-server";
import { startApiServer, type ApiServer } from "../app/server";

const OPERATOR_TOKEN = "operator-test-token-proofs-0123";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const WALLET = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const OTHER = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");

for (const { name, create } of TEST_STORES) {
  describe(`identity proofs and schedules over HTTP on ${name}`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    let dns: TestDnsServer;
    /** The web on loopback: each domain's files under /<domain>/, and the GitHub API's gists under /gists/. */
    let web: TestHttpServer;
    const clock = createManualClock(T0);

    const { call, ownerWithAgent } = apiClient(() => server.url);
    const total = async (agentId: string) => (await call("GET", `/v1/agents/${agentId}/score`)).json.total as number;

    before(async () => {
      testDb = await create();
      dns = await startDnsServer();
      web = await startHttpServer();
      const resolver = new Resolver();
      resolver.setServers([dns.address]);
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock,
        logger: pino({ level: "silent" }),
        ownerRecomputeWorker: false,
        proofSources: {
          resolveTxt: (n) => resolver.resolveTxt(n),
          sleep: async () => undefined,
          retry: { tries: 3, baseDelayMs: 1 },
          wellKnownUrl: (domain) => `${web.url}/${domain}/.well-known/vrai.json`,
          settings: { GITHUB_API_BASE_URL: web.url },
          allowLoopbackLiteralsForTests: true,
        },
      });
    });
    after(async () => {
      await server.close();
      await dns.close();
      await web.close();
      await testDb.drop();
    });

    it("verifies a wallet proof signed with EIP-191, counts it for every agent of the owner, and uses the challenge once", async () => {
      const { owner, agent } = await ownerWithAgent();
      const second = (await call("POST", "/v1/agents", owner.token, {})).json;
      const challenge = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "wallet", subject: WALLET.address });
      expect(challenge.status).to.equal(201);
      const signature = await WALLET.signMessage({ message: challenge.json.message });
      const evidence = { address: WALLET.address, signature, signatureType: "eip191" };
      const byAnother = await OTHER.signMessage({ message: challenge.json.message });
      const forged = await call("POST", "/v1/proofs", owner.token, {
        challengeId: challenge.json.id,
        evidence: { ...evidence, signature: byAnother },
      });
      expect(forged.status).to.be.oneOf([400, 422]);
      expect(await total(agent.agentId)).to.equal(200);
      const ok = await call("POST", "/v1/proofs", owner.token, { challengeId: challenge.json.id, evidence });
      expect(ok.status).to.equal(201);
      expect(ok.json.kind).to.equal("wallet");
      // The owner's agents are recomputed in the background (bounded-storage.test.ts): here, drained by hand.
      await server.service.ownerRecomputes.drain();
      expect(await total(agent.agentId)).to.equal(230);
      expect(await total(second.agentId)).to.equal(230);
      const reused = await call("POST", "/v1/proofs", owner.token, { challengeId: challenge.json.id, evidence });
      expect(reused.status).to.equal(409);
      const listed = await call("GET", `/v1/agents/${second.agentId}/proofs`);
      expect(listed.json.proofs.map((p: any) => p.kind)).to.deep.equal(["wallet"]);
    });

    it("answers each kind's challenge with exactly what to publish or sign, and following it proves the kind (issue #31)", async () => {
      const { owner, agent } = await ownerWithAgent();
      const domain = await call("POST", "/v1/proofs/challenges", owner.token, {
        kind: "domain",
        subject: "Followed.Example.org",
        agentId: agent.agentId,
      });
      expect(domain.status).to.equal(201);
      const { publish, sign, evidence, steps } = domain.json.instructions;
      expect(publish).to.deep.equal([
        { type: "dns-txt", name: "_vrai.followed.example.org", value: domain.json.token },
        {
          type: "https-file",
          name: "https://followed.example.org/.well-known/vrai.json",
          value: JSON.stringify({ vrai: [domain.json.token] }),
        },
      ]);
      expect([sign, evidence, steps.length > 0]).to.deep.equal([null, { domain: "followed.example.org" }, true]);
      // Done as told: the TXT record as published, the evidence as shown.
      dns.setTxt(publish[0].name, [publish[0].value]);
      expect((await call("POST", "/v1/proofs", owner.token, { challengeId: domain.json.id, evidence })).status).to.equal(201);

      const fresh = privateKeyToAccount(generatePrivateKey());
      const wallet = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "wallet", subject: fresh.address });
      expect(wallet.json.instructions.publish).to.deep.equal([]);
      expect(wallet.json.instructions.sign).to.deep.equal({ message: wallet.json.message, by: fresh.address.toLowerCase() });
      const filled = {
        ...wallet.json.instructions.evidence,
        signature: await fresh.signMessage({ message: wallet.json.instructions.sign.message }),
      };
      expect((await call("POST", "/v1/proofs", owner.token, { challengeId: wallet.json.id, evidence: filled })).status).to.equal(201);

      const github = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "OctoCat" });
      expect(github.json.instructions.publish).to.deep.equal([
        { type: "gist", name: "a public gist of octocat", value: github.json.token },
      ]);
      expect(github.json.instructions.evidence).to.deep.equal({ username: "octocat", gistId: "<the gist id>" });
      expect(github.json).to.not.have.property("typedData");
      expect(wallet.json.typedData.primaryType).to.equal("VraiProof");
    });

    it("follows the domain's .well-known file and the GitHub gist as their challenges say, through to verified proofs that count (issue #31)", async () => {
      const { owner, agent } = await ownerWithAgent();
      const before = await total(agent.agentId);
      /** The evidence shown, with each value to fill in (in angle brackets) filled from `given`, and only those. */
      const filled = (shown: Record<string, string | number>, given: Record<string, string>) => {
        expect(Object.keys(shown).filter((k) => /^<.+>$/.test(String(shown[k])))).to.deep.equal(Object.keys(given));
        return { ...shown, ...given };
      };

      const domain = await call("POST", "/v1/proofs/challenges", owner.token, {
        kind: "domain",
        subject: "WellKnown.Example.org",
        agentId: agent.agentId,
      });
      const file = domain.json.instructions.publish.find((p: { type: string }) => p.type === "https-file");
      // Published where it says, the body exactly as given (no TXT record: DNS finds none).
      const url = new URL(file.name);
      expect([url.protocol, url.host, url.pathname]).to.deep.equal(["https:", "wellknown.example.org", "/.well-known/vrai.json"]);
      web.route("GET", `/${url.host}${url.pathname}`, { body: file.value });
      const provedDomain = await call("POST", "/v1/proofs", owner.token, {
        challengeId: domain.json.id,
        evidence: filled(domain.json.instructions.evidence, {}),
      });
      expect(provedDomain.status, JSON.stringify(provedDomain.json)).to.equal(201);
      expect(provedDomain.json).to.include({ kind: "domain", subject: "wellknown.example.org" });
      expect(web.requestsTo(`/${url.host}${url.pathname}`)).to.have.length(1);

      const github = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "OctoCat" });
      const [gist] = github.json.instructions.publish;
      expect(gist.type).to.equal("gist");
      // The public gist as GitHub's API serves it: its text contains what the challenge says to publish.
      const gistId = "5e1f0c2b9a7d4e3f8a6b";
      web.route("GET", `/gists/${gistId}`, {
        body: {
          id: gistId,
          public: true,
          owner: { login: "OctoCat" },
          files: { "vrai.txt": { filename: "vrai.txt", content: `${gist.value}\n`, truncated: false } },
        },
      });
      const provedGithub = await call("POST", "/v1/proofs", owner.token, {
        challengeId: github.json.id,
        evidence: filled(github.json.instructions.evidence, { gistId }),
      });
      expect(provedGithub.status, JSON.stringify(provedGithub.json)).to.equal(201);
      expect(provedGithub.json).to.include({ kind: "github", subject: "octocat" });
      expect(web.requestsTo(`/gists/${gistId}`)).to.have.length(1);

      await server.service.ownerRecomputes.drain();
      const listed = await call("GET", `/v1/agents/${agent.agentId}/proofs`);
      expect(listed.json.proofs.map((p: { kind: string }) => p.kind).sort()).to.deep.equal(["domain", "github"]);
      // V6, method 0.2: domain 40, GitHub 30.
      expect(await total(agent.agentId)).to.equal(before + 40 + 30);
    });

    it("refuses evidence of no kind with a 400 naming the field of the closest kind, and evidence of another kind than its challenge's", async () => {
      const { owner } = await ownerWithAgent();
      const wallet = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "wallet", subject: WALLET.address });
      const partial = await call("POST", "/v1/proofs", owner.token, { challengeId: wallet.json.id, evidence: { username: "octocat" } });
      expect([partial.status, partial.json.error.code, partial.json.error.message]).to.deep.equal([
        400,
        "invalid_request",
        "body.evidence: as github evidence, gistId: Invalid input: expected string, received undefined",
      ]);
      const otherKind = await call("POST", "/v1/proofs", owner.token, {
        challengeId: wallet.json.id,
        evidence: { username: "octocat", gistId: "aa5a315d61ae9438b18d" },
      });
      expect([otherKind.status, otherKind.json.error.code]).to.deep.equal([400, "proof_evidence_invalid"]);
      expect(otherKind.json.error.message).to.match(/^invalid wallet evidence: /);
    });

    it("refuses a challenge answered after it expired, and another owner's challenge", async () => {
      const { owner } = await ownerWithAgent();
      const other = (await call("POST", "/v1/owners", undefined, {})).json;
      const challenge = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "wallet", subject: WALLET.address });
      const signature = await WALLET.signMessage({ message: challenge.json.message });
      const evidence = { address: WALLET.address, signature, signatureType: "eip191" };
      expect((await call("POST", "/v1/proofs", other.token, { challengeId: challenge.json.id, evidence })).status).to.equal(404);
      clock.set(T0 + 3600);
      const late = await call("POST", "/v1/proofs", owner.token, { challengeId: challenge.json.id, evidence });
      expect(late.status).to.equal(422);
      expect(late.json.error.code).to.equal("proof_challenge_expired");
      clock.set(T0);
    });

    it("binds a domain to one agent at a time and removes it after two failed weekly checks (V6)", async () => {
      clock.set(T0);
      const a = await ownerWithAgent();
      const b = await ownerWithAgent();
      const challenge = await call("POST", "/v1/proofs/challenges", a.owner.token, {
        kind: "domain",
        subject: "agents.example.org",
        agentId: a.agent.agentId,
      });
      expect(challenge.status).to.equal(201);
      dns.setTxt("_vrai.agents.example.org", [challenge.json.token]);
      const proved = await call("POST", "/v1/proofs", a.owner.token, {
        challengeId: challenge.json.id,
        evidence: { domain: "agents.example.org", method: "dns" },
      });
      expect(proved.status).to.equal(201);
      expect(await total(a.agent.agentId)).to.equal(240);

      const rival = await call("POST", "/v1/proofs/challenges", b.owner.token, {
        kind: "domain",
        subject: "agents.example.org",
        agentId: b.agent.agentId,
      });
      dns.setTxt("_vrai.agents.example.org", [rival.json.token]);
      const taken = await call("POST", "/v1/proofs", b.owner.token, {
        challengeId: rival.json.id,
        evidence: { domain: "agents.example.org", method: "dns" },
      });
      expect(taken.status).to.equal(409);
      expect(taken.json.error.code).to.equal("proof_bound_to_another_agent");

      // The record now holds another token: the weekly check fails; twice in a row removes the proof.
      clock.set(T0 + 7 * 86400);
      await server.proofs.recheckDue();
      expect(await total(a.agent.agentId)).to.equal(240);
      clock.set(T0 + 14 * 86400);
      await server.proofs.recheckDue();
      const listed = await call("GET", `/v1/agents/${a.agent.agentId}/proofs`);
      expect(listed.json.proofs).to.deep.equal([]);
      expect(await total(a.agent.agentId)).to.equal(200);
      clock.set(T0);
    });

    it("computes the daily scores of days missed while the service was down (V9)", async () => {
      clock.set(T0);
      const { agent } = await ownerWithAgent();
      expect(await server.scheduler.catchUpDaily()).to.deep.equal(["2026-11-02"]);
      clock.set(T0 + 3 * 86400);
      expect(await server.scheduler.catchUpDaily()).to.deep.equal(["2026-11-03", "2026-11-04", "2026-11-05"]);
      const history = await call("GET", `/v1/agents/${agent.agentId}/scores?from=2026-11-01&to=2026-11-30`);
      expect(history.json.scores.map((s: any) => s.day)).to.deep.equal(["2026-11-03", "2026-11-04", "2026-11-05"]);
      for (const s of history.json.scores) expect(s.at).to.equal(`${s.day}T00:00:00Z`);
      expect(await server.scheduler.catchUpDaily()).to.deep.equal([]);
      clock.set(T0);
    });
  });
}
