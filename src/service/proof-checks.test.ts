import { Resolver } from "node:dns/promises";
import { expect } from "chai";
import { privateKeyToAccount } from "viem/accounts";
import { createVraiService, type VraiService } from ".";
import { createManualClock } from "./clock";
import type { NewEvent, ProofRow, Store, StoreTx } from "./ports";
import { CHALLENGE_TTL_S, createProofChecks, type ProofChecks } from "./proof-checks";
import { createProofVerifier } from "./proofs/verifiers";
import { createMemoryStore } from "../store/memory-store";
import { startDnsServer, type TestDnsServer } from "../test-helpers/dns-server";
import { capturedLogger, type CapturedLogger } from "../test-helpers/logs";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const DAY = 86_400;
const WALLET = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const REGISTRY = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432";

/**
 * The store, with the events its transactions record kept in `events` (the memory store keeps none: replay has no
 * webhooks), and how many challenges each deletion statement deleted in `deletions`.
 */
function recordingEvents(store: Store): { store: Store; events: NewEvent[]; deletions: number[] } {
  const events: NewEvent[] = [];
  const deletions: number[] = [];
  const recording = (tx: StoreTx): StoreTx => ({
    ...tx,
    recordEvents: async (recorded) => {
      events.push(...recorded);
      await tx.recordEvents(recorded);
    },
    deleteExpiredChallenges: async (at, options) => {
      const n = await tx.deleteExpiredChallenges(at, options);
      deletions.push(n);
      return n;
    },
  });
  return { store: { ...store, transaction: (fn) => store.transaction((tx) => fn(recording(tx))) }, events, deletions };
}

/** The error a promise is rejected with, or null when it resolves. */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

/**
 * The life of a proof in the service (V6) on the memory store, verified for real: wallet signatures with viem,
 * domains against a DNS server on loopback.
 */
