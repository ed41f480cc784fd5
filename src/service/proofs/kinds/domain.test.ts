import { expect } from "chai";
import { promises as dns } from "node:dns";
import { startDnsServer, type TestDnsServer } from "../../../test-helpers/dns-server";
import { startHttpServer, type TestHttpServer } from "../../../test-helpers/http-server";
import { domain as domainKind, normalizeDomain } from "./domain";
import { challengeFor, expectProofError, expectThrowsProofError, NOW, recordingSleep } from "../test-support";
import { createProofVerifier } from "../verifiers";
import type { ProofVerifierDeps } from "../types";

describe("domain proofs (V6)", () => {
  let dnsServer: TestDnsServer;
  let web: TestHttpServer;
  let resolver: dns.Resolver;
  before(async () => {
    dnsServer = await startDnsServer();
    web = await startHttpServer();
    // A real resolver, asking only the local server, once, with a short timeout (for the 'drop' case).
    resolver = new dns.Resolver({ timeout: 200, tries: 1 });
    resolver.setServers([dnsServer.address]);
  });
  after(async () => {
    await dnsServer.close();
    await web.close();
  });

  const sleep = recordingSleep();
  const verifier = (overrides: Partial<ProofVerifierDeps> = {}) =>
    createProofVerifier({
      now: () => NOW + 60,
      resolveTxt: (name) => resolver.resolveTxt(name),
      wellKnownUrl: (domain) => `${web.url}/${domain}/.well-known/vrai.json`,
      agentRegistrationUrl: (domain) => `${web.url}/${domain}/.well-known/agent-registration.json`,
      // The test server listens on 127.0.0.1 (test traffic stays on loopback).
      allowLoopbackLiteralsForTests: true,
      sleep,
      retry: { tries: 3, baseDelayMs: 10 },
      httpTimeoutMs: 500,
      ...overrides,
    });

  describe("DNS TXT at _vrai.<domain>", () => {
    it("accepts a TXT record equal to the challenge token", async () => {
      const challenge = challengeFor("domain", "Example.com");
      dnsServer.setTxt("_vrai.example.com", ["v=spf1 -all", challenge.token]);
      const result = await verifier().verify(challenge, { domain: "EXAMPLE.com", method: "dns" });
      expect(result).to.deep.equal({
        type: "verified",
        kind: "domain",
        binding: "domain:example.com",
        proof: { kind: "domain", subject: "example.com", domain: "example.com", via: "dns", token: challenge.token },
      });
    });

    it("joins a long record split into 255-byte character-strings", async () => {
      const long = `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(50)}.example`;
      const challenge = challengeFor("domain", long);
      expect(challenge.token.length).to.be.greaterThan(255);
      dnsServer.setTxt(`_vrai.${long}`, [challenge.token]);
      expect((await verifier().verify(challenge, { domain: long, method: "dns" })).binding).to.equal(`domain:${long}`);
    });

    it("rejects a domain without the record (proof_dns_record_not_found, 422), without retrying NXDOMAIN", async () => {
      const challenge = challengeFor("domain", "nothing.example");
      await expectProofError(verifier().verify(challenge, { domain: "nothing.example", method: "dns" }), "proof_dns_record_not_found", 422);
      expect(dnsServer.queryCount("_vrai.nothing.example")).to.equal(1);
    });

    it("rejects TXT records that do not hold the challenge (proof_challenge_missing, 422)", async () => {
      const challenge = challengeFor("domain", "other.example");
      dnsServer.setTxt("_vrai.other.example", [`vrai-proof:v1:domain:other.example:${"0".repeat(32)}`]);
      await expectProofError(verifier().verify(challenge, { domain: "other.example", method: "dns" }), "proof_challenge_missing", 422);
    });

    it("retries a SERVFAIL 3 times, then answers with a retryable 503", async () => {
      const challenge = challengeFor("domain", "broken.example");
      dnsServer.setFailure("_vrai.broken.example", "servfail");
      sleep.delays.length = 0;
      await expectProofError(verifier().verify(challenge, { domain: "broken.example", method: "dns" }), "proof_source_unreachable", 503);
      expect(dnsServer.queryCount("_vrai.broken.example")).to.be.at.least(3);
      expect(sleep.delays).to.deep.equal([10, 20]);
    });

    it("reports an unreachable re-check when the name server does not answer", async () => {
      dnsServer.setFailure("_vrai.silent.example", "drop");
      const outcome = await verifier().recheck({
        kind: "domain",
        subject: "silent.example",
        domain: "silent.example",
        via: "dns",
        token: "t",
      });
      expect(outcome).to.deep.include({ type: "failed", reason: "unreachable" });
      expect(dnsServer.queryCount("_vrai.silent.example")).to.be.at.least(3);
    });

    it("re-checks ok while the record stays, and fails once it is removed", async () => {
      const challenge = challengeFor("domain", "keep.example");
      dnsServer.setTxt("_vrai.keep.example", [challenge.token]);
      const { proof } = await verifier().verify(challenge, { domain: "keep.example" });
      expect(await verifier().recheck(proof)).to.deep.equal({ type: "ok" });
      dnsServer.remove("_vrai.keep.example");
      expect(await verifier().recheck(proof)).to.deep.include({ type: "failed", reason: "rejected", code: "proof_dns_record_not_found" });
    });
  });

  describe("/.well-known/vrai.json", () => {
    const path = (domain: string) => `/${domain}/.well-known/vrai.json`;

    it('accepts {"vrai": [token, …]} listing the challenge', async () => {
      const challenge = challengeFor("domain", "web.example");
      web.route("GET", path("web.example"), { body: { vrai: ["vrai-proof:v1:domain:web.example:old", challenge.token] } });
      const result = await verifier().verify(challenge, { domain: "web.example", method: "well-known" });
      expect(result.proof).to.deep.include({ via: "well-known" });
    });

    it("falls back to the well-known file when no method is given and DNS has no record", async () => {
      const challenge = challengeFor("domain", "fallback.example");
      web.route("GET", path("fallback.example"), { body: { vrai: [challenge.token] } });
      const result = await verifier().verify(challenge, { domain: "fallback.example" });
      expect(result.proof).to.deep.include({ via: "well-known" });
    });

    it("rejects a file that does not list the challenge (proof_challenge_missing, 422)", async () => {
      const challenge = challengeFor("domain", "stale.example");
      web.route("GET", path("stale.example"), { body: { vrai: [] } });
      await expectProofError(
        verifier().verify(challenge, { domain: "stale.example", method: "well-known" }),
        "proof_challenge_missing",
        422,
      );
    });

    it("rejects a missing file, a redirect, a wrong shape and a file over 64 KiB (proof_well_known_invalid, 422)", async () => {
      const challenge = challengeFor("domain", "bad.example");
      const attempt = () => verifier().verify(challenge, { domain: "bad.example", method: "well-known" });
      await expectProofError(attempt(), "proof_well_known_invalid", 422);
      web.route("GET", path("bad.example"), { status: 301, headers: { location: "http://169.254.169.254/" } });
      await expectProofError(attempt(), "proof_well_known_invalid", 422);
      web.route("GET", path("bad.example"), { body: { vrai: challenge.token } });
      await expectProofError(attempt(), "proof_well_known_invalid", 422);
      web.route("GET", path("bad.example"), { body: "not json" });
      await expectProofError(attempt(), "proof_well_known_invalid", 422);
      web.route("GET", path("bad.example"), { body: { vrai: [challenge.token], pad: "x".repeat(70_000) } });
      await expectProofError(attempt(), "proof_well_known_invalid", 422);
    });

    it("ends a submission whose server never answers at the submission deadline: one request, no further try, a retryable 503", async () => {
      const challenge = challengeFor("domain", "hang.example");
      web.route("GET", path("hang.example"), { hang: true });
      sleep.delays.length = 0;
      const attempt = verifier({ httpTimeoutMs: 60_000, submissionTimeoutMs: 200 }).verify(challenge, {
        domain: "hang.example",
        method: "well-known",
      });
      const error = await expectProofError(attempt, "proof_source_unreachable", 503);
      expect(error.retryable).to.equal(true);
      expect(error.message).to.include("200 ms");
      expect(web.requestsTo(path("hang.example"))).to.have.length(1);
      expect(sleep.delays).to.have.length.at.most(1);
    });

    it("times out a server that never answers, 3 times, then reports unreachable", async () => {
      web.route("GET", path("slow.example"), { hang: true });
      const outcome = await verifier({ httpTimeoutMs: 100 }).recheck({
        kind: "domain",
        subject: "slow.example",
        domain: "slow.example",
        via: "well-known",
        token: "t",
      });
      expect(outcome).to.deep.include({ type: "failed", reason: "unreachable" });
      expect(web.requestsTo(path("slow.example"))).to.have.length(3);
    });
  });

  describe("the standard's endpoint-domain verification: /.well-known/agent-registration.json (ERC-8004, issue #27)", () => {
    const path = (domain: string) => `/${domain}/.well-known/agent-registration.json`;
    const REGISTRY = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432";
    const identity = { chainId: 8453, registry: REGISTRY, agentId: 42n } as const;
    /** The agent holds the ERC-8004 identity 8453:<REGISTRY>:42 through an active erc8004 proof. */
    const holding = { erc8004: [identity] };
    const entry = { agentRegistry: `eip155:8453:${REGISTRY}`, agentId: 42 };

    it("accepts a registrations entry of the agent's ERC-8004 identity, and keeps which identity it proved the domain for", async () => {
      const challenge = challengeFor("domain", "endpoint.example");
      web.route("GET", path("endpoint.example"), { body: { registrations: [{ agentRegistry: "eip155:1:0x01", agentId: 1 }, entry] } });
      const result = await verifier().verify(challenge, { domain: "endpoint.example", method: "agent-registration" }, holding);
      expect(result).to.deep.equal({
        type: "verified",
        kind: "domain",
        binding: "domain:endpoint.example",
        proof: {
          kind: "domain",
          subject: "endpoint.example",
          domain: "endpoint.example",
          via: "agent-registration",
          token: challenge.token,
          erc8004: `8453:${REGISTRY}:42`,
        },
      });
      // It rests on the ERC-8004 proof of that identity: it goes with it.
      const proof = result.proof.kind === "domain" ? result.proof : undefined;
      expect(proof && domainKind.reliesOn?.(proof)).to.equal(`erc8004:8453:${REGISTRY}:42`);
    });

    it("is tried third when no method is given and the agent holds an ERC-8004 identity, never without one", async () => {
      const challenge = challengeFor("domain", "third.example");
      web.route("GET", path("third.example"), { body: { registrations: [entry] } });
      expect((await verifier().verify(challenge, { domain: "third.example" }, holding)).proof).to.deep.include({
        via: "agent-registration",
      });
      const before = web.requestsTo(path("third.example")).length;
      const error = await expectProofError(verifier().verify(challenge, { domain: "third.example" }), "proof_dns_record_not_found", 422);
      expect(web.requestsTo(path("third.example"))).to.have.length(before);
      expect(error.message).to.include("vrai.json").and.not.include("agent-registration.json");
    });

    it("refuses it for an agent without an ERC-8004 proof (proof_erc8004_required, 422), reading nothing", async () => {
      const challenge = challengeFor("domain", "noidentity.example");
      web.route("GET", path("noidentity.example"), { body: { registrations: [entry] } });
      const error = await expectProofError(
        verifier().verify(challenge, { domain: "noidentity.example", method: "agent-registration" }),
        "proof_erc8004_required",
        422,
      );
      expect(error.message).to.include("prove the identity first (kind erc8004)");
      expect(web.requestsTo(path("noidentity.example"))).to.have.length(0);
    });

    it("refuses a file listing another identity (proof_registration_missing), and one of the wrong shape or missing (proof_well_known_invalid)", async () => {
      const challenge = challengeFor("domain", "other-id.example");
      const attempt = () => verifier().verify(challenge, { domain: "other-id.example", method: "agent-registration" }, holding);
      web.route("GET", path("other-id.example"), { body: { registrations: [{ ...entry, agentId: 41 }] } });
      const missing = await expectProofError(attempt(), "proof_registration_missing", 422);
      expect(missing.message).to.include(`lists no registrations entry of agentRegistry eip155:8453:${REGISTRY} with agentId 42`);
      web.route("GET", path("other-id.example"), { body: { vrai: [challenge.token] } });
      expect((await expectProofError(attempt(), "proof_well_known_invalid", 422)).message).to.include('must hold "registrations"');
      web.route("GET", path("other-id.example"), { body: "not json" });
      expect((await expectProofError(attempt(), "proof_well_known_invalid", 422)).message).to.include("is not JSON");
      web.route("GET", path("other-id.example"), { status: 302, headers: { location: "http://169.254.169.254/" } });
      expect((await expectProofError(attempt(), "proof_well_known_invalid", 422)).message).to.include("redirects are not followed");
      web.route("GET", path("other-id.example"), { body: { registrations: [entry], pad: "x".repeat(70_000) } });
      expect((await expectProofError(attempt(), "proof_well_known_invalid", 422)).message).to.include("larger than");
    });

    it("re-checks ok while the file lists the identity the agent still holds; fails when it stops listing it, or the agent no longer holds it", async () => {
      const challenge = challengeFor("domain", "kept.example");
      web.route("GET", path("kept.example"), { body: { registrations: [entry] } });
      const { proof } = await verifier().verify(challenge, { domain: "kept.example", method: "agent-registration" }, holding);
      expect(await verifier().recheck(proof, holding)).to.deep.equal({ type: "ok" });
      expect(await verifier().recheck(proof, { erc8004: [{ ...identity, agentId: 7n }] })).to.deep.include({
        type: "failed",
        reason: "rejected",
        code: "proof_erc8004_required",
      });
      web.route("GET", path("kept.example"), { body: { registrations: [] } });
      expect(await verifier().recheck(proof, holding)).to.deep.include({
        type: "failed",
        reason: "rejected",
        code: "proof_registration_missing",
      });
      web.route("GET", path("kept.example"), { status: 503 });
      expect(await verifier().recheck(proof, holding)).to.deep.include({ type: "failed", reason: "unreachable" });
    });

    it("tells the owner exactly what to publish there, once the agent holds an ERC-8004 identity", () => {
      const challenge = challengeFor("domain", "told.example");
      const told = domainKind.instructions(challenge, holding);
      expect(told.publish[2]).to.deep.equal({
        type: "https-file",
        name: "https://told.example/.well-known/agent-registration.json",
        value: JSON.stringify({ registrations: [entry] }),
      });
      expect(told.steps.join(" ")).to.include(`8453:${REGISTRY}:42`).and.include('method "agent-registration"');
      expect(domainKind.instructions(challenge, { erc8004: [] }).publish.map((p) => p.name)).to.deep.equal([
        "_vrai.told.example",
        "https://told.example/.well-known/vrai.json",
      ]);
    });
  });

  describe("connections go to public addresses only (issue #15, finding 2)", () => {
    /** A public-looking name resolving to 127.0.0.1, where the test server counts connections: a failed check would connect to it. */
    const resolved: string[] = [];
    const toLoopback: ProofVerifierDeps["resolveAddresses"] = async (hostname) => {
      resolved.push(hostname);
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const filtered = () =>
      verifier({
        resolveAddresses: toLoopback,
        wellKnownUrl: (domain) => `http://${domain}:${web.port}/${domain}/.well-known/vrai.json`,
        allowLoopbackLiteralsForTests: false,
      });

    it("refuses a well-known file whose host resolves to 127.0.0.1 (proof_forbidden_address, 422), at once, connecting to nothing", async () => {
      const challenge = challengeFor("domain", "proof.example.com");
      web.route("GET", "/proof.example.com/.well-known/vrai.json", { body: { vrai: [challenge.token] } });
      const connections = web.connectionCount();
      resolved.length = 0;
      sleep.delays.length = 0;
      const error = await expectProofError(
        filtered().verify(challenge, { domain: "proof.example.com", method: "well-known" }),
        "proof_forbidden_address",
        422,
      );
      expect(web.connectionCount()).to.equal(connections);
      expect(resolved, "resolved once: a refusal is final, not retried").to.deep.equal(["proof.example.com"]);
      expect(sleep.delays).to.deep.equal([]);
      expect(error.message).to.include("proof.example.com").and.not.include("127.0.0.1");
    });

    it("counts a re-check whose host now resolves to 127.0.0.1 as a rejected check, connecting to nothing", async () => {
      const connections = web.connectionCount();
      const proof = {
        kind: "domain" as const,
        subject: "proof.example.com",
        domain: "proof.example.com",
        via: "well-known" as const,
        token: "t",
      };
      expect(await filtered().recheck(proof)).to.deep.include({ type: "failed", reason: "rejected", code: "proof_forbidden_address" });
      expect(web.connectionCount()).to.equal(connections);
    });
  });

  describe("domain names", () => {
    // Issue #15, finding 2: on main these four passed and the URL parser read them as 127.0.0.1 / 127.1.0.1.
    for (const spelling of ["127.0.0.0x1", "0x7f.0.0.0x1", "127.1.0x1", "0177.0.0.0x1"]) {
      it(`refuses ${spelling}, an IPv4 address to the URL parser (proof_domain_invalid, 400)`, () => {
        const error = expectThrowsProofError(() => normalizeDomain(spelling), "proof_domain_invalid", 400);
        expect(error.message).to.include("IP addresses are not domains");
      });
    }

    it(
      "refuses IP literals in every other spelling: decimal, hex and octal integers, IPv6 bracketed or not, mapped, with zones, " +
        "trailing dots (proof_domain_invalid, 400)",
      () => {
        for (const spelling of [
          "2130706433",
          "0x7f000001",
          "017700000001",
          "0x7f.1",
          "127.0.0.1.",
          "127.0.0.0x1.",
          "[::1]",
          "::1",
          "::ffff:127.0.0.1",
          "[::ffff:127.0.0.1]",
          "fe80::1%eth0",
          "[fe80::1%25eth0]",
          "10.0.0.1",
          "169.254.169.254",
        ]) {
          expectThrowsProofError(() => normalizeDomain(spelling), "proof_domain_invalid", 400);
        }
      },
    );

    it("refuses a last label that is not a top-level domain: digits or hex in it (proof_domain_invalid, 400)", () => {
      for (const spelling of ["a.0x1", "example.c0m", "example.123abc", "example.x"]) {
        const error = expectThrowsProofError(() => normalizeDomain(spelling), "proof_domain_invalid", 400);
        expect(error.message, spelling).to.include("top-level domain");
      }
      expect(normalizeDomain("example.xn--p1ai")).to.equal("example.xn--p1ai");
    });

    it("rejects IPs, ports, localhost and bad syntax (proof_domain_invalid, 400)", async () => {
      for (const bad of [
        "127.0.0.1",
        "[::1]",
        "example.com:8443",
        "localhost",
        "api.localhost",
        "com",
        "ex_ample.com",
        "-a.com",
        "a-.com",
        "a..com",
        "exa mple.com",
        "https://example.com",
        "example.com/path",
        "ex\u00e4mple.com",
        `${"a".repeat(64)}.com`,
        `${"a.".repeat(127)}com`,
        "",
      ]) {
        expectThrowsProofError(() => normalizeDomain(bad), "proof_domain_invalid", 400);
      }
      const challenge = challengeFor("domain", "example.com");
      await expectProofError(verifier().verify(challenge, { domain: "10.0.0.1" }), "proof_domain_invalid", 400);
    });

    it("accepts public names, punycode and one trailing dot, lowercased", () => {
      expect(normalizeDomain("Sub.Example.COM.")).to.equal("sub.example.com");
      expect(normalizeDomain("xn--exmple-cua.com")).to.equal("xn--exmple-cua.com");
      expect(normalizeDomain("a1-b.co.uk")).to.equal("a1-b.co.uk");
    });

    it("rejects evidence for another domain than the challenge (proof_subject_mismatch, 422)", async () => {
      const challenge = challengeFor("domain", "example.com");
      await expectProofError(verifier().verify(challenge, { domain: "example.org" }), "proof_subject_mismatch", 422);
    });
  });
});
