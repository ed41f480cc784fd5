import { expect } from "chai";
import { createVraiService, type VraiService } from ".";
import { createManualClock } from "./clock";
import type { Store } from "./ports";
import { createProofChecks } from "./proof-checks";
import { createProofVerifier } from "./proofs/verifiers";
import { EVERY_STORE } from "../test-helpers/stores";

const T0 = Date.UTC(2026, 9, 1) / 1000; // 2026-10-01T00:00:00Z
const H = 3600;

/** Issue 14's V2, V4.1 and V6 sentences through the service, on every store (replay.test.ts has them through `vrai replay`). */
for (const setup of EVERY_STORE) {
  describe(`claims, proofs and outages to the letter on ${setup.name} (V2, V4.1, V6)`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let service: VraiService;
    const clock = createManualClock(T0);
    let n = 0;

    before(async () => {
      ({ store, close } = await setup.open());
      service = createVraiService({ store, clock, busy: () => false });
    });
    after(() => close());

    /** A claimed agent of a new owner with a github, a domain and an ERC-8004 proof, at T0. */
    async function provenAgent(): Promise<{ agentId: string; ownerId: string }> {
      clock.set(T0);
      const tag = `${setup.name}-${++n}`;
      const { ownerId } = await service.accounts.createOwner();
      const { agentId } = await service.accounts.claimNewAgent(ownerId);
      const proof = (kind: string, agent: string | null) => ({
        id: `${kind}-${tag}`,
        kind,
        ownerId,
        agentId: agent,
        subject: tag,
        binding: agent && `${kind}:${tag}`,
        evidence: {},
      });
      await service.identity.recordProof(proof("github", null));
      await service.identity.recordProof(proof("domain", agentId));
      await service.identity.recordProof(proof("erc8004", agentId));
      return { agentId, ownerId };
    }
    const identityAt = async (agentId: string, at: number) => {
      clock.set(at);
      return (await service.scoring.scoreNow(agentId)).result.components.identity.value;
    };
    const activeKinds = async (agentId: string, ownerId: string, at: number) =>
      (await store.read.proofsForAgentAt(agentId, ownerId, at)).map((p) => p.kind).sort();

    it("removes the agent's domain and ERC-8004 proofs at another owner's claim, keeps them at the same owner's (V2)", async () => {
      const { agentId, ownerId } = await provenAgent();
      expect(await identityAt(agentId, T0 + 1)).to.equal(100 + 30 + 40 + 50);
      clock.set(T0 + 10);
      await service.accounts.reclaim(ownerId, agentId);
      expect(await identityAt(agentId, T0 + 10)).to.equal(220);
      // An operator transfer to the agent's own owner is a re-claim by that owner: it keeps them too.
      clock.set(T0 + 20);
      await service.accounts.transfer(agentId, ownerId, "same owner");
      expect(await identityAt(agentId, T0 + 20)).to.equal(220);
      const { ownerId: other } = await service.accounts.createOwner();
      clock.set(T0 + 30);
      await service.accounts.transfer(agentId, other, "sold", "alice");
      const audit = await store.read.listAudit({ afterId: 0, limit: 10_000 });
      expect(audit.filter((e) => e.action === "agent.transfer" && e.subject === agentId).map((e) => e.actor)).to.deep.equal([
        "operator",
        "alice",
      ]);
      expect(await activeKinds(agentId, ownerId, T0 + 29)).to.deep.equal(["domain", "erc8004", "github"]);
      // At the claim's own instant they are gone; the removal is recorded at that instant.
      expect(await activeKinds(agentId, ownerId, T0 + 30)).to.deep.equal(["github"]);
      expect(await identityAt(agentId, T0 + 30)).to.equal(100);
      const removed = await store.read.getProof(`domain-${setup.name}-${n}`);
      expect(removed).to.include({ removedAt: T0 + 30, removedReason: "agent claimed by another owner" });
    });

    it("rotates an agent's key: the old key is refused at once, the claim and its check-ins stay (no V2 restart)", async () => {
      clock.set(T0 + 100 * H);
      const { ownerId } = await service.accounts.createOwner();
      const claim = await service.accounts.claimNewAgent(ownerId);
      const checkIn = (key: string, idempotencyKey: string) =>
        service.checkins.checkIn(claim.agentId, idempotencyKey, (agent) => service.accounts.checkAgentKey(agent, key));
      expect(await checkIn(claim.agentKey, "first")).to.include({ type: "counted", credit: 0 });
      clock.set(T0 + 101 * H);
      const rotation = await service.accounts.rotateAgentKey(ownerId, claim.agentId);
      expect(rotation).to.include({ agentId: claim.agentId, claimId: claim.claimId, rotatedAt: T0 + 101 * H });
      expect(rotation.agentKey)
        .to.match(new RegExp(`^va_${claim.agentId}\\.`))
        .and.not.equal(claim.agentKey);
      const refused = await checkIn(claim.agentKey, "old key").then(
        () => null,
        (e: unknown) => e,
      );
      expect(refused).to.include({ code: "invalid_agent_key", status: 401 });
      // The same claim: this check-in follows the first one, on time, with its credit (a re-claim would give 0).
      expect(await checkIn(rotation.agentKey, "new key")).to.include({ type: "counted", onTime: true, credit: H });
      expect(await store.read.getAgent(claim.agentId)).to.include({ claimId: claim.claimId, claimedAt: T0 + 100 * H });
      const { ownerId: other } = await service.accounts.createOwner();
      const foreign = await service.accounts.rotateAgentKey(other, claim.agentId).then(
        () => null,
        (e: unknown) => e,
      );
      expect(foreign).to.include({ code: "agent_owned_by_another_owner", status: 403 });
      expect(
        await checkIn(rotation.agentKey, "still the new key").then(
          () => "taken",
          (e: { code: string }) => e.code,
        ),
      ).to.not.equal("invalid_agent_key");
    });

    it("rejects penalties and proofs naming an agent that was never claimed, and changes nothing (V2)", async () => {
      clock.set(T0 + 40);
      const { ownerId } = await service.accounts.createOwner();
      const never = `never-${setup.name}`;
      const refused = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: unknown) => e,
        );
      expect(
        await refused(
          service.operator.addPenalty({ id: `x-${never}`, agentId: never, code: "rate_abuse", points: 20, days: 30, reason: "t" }),
        ),
      ).to.include({ code: "agent_not_found", status: 404 });
      expect(
        await refused(
          service.identity.recordProof({
            id: `d-${never}`,
            kind: "domain",
            ownerId,
            agentId: never,
            subject: never,
            binding: null,
            evidence: {},
          }),
        ),
      ).to.include({ code: "agent_not_found", status: 404 });
      expect(await store.read.getPenalty(`x-${never}`)).to.equal(null);
      expect(await store.read.getProof(`d-${never}`)).to.equal(null);
    });

    it("takes an agent-level proof only from the owner of the latest claim; an owner-level one names no agent (V6)", async () => {
      const { agentId, ownerId } = await provenAgent();
      const { ownerId: other } = await service.accounts.createOwner();
      const proofs = createProofChecks({
        store,
        clock,
        identity: service.identity,
        verifier: createProofVerifier({ now: () => clock.now() }),
      });
      const refused = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: unknown) => e,
        );
      expect(await refused(proofs.issueChallenge(ownerId, { kind: "github", subject: "octocat", agentId }))).to.include({
        code: "proof_agent_not_allowed",
        status: 400,
      });
      expect(
        await refused(proofs.issueChallenge(ownerId, { kind: "wallet", subject: "0x0000000000000000000000000000000000000001", agentId })),
      ).to.include({ code: "proof_agent_not_allowed" });
      expect(await refused(proofs.issueChallenge(other, { kind: "domain", subject: "example.com", agentId }))).to.include({
        code: "agent_owned_by_another_owner",
        status: 403,
      });
      expect(
        await refused(
          service.identity.recordProof({ id: `g-${agentId}`, kind: "github", ownerId, agentId, subject: "x", binding: null, evidence: {} }),
        ),
      ).to.include({ code: "proof_agent_not_allowed" });
      expect(
        await refused(
          service.identity.recordProof({
            id: `p-${agentId}`,
            kind: "passport",
            ownerId,
            agentId: null,
            subject: "x",
            binding: null,
            evidence: {},
          }),
        ),
      ).to.include({ code: "proof_kind_invalid", status: 400 });
      // After the transfer the previous owner is refused and the new one accepted.
      clock.set(T0 + 50);
      await service.accounts.transfer(agentId, other, "sold");
      expect(await refused(proofs.issueChallenge(ownerId, { kind: "domain", subject: "example.com", agentId }))).to.include({
        code: "agent_owned_by_another_owner",
      });
      expect((await proofs.issueChallenge(other, { kind: "domain", subject: "example.com", agentId })).agentId).to.equal(agentId);
    });

    it("rejects closing a window with an end before declared_at when it started more than 48 h before (V4.1)", async () => {
      const declaredAt = T0 + 10 * 86_400;
      clock.set(declaredAt);
      const id = (s: string) => `${s}-${setup.name}`;
      for (const [name, start] of [
        ["w100", declaredAt - 100 * H],
        ["w48", declaredAt - 48 * H],
        ["w48+1", declaredAt - 48 * H - 1],
        ["wEnd", declaredAt - 48 * H - 1],
      ] as const) {
        await service.operator.declareOutage({ id: id(name), start, end: null, reason: "t" });
      }
      clock.set(declaredAt + 60);
      const refused = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: unknown) => e,
        );
      expect(await refused(service.operator.closeOutage(id("w100"), declaredAt - 99 * H))).to.include({
        code: "outage_declared_too_late",
        status: 400,
      });
      expect((await service.operator.closeOutage(id("w48"), declaredAt - 1)).end).to.equal(declaredAt - 1);
      expect(await refused(service.operator.closeOutage(id("w48+1"), declaredAt - 1))).to.include({ code: "outage_declared_too_late" });
      expect((await service.operator.closeOutage(id("wEnd"), declaredAt)).end).to.equal(declaredAt);
      // The rejected closes changed nothing.
      expect(await store.read.getOutage(id("w100"))).to.include({ end: null, closedAt: null });
      expect(await store.read.getOutage(id("w48+1"))).to.include({ end: null, closedAt: null });
    });
  });
}
