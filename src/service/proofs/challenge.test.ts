import { expect } from "chai";
import { challengeToken, createChallenge, isExpired, proofTypedData, VRAI_PROOF_DOMAIN } from "./challenge";
import { challengeFor, expectThrowsProofError, NOW } from "./test-support";

const ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

describe("proof challenges (V6)", () => {
  it("formats the token as vrai-proof:v1:<kind>:<subject>:<32 hex nonce>", () => {
    const challenge = challengeFor("domain", "Example.COM.");
    expect(challenge.subject).to.equal("example.com");
    expect(challenge.nonce).to.match(/^[0-9a-f]{32}$/);
    expect(challenge.token).to.equal(`vrai-proof:v1:domain:example.com:${challenge.nonce}`);
    expect(challengeToken("github", "octocat", "ab")).to.equal("vrai-proof:v1:github:octocat:ab");
  });

  it("draws a fresh 128-bit nonce and id for every challenge", () => {
    const a = challengeFor("wallet", ADDRESS);
    const b = challengeFor("wallet", ADDRESS);
    expect(a.nonce).to.not.equal(b.nonce);
    expect(a.id).to.not.equal(b.id);
  });

  it("names the purpose, subject, owner, agent, nonce and expiry in the signed message", () => {
    const challenge = challengeFor("wallet", ADDRESS, { randomBytes: () => Buffer.alloc(16, 0xab) });
    expect(challenge.message).to.equal(
      [
        "Vrai identity proof",
        "I control the wallet 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266.",
        "Kind: wallet",
        "Subject: 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
        "Vrai owner: owner-1",
        "Vrai agent: agent-1",
        `Nonce: ${"ab".repeat(16)}`,
        "Expires: 2027-01-15T09:00:00.000Z",
        `Challenge: vrai-proof:v1:wallet:0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266:${"ab".repeat(16)}`,
      ].join("\n"),
    );
    expect(challenge.expiresAt).to.equal(NOW + 3600);
    expect(challenge.issuedAt).to.equal(NOW);
  });

  it("says an owner-level challenge without an agent has none", () => {
    const challenge = createChallenge({ kind: "github", subject: "OctoCat", ownerId: "o", now: NOW, ttlS: 60 });
    expect(challenge.agentId).to.equal(null);
    expect(challenge.subject).to.equal("octocat");
    expect(challenge.message).to.contain("Vrai agent: none (owner-level proof)");
  });

  it("expires a challenge at exactly expiresAt", () => {
    const challenge = challengeFor("github", "octocat", { ttlS: 600 });
    expect(isExpired(challenge, NOW + 599)).to.equal(false);
    expect(isExpired(challenge, NOW + 600)).to.equal(true);
  });

  it("builds EIP-712 typed data with the Vrai domain and every challenge field", () => {
    const challenge = challengeFor("erc8004", "31337:0x5FbDB2315678afecb367f032d93F642f64180aa3:7");
    expect(challenge.subject).to.equal("31337:0x5fbdb2315678afecb367f032d93f642f64180aa3:7");
    const typed = proofTypedData(challenge);
    expect(typed.domain).to.deep.equal(VRAI_PROOF_DOMAIN);
    expect(typed.primaryType).to.equal("VraiProof");
    expect(typed.message).to.deep.equal({
      kind: "erc8004",
      subject: challenge.subject,
      owner: "owner-1",
      agent: "agent-1",
      nonce: challenge.nonce,
      expiresAt: BigInt(NOW + 3600),
    });
  });

  it("refuses a domain or erc8004 challenge without an agent (proof_agent_required, 400)", () => {
    expectThrowsProofError(
      () => createChallenge({ kind: "domain", subject: "example.com", ownerId: "o", now: NOW, ttlS: 60 }),
      "proof_agent_required",
      400,
    );
    expectThrowsProofError(
      () =>
        createChallenge({ kind: "erc8004", subject: "1:0x5fbdb2315678afecb367f032d93f642f64180aa3:1", ownerId: "o", now: NOW, ttlS: 60 }),
      "proof_agent_required",
      400,
    );
  });

  it("refuses invalid subjects (proof_subject_invalid / proof_domain_invalid, 400)", () => {
    expectThrowsProofError(() => challengeFor("wallet", "0x1234"), "proof_subject_invalid", 400);
    expectThrowsProofError(() => challengeFor("github", "-bad-"), "proof_subject_invalid", 400);
    expectThrowsProofError(() => challengeFor("erc8004", "1:0x5fbdb2315678afecb367f032d93f642f64180aa3"), "proof_subject_invalid", 400);
    expectThrowsProofError(
      () => challengeFor("erc8004", `1:0x5fbdb2315678afecb367f032d93f642f64180aa3:${2n ** 256n}`),
      "proof_subject_invalid",
      400,
    );
    expectThrowsProofError(() => challengeFor("domain", "localhost"), "proof_domain_invalid", 400);
  });

  it("refuses a non-positive ttl or a fractional clock (proof_evidence_invalid)", () => {
    expectThrowsProofError(() => challengeFor("github", "octocat", { ttlS: 0 }), "proof_evidence_invalid", 400);
    expectThrowsProofError(() => challengeFor("github", "octocat", { now: 1.5 }), "proof_evidence_invalid", 400);
  });
});