describe("proof checks: challenges, submissions and re-checks (V6)", () => {
  let dns: TestDnsServer;
  let store: Store;
  let events: NewEvent[];
  let deletions: number[];
  let service: VraiService;
  let proofs: ProofChecks;
  let logs: CapturedLogger;
  let refreshed: Array<{ proof: string; submission: boolean | undefined }>;
  let refreshFails: boolean;
  const clock = createManualClock(T0);

  before(async () => {
    dns = await startDnsServer();
  });
  after(() => dns.close());

  beforeEach(() => {
    clock.set(T0);
    ({ store, events, deletions } = recordingEvents(createMemoryStore()));
    service = createVraiService({ store, clock, busy: () => false });
    logs = capturedLogger();
    refreshed = [];
    refreshFails = false;
    const resolver = new Resolver();
    resolver.setServers([dns.address]);
    proofs = createProofChecks({
      store,
      clock,
      identity: service.identity,
      verifier: createProofVerifier({
        now: () => clock.now(),
        resolveTxt: (name) => resolver.resolveTxt(name),
        sleep: async () => undefined,
        retry: { tries: 1, baseDelayMs: 1 },
      }),
      logger: logs.logger,
      limits: { openChallenges: 3 },
      registrations: {
        async refresh(proof, options) {
          refreshed.push({ proof: proof.id, submission: options?.submission });
          if (refreshFails) throw new Error("registration file unreadable");
          return null;
        },
      },
    });
  });

  /** The proof.check_failed events recorded so far (issue #28). */
  const checkFailures = () => events.filter((e) => e.type === "proof.check_failed");

  async function ownerWithAgent(): Promise<{ ownerId: string; agentId: string }> {
    const { ownerId } = await service.accounts.createOwner();
    return { ownerId, agentId: (await service.accounts.claimNewAgent(ownerId)).agentId };
  }

  /** A domain proof of `agentId` through a TXT record on the test DNS server. */
  async function domainProof(ownerId: string, agentId: string, domain: string): Promise<ProofRow> {
    const challenge = await proofs.issueChallenge(ownerId, { kind: "domain", subject: domain, agentId });
    dns.setTxt(`_vrai.${domain}`, [challenge.token]);
    return proofs.submitProof(ownerId, challenge.id, { domain, method: "dns" });
  }

  /** An ERC-8004 proof of `agentId` as the service records a verified one (its re-check needs a chain this test has not). */
  function erc8004Proof(ownerId: string, agentId: string, tokenId: number): Promise<ProofRow> {
    const subject = `31337:${REGISTRY}:${tokenId}`;
    return service.identity.recordProof({
      id: `prf_erc8004_${tokenId}`,
      kind: "erc8004",
      ownerId,
      agentId,
      subject,
      binding: `erc8004:${subject}`,
      evidence: { kind: "erc8004", subject, chainId: 31337, registry: REGISTRY, agentId: String(tokenId), owner: WALLET.address },
    });
  }

  it("issues a challenge that expires an hour later and names what the agent holds, its latest ERC-8004 identity first", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const plain = await proofs.issueChallenge(ownerId, { kind: "domain", subject: "Agent.Example.org", agentId });
    expect(plain).to.include({ kind: "domain", ownerId, agentId, subject: "agent.example.org", issuedAt: T0, usedAt: null });
    expect(plain.expiresAt)
      .to.equal(T0 + CHALLENGE_TTL_S)
      .and.to.equal(T0 + 3600);
    expect(plain.context).to.deep.equal({ erc8004: [] });
    expect(await store.read.getChallenge(plain.id)).to.include({ token: plain.token, expiresAt: T0 + 3600 });

    clock.set(T0 + 10);
    await erc8004Proof(ownerId, agentId, 7);
    clock.set(T0 + 20);
    await erc8004Proof(ownerId, agentId, 8);
    // Another agent's identity is not this one's.
    const other = await ownerWithAgent();
    await erc8004Proof(other.ownerId, other.agentId, 9);
    const withIdentities = await proofs.issueChallenge(ownerId, { kind: "domain", subject: "agent.example.org", agentId });
    expect(withIdentities.context.erc8004.map((i) => i.agentId)).to.deep.equal([8n, 7n]);
    expect(withIdentities.context.erc8004[0]).to.deep.equal({ chainId: 31337, registry: REGISTRY, agentId: 8n });
    // An owner-level challenge names no agent, and knows none.
    const wallet = await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    expect([wallet.agentId, wallet.context]).to.deep.equal([null, { erc8004: [] }]);
    // Read again later (the console's challenge page), a challenge names what the agent holds then.
    expect(await proofs.challenge(ownerId, plain.id)).to.deep.equal({ ...plain, context: withIdentities.context });
    expect(await refusal(proofs.challenge(other.ownerId, plain.id))).to.include({ code: "proof_challenge_not_found" });
  });

  it("refuses a challenge for an unknown owner or agent, or an agent of another owner, and stores none (V2, V6)", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const other = await ownerWithAgent();
    expect(await refusal(proofs.issueChallenge("own_missing", { kind: "wallet", subject: WALLET.address }))).to.include({
      code: "owner_not_found",
      status: 404,
      message: "owner own_missing does not exist",
    });
    expect(await refusal(proofs.issueChallenge(ownerId, { kind: "domain", subject: "a.example.org", agentId: "agt_missing" }))).to.include({
      code: "agent_not_found",
      status: 404,
      message: "agent agt_missing does not exist",
    });
    expect(await refusal(proofs.issueChallenge(other.ownerId, { kind: "domain", subject: "a.example.org", agentId }))).to.include({
      code: "agent_owned_by_another_owner",
      status: 403,
      message: `agent ${agentId} belongs to another owner: only the owner of its latest claim proves it`,
    });
    expect(await store.read.countOpenChallenges(ownerId, T0)).to.equal(0);
    expect(await store.read.countOpenChallenges(other.ownerId, T0)).to.equal(0);
  });

  it("refuses a challenge past the owner's open limit, counting only those not expired: expired ones are deleted first", async () => {
    const { ownerId } = await ownerWithAgent();
    const first = await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    const other = await ownerWithAgent();
    const othersFirst = await proofs.issueChallenge(other.ownerId, { kind: "wallet", subject: WALLET.address });
    clock.set(T0 + 1);
    await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    const refused = await refusal(proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address }));
    expect(refused).to.include({ code: "limit_reached", status: 409 });
    expect((refused as Error).message).to.equal(
      "limit reached: an owner may have at most 3 open proof challenges (MAX_OPEN_CHALLENGES_PER_OWNER); " +
        "answer one, or wait until one expires (challenges expire 3600 s after they are issued)",
    );
    expect(await store.read.countOpenChallenges(ownerId, T0 + 1)).to.equal(3);
    // At its expiry the first no longer counts, and the next challenge deletes it: the owner's own, not another owner's expired one.
    clock.set(T0 + CHALLENGE_TTL_S);
    await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    expect(await store.read.getChallenge(first.id)).to.equal(null);
    expect(await store.read.getChallenge(othersFirst.id)).to.include({ id: othersFirst.id });
    expect(await store.read.countOpenChallenges(ownerId, T0 + CHALLENGE_TTL_S)).to.equal(3);
  });

  it("deletes every expired challenge, more than one statement's batch, and none that is still open (V6: challenges expire)", async () => {
    const { ownerId } = await ownerWithAgent();
    const open = await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    // 5,001 challenges that expire together: the deletion takes 5,000 a statement.
    await store.transaction(async (tx) => {
      for (let i = 0; i < 5001; i++)
        await tx.insertChallenge({ ...open, id: `expiring-${i}`, issuedAt: T0 - 1, expiresAt: T0 - 1 + CHALLENGE_TTL_S });
    });
    clock.set(T0 - 2 + CHALLENGE_TTL_S);
    expect(await proofs.deleteExpiredChallenges()).to.equal(0);
    clock.set(T0 - 1 + CHALLENGE_TTL_S);
    deletions.length = 0;
    expect(await proofs.deleteExpiredChallenges()).to.equal(5001);
    expect(deletions).to.deep.equal([5000, 1]);
    expect(await store.read.getChallenge("expiring-5000")).to.equal(null);
    expect(await store.read.getChallenge(open.id)).to.include({ id: open.id });
    expect(await proofs.deleteExpiredChallenges()).to.equal(0);
  });

  it("records a verified proof once, using its challenge up, and refuses another owner's, a used or an expired challenge", async () => {
    const { ownerId } = await ownerWithAgent();
    const other = await ownerWithAgent();
    const challenge = await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    const evidence = {
      address: WALLET.address,
      signature: await WALLET.signMessage({ message: challenge.message }),
      signatureType: "eip191",
    };
    expect(await refusal(proofs.submitProof(other.ownerId, challenge.id, evidence))).to.include({
      code: "proof_challenge_not_found",
      status: 404,
    });
    expect(await refusal(proofs.submitProof(ownerId, "missing", evidence))).to.include({
      code: "proof_challenge_not_found",
      message: "challenge missing does not exist for this owner",
    });

    clock.set(T0 + 5);
    const proof = await proofs.submitProof(ownerId, challenge.id, evidence);
    expect(proof).to.include({ kind: "wallet", ownerId, agentId: null, subject: WALLET.address.toLowerCase(), verifiedAt: T0 + 5 });
    expect(proof.id).to.match(/^prf_/);
    expect(proof.binding).to.equal(`wallet:${WALLET.address.toLowerCase()}`);
    expect(proof.evidence).to.include({ kind: "wallet" });
    expect((await store.read.getChallenge(challenge.id))?.usedAt).to.equal(T0 + 5);
    // A wallet proof has no registration file to read (issue #27).
    expect(refreshed).to.deep.equal([]);
    expect(await refusal(proofs.submitProof(ownerId, challenge.id, evidence))).to.include({
      code: "proof_challenge_used",
      status: 409,
      message: `challenge ${challenge.id} was already used`,
    });

    const late = await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    clock.set(late.expiresAt);
    const signature = await WALLET.signMessage({ message: late.message });
    const expired = await refusal(proofs.submitProof(ownerId, late.id, { ...evidence, signature }));
    expect(expired).to.include({ code: "proof_challenge_expired", status: 422 });
    expect((expired as Error).message).to.equal(`challenge ${late.id} expired at 2026-11-02T11:00:05Z`);
  });

  it("keeps a proof that fails one weekly check, telling its owner, and removes it at the second failure in a row (V6)", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const proof = await domainProof(ownerId, agentId, "weekly.example.org");
    expect(proof).to.include({ kind: "domain", agentId, lastCheckedAt: T0, consecutiveFailures: 0 });

    // Not due before its seven days: nothing is read.
    clock.set(T0 + 7 * DAY - 1);
    expect(await proofs.recheckDue()).to.deep.equal({ checked: 0, removed: 0 });
    dns.remove("_vrai.weekly.example.org");
    clock.set(T0 + 7 * DAY);
    expect(await proofs.recheckDue()).to.deep.equal({ checked: 1, removed: 0 });
    expect(await store.read.getProof(proof.id)).to.include({ lastCheckedAt: T0 + 7 * DAY, consecutiveFailures: 1, removedAt: null });
    const told = checkFailures();
    expect(told).to.have.length(1);
    expect(told[0]).to.include({ type: "proof.check_failed", ownerId, at: T0 + 7 * DAY });
    expect(JSON.parse(told[0].data)).to.deep.include({
      proofId: proof.id,
      kind: "domain",
      subject: "weekly.example.org",
      agentId,
      consecutiveFailures: 1,
      nextCheckAt: "2026-11-16T10:00:00Z",
    });
    expect(JSON.parse(told[0].data).code)
      .to.be.a("string")
      .and.match(/^proof_/);
    const failed = logs.entries("proof check failed");
    expect(failed).to.have.length(1);
    expect(failed[0]).to.include({ proof: proof.id, code: JSON.parse(told[0].data).code });

    clock.set(T0 + 14 * DAY);
    expect(await proofs.recheckDue()).to.deep.equal({ checked: 1, removed: 1 });
    expect(await store.read.getProof(proof.id)).to.include({ removedAt: T0 + 14 * DAY, removedReason: "failed two checks in a row" });
    expect(logs.entries("proof removed").map((l) => [l.proof, l.reason])).to.deep.equal([[proof.id, "failed two checks in a row"]]);
    const audit = await store.read.listAudit({ afterId: 0, limit: 100 });
    expect(audit.filter((e) => e.action === "proof.remove").map((e) => [e.subject, e.actor])).to.deep.equal([[proof.id, "scheduler"]]);
    expect((await service.scoring.scoreNow(agentId)).result.components.identity.value).to.equal(100);
  });

  it("resets the failures at a check that passes, and tells nothing then (V6: two failures in a row)", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const proof = await domainProof(ownerId, agentId, "flaky.example.org");
    const record = dns.queryCount("_vrai.flaky.example.org");
    const token = (await store.read.getProof(proof.id))!.evidence as { token: string };
    dns.remove("_vrai.flaky.example.org");
    clock.set(T0 + 7 * DAY);
    expect(await proofs.recheck((await store.read.getProof(proof.id))!)).to.equal("kept");
    dns.setTxt("_vrai.flaky.example.org", [token.token]);
    clock.set(T0 + 14 * DAY);
    expect(await proofs.recheck((await store.read.getProof(proof.id))!)).to.equal("kept");
    expect(await store.read.getProof(proof.id)).to.include({ lastCheckedAt: T0 + 14 * DAY, consecutiveFailures: 0, removedAt: null });
    expect(checkFailures()).to.have.length(1);
    expect(logs.entries("proof check failed")).to.have.length(1);
    expect(dns.queryCount("_vrai.flaky.example.org")).to.be.above(record);
    // The next failure is the first in a row again: kept.
    dns.remove("_vrai.flaky.example.org");
    clock.set(T0 + 21 * DAY);
    expect(await proofs.recheck((await store.read.getProof(proof.id))!)).to.equal("kept");
  });

  it("re-checks only proofs that are due, never a wallet's, and counts what it removed", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const challenge = await proofs.issueChallenge(ownerId, { kind: "wallet", subject: WALLET.address });
    const signature = await WALLET.signMessage({ message: challenge.message });
    await proofs.submitProof(ownerId, challenge.id, { address: WALLET.address, signature, signatureType: "eip191" });
    const kept = await domainProof(ownerId, agentId, "kept.example.org");
    const second = await ownerWithAgent();
    clock.set(T0 + DAY);
    const lost = await domainProof(second.ownerId, second.agentId, "lost.example.org");
    dns.remove("_vrai.lost.example.org");
    clock.set(T0 + 8 * DAY);
    expect(await proofs.recheckDue()).to.deep.equal({ checked: 2, removed: 0 });
    clock.set(T0 + 15 * DAY);
    expect(await proofs.recheckDue()).to.deep.equal({ checked: 2, removed: 1 });
    expect((await store.read.getProof(lost.id))?.removedAt).to.equal(T0 + 15 * DAY);
    expect((await store.read.getProof(kept.id))?.removedAt).to.equal(null);
    // Years later the wallet proof is still never checked (V6: a signature stays valid).
    clock.set(T0 + 1000 * DAY);
    expect(await proofs.recheckDue()).to.deep.equal({ checked: 1, removed: 0 });
  });

  it("re-checks an ERC-8004 identity's active proof at once when its token moves, and reads its registration file (V6, issue #27)", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    expect(await proofs.recheckErc8004(31337, REGISTRY, 5n)).to.equal(0);
    const proof = await erc8004Proof(ownerId, agentId, 5);
    clock.set(T0 + 60);
    // No chain is configured here: the check fails, once, and the proof is kept.
    expect(await proofs.recheckErc8004(31337, REGISTRY, 5n)).to.equal(1);
    expect(await store.read.getProof(proof.id)).to.include({ lastCheckedAt: T0 + 60, consecutiveFailures: 1, removedAt: null });
    expect(JSON.parse(checkFailures()[0].data)).to.include({ code: "proof_chain_unsupported", nextCheckAt: "2026-11-09T10:01:00Z" });
    expect(refreshed).to.deep.equal([{ proof: proof.id, submission: undefined }]);
    // A registration file that cannot be read is logged, and changes nothing of the proof.
    refreshFails = true;
    clock.set(T0 + 120);
    expect(await proofs.recheckErc8004(31337, REGISTRY, 5n)).to.equal(1);
    expect(await store.read.getProof(proof.id)).to.include({ removedReason: "failed two checks in a row" });
    expect(refreshed).to.have.length(1);
    expect(await proofs.recheckErc8004(31337, REGISTRY, 5n)).to.equal(0);
  });

  it("keeps an ERC-8004 proof whose registration file cannot be read, logging why", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const proof = await erc8004Proof(ownerId, agentId, 6);
    refreshFails = true;
    clock.set(T0 + 7 * DAY);
    expect(await proofs.recheck((await store.read.getProof(proof.id))!)).to.equal("kept");
    expect(refreshed).to.deep.equal([{ proof: proof.id, submission: undefined }]);
    expect(logs.entries("registration file not stored").map((l) => [l.proof, l.err])).to.deep.equal([
      [proof.id, "registration file unreadable"],
    ]);
  });

  it("runs its failures, removals and unreadable registration files without a logger", async () => {
    const { ownerId, agentId } = await ownerWithAgent();
    const silent = createProofChecks({
      store,
      clock,
      identity: service.identity,
      verifier: createProofVerifier({ now: () => clock.now() }),
      registrations: {
        async refresh() {
          throw new Error("registration file unreadable");
        },
      },
    });
    const proof = await erc8004Proof(ownerId, agentId, 11);
    clock.set(T0 + 7 * DAY);
    expect(await silent.recheckDue()).to.deep.equal({ checked: 1, removed: 0 });
    clock.set(T0 + 14 * DAY);
    expect(await silent.recheckDue()).to.deep.equal({ checked: 1, removed: 1 });
    expect((await store.read.getProof(proof.id))?.removedReason).to.equal("failed two checks in a row");
  });
});
