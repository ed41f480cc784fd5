import { expect } from "chai";
import { startHttpServer, type TestHttpServer } from "../../../test-helpers/http-server";
import { challengeFor, expectProofError, NOW, recordingSleep } from "../test-support";
import { createProofVerifier } from "../verifiers";

const GIST = "aa5a315d61ae9438b18d";

describe("GitHub proofs (V6)", () => {
  let server: TestHttpServer;
  before(async () => (server = await startHttpServer()));
  after(() => server.close());

  const sleep = recordingSleep();
  const verifier = () =>
    createProofVerifier({
      now: () => NOW + 60,
      settings: { GITHUB_API_BASE_URL: server.url, GITHUB_RAW_BASE_URL: `${server.url}/raw/` },
      // The test server listens on 127.0.0.1 (test traffic stays on loopback).
      allowLoopbackLiteralsForTests: true,
      sleep,
      retry: { tries: 3, baseDelayMs: 50 },
    });
  const gist = (content: string, overrides: Record<string, unknown> = {}) => ({
    id: GIST,
    public: true,
    owner: { login: "OctoCat" },
    files: { "vrai.txt": { filename: "vrai.txt", content, truncated: false, raw_url: `${server.url}/raw/${GIST}/vrai.txt` } },
    ...overrides,
  });

  it("reads the API with the configured token (GITHUB_TOKEN), and with none when it is not set", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, { body: gist(challenge.token) });
    const withToken = createProofVerifier({
      now: () => NOW + 60,
      settings: { GITHUB_API_BASE_URL: server.url, GITHUB_TOKEN: "ghp_test" },
      allowLoopbackLiteralsForTests: true,
      sleep,
    });
    await withToken.verify(challenge, { username: "octocat", gistId: GIST });
    expect(server.requestsTo(`/gists/${GIST}`).at(-1)?.headers.authorization).to.equal("Bearer ghp_test");
    await verifier().verify(challenge, { username: "octocat", gistId: GIST });
    expect(server.requestsTo(`/gists/${GIST}`).at(-1)?.headers.authorization).to.equal(undefined);
  });

  it("accepts a public gist of the user that contains the challenge (login compared case-insensitively)", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, { body: gist(`hello\n${challenge.message}\n`) });
    const result = await verifier().verify(challenge, { username: "octocat", gistId: GIST });
    expect(result).to.deep.equal({
      type: "verified",
      kind: "github",
      binding: "github:octocat",
      proof: { kind: "github", subject: "octocat", username: "octocat", gistId: GIST, token: challenge.token },
    });
    expect(server.requestsTo(`/gists/${GIST}`).at(-1)?.headers.accept).to.equal("application/vnd.github+json");
  });

  it("rejects a secret gist (proof_gist_not_public, 422)", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, { body: gist(challenge.token, { public: false }) });
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: GIST }), "proof_gist_not_public", 422);
  });

  it("rejects a gist of another user (proof_gist_owner_mismatch, 422)", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, { body: gist(challenge.token, { owner: { login: "mallory" } }) });
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: GIST }), "proof_gist_owner_mismatch", 422);
  });

  it("rejects a gist without the challenge (proof_challenge_missing, 422)", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, { body: gist(`vrai-proof:v1:github:octocat:${"0".repeat(32)}`) });
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: GIST }), "proof_challenge_missing", 422);
  });

  it("rejects a gist that does not exist (proof_gist_not_found, 422)", async () => {
    const challenge = challengeFor("github", "octocat");
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: "fff" }), "proof_gist_not_found", 422);
  });

  it("reads a truncated file from its raw_url", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, {
      body: {
        ...gist("x".repeat(100)),
        files: { "big.txt": { content: "x".repeat(100), truncated: true, raw_url: `${server.url}/raw/${GIST}/big.txt` } },
      },
    });
    server.route("GET", `/raw/${GIST}/big.txt`, { body: `${"x".repeat(5000)}\n${challenge.token}\n` });
    const result = await verifier().verify(challenge, { username: "octocat", gistId: GIST });
    expect(result.binding).to.equal("github:octocat");
    expect(server.requestsTo(`/raw/${GIST}/big.txt`)).to.have.length.greaterThan(0);
  });

  it("refuses a truncated file whose raw_url is off the raw host (proof_source_invalid, 422)", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, {
      body: { ...gist(""), files: { "big.txt": { content: "", truncated: true, raw_url: "http://169.254.169.254/latest/meta-data" } } },
    });
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: GIST }), "proof_source_invalid", 422);
  });

  it("refuses an API host that resolves to 127.0.0.1 (proof_forbidden_address, 422), connecting to nothing (issue #15, finding 2)", async () => {
    const challenge = challengeFor("github", "octocat");
    server.route("GET", `/gists/${GIST}`, { body: gist(challenge.token) });
    const connections = server.connectionCount();
    const toLoopback = createProofVerifier({
      now: () => NOW + 60,
      settings: { GITHUB_API_BASE_URL: `http://api.github.example:${server.port}` },
      resolveAddresses: async () => [{ address: "127.0.0.1", family: 4 }],
      allowLoopbackLiteralsForTests: true,
      sleep,
    });
    await expectProofError(toLoopback.verify(challenge, { username: "octocat", gistId: GIST }), "proof_forbidden_address", 422);
    expect(server.connectionCount()).to.equal(connections);
  });

  it("retries a 500 three times, then answers the initial proof with a retryable 503", async () => {
    const challenge = challengeFor("github", "octocat");
    const path = "/gists/5005005005";
    server.route("GET", path, { status: 500, body: { message: "Server Error" } });
    sleep.delays.length = 0;
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: "5005005005" }), "proof_source_unreachable", 503);
    expect(server.requestsTo(path)).to.have.length(3);
    expect(sleep.delays).to.deep.equal([50, 100]);
  });

  it("succeeds when a 502 is followed by a good answer within the 3 tries", async () => {
    const challenge = challengeFor("github", "octocat");
    let calls = 0;
    server.route("GET", `/gists/${GIST}`, () => (++calls === 1 ? { status: 502, body: "bad gateway" } : { body: gist(challenge.token) }));
    expect((await verifier().verify(challenge, { username: "octocat", gistId: GIST })).type).to.equal("verified");
    expect(calls).to.equal(2);
  });

  it("rejects evidence for another user than the challenge (proof_subject_mismatch, 422)", async () => {
    const challenge = challengeFor("github", "octocat");
    await expectProofError(verifier().verify(challenge, { username: "mallory", gistId: GIST }), "proof_subject_mismatch", 422);
  });

  it("rejects a malformed gist id (proof_evidence_invalid, 400)", async () => {
    const challenge = challengeFor("github", "octocat");
    await expectProofError(verifier().verify(challenge, { username: "octocat", gistId: "../users/x" }), "proof_evidence_invalid", 400);
  });

  describe("recheck", () => {
    const proof = (token: string, gistId = GIST) => ({ kind: "github" as const, subject: "octocat", username: "octocat", gistId, token });

    it("answers ok while the gist still holds the challenge", async () => {
      const challenge = challengeFor("github", "octocat");
      server.route("GET", `/gists/${GIST}`, { body: gist(challenge.token) });
      expect(await verifier().recheck(proof(challenge.token))).to.deep.equal({ type: "ok" });
    });

    it("reports a rejected check when the gist was deleted or made secret", async () => {
      const challenge = challengeFor("github", "octocat");
      expect(await verifier().recheck(proof(challenge.token, "dead"))).to.deep.include({
        type: "failed",
        reason: "rejected",
        code: "proof_gist_not_found",
      });
      server.route("GET", `/gists/${GIST}`, { body: gist(challenge.token, { public: false }) });
      expect(await verifier().recheck(proof(challenge.token))).to.deep.include({
        type: "failed",
        reason: "rejected",
        code: "proof_gist_not_public",
      });
    });

    it("reports an unreachable check after 3 tries of a 503", async () => {
      server.route("GET", "/gists/503503", { status: 503, body: "" });
      const outcome = await verifier().recheck(proof("t", "503503"));
      expect(outcome).to.deep.include({ type: "failed", reason: "unreachable", code: "proof_source_unreachable" });
      expect(server.requestsTo("/gists/503503")).to.have.length(3);
    });
  });
});
