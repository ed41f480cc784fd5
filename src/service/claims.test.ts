import { expect } from "chai";
import { createVraiService, type VraiService } from ".";
import { createAccounts } from "./accounts";
import { createManualClock } from "./clock";
import type { Store } from "./ports";
import { createProofChecks } from "./proof-checks";
import { createProofVerifier } from "./proofs/verifiers";
import { provenAgent as provenAgentOf } from "../test-helpers/proven-agent";
import { EVERY_STORE } from "../test-helpers/stores";

const T0 = Date.UTC(2026, 9, 1) / 1000; // 2026-10-01T00:00:00Z
const H = 3600;

/**
 * Issue 14's V2, V4.1 and V6 sentences through the service, on every store (replay.test.ts has them through `vrai replay`), and
 * an owner unclaiming an agent (issue #29), after which any owner claims it (V2).
 */
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

    /** A claimed agent of a new owner with a github, a domain and an ERC-8004 proof (ids `<kind>-<tag>`), and its key, at T0. */
    async function provenAgent(): Promise<{ agentId: string; ownerId: string; agentKey: string; tag: string }> {
      clock.set(T0);
      const tag = `${setup.name}-${++n}`;
      return { ...(await provenAgentOf(service, tag)), tag };
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

    describe("unclaiming an agent (issue #29)", () => {
      /** What a promise was refused with (null when it was not). */
      const refusal = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: unknown) => e,
        );
      const checkIn = (agentId: string, key: string, idempotencyKey: string) =>
        service.checkins.checkIn(agentId, idempotencyKey, (agent) => service.accounts.checkAgentKey(agent, key));
      const scoresOf = async (agentId: string) => (await store.read.scoresAfter(0, 100_000)).filter((s) => s.agentId === agentId).length;

      it("stops the key, removes its domain and ERC-8004 proofs, and takes it out of the owner's agents, count and recomputes", async () => {
        const { agentId, ownerId, agentKey, tag } = await provenAgent();
        const kept = await service.accounts.claimNewAgent(ownerId, { name: "kept" });
        expect(await checkIn(agentId, agentKey, "before")).to.include({ type: "counted" });
        clock.set(T0 + H);
        const unclaimed = await service.accounts.unclaim(ownerId, agentId);
        expect(unclaimed).to.deep.equal({ agentId, unclaimedAt: T0 + H, removedProofs: [`domain-${tag}`, `erc8004-${tag}`] });
        expect(await store.read.getAgent(agentId)).to.include({ releasedAt: T0 + H, ownerId, lateDeadline: null });

        // The key: refused from then on, however the agent is asked for.
        clock.set(T0 + 2 * H);
        expect(await refusal(checkIn(agentId, agentKey, "after"))).to.include({ code: "invalid_agent_key", status: 401 });
        expect(await refusal(service.accounts.authenticateAgent(agentId, agentKey))).to.include({ status: 401 });
        // Its proofs of one agent, removed at that instant with the reason; the owner's own proof stays the owner's.
        expect(await store.read.getProof(`domain-${tag}`)).to.include({ removedAt: T0 + H, removedReason: "agent unclaimed" });
        expect(await store.read.getProof(`erc8004-${tag}`)).to.include({ removedAt: T0 + H, removedReason: "agent unclaimed" });
        expect(await activeKinds(agentId, ownerId, T0 + H)).to.deep.equal(["github"]);
        expect(await store.read.getProof(`github-${tag}`)).to.include({ removedAt: null });
        // The owner's agents and their count: only the one it kept.
        expect(await store.read.listAgentsOfOwner(ownerId)).to.deep.equal([kept.agentId]);
        expect(await store.read.listAgentsOfOwner(ownerId, { limit: 10 })).to.deep.equal([kept.agentId]);
        expect(await store.read.countAgentsOfOwner(ownerId)).to.equal(1);
        const everyClaimed = await store.read.listClaimedAgentIds({ limit: 100_000 });
        expect(everyClaimed).to.include(kept.agentId).and.not.include(agentId);
        const audit = await store.read.listAudit({ afterId: 0, limit: 100_000 });
        expect(audit.filter((e) => e.action === "agent.unclaim" && e.subject === agentId)).to.have.length(1);

        // No score is computed for it: not at the unclaim, not by a change, not by the daily or the owner's recompute.
        const stored = await scoresOf(agentId);
        await service.operator.addPenalty({ id: `pen-${tag}`, agentId, code: "rate_abuse", points: 10, days: 30, reason: "t" });
        await service.identity.recordProof({
          id: `wallet-${tag}`,
          kind: "wallet",
          ownerId,
          agentId: null,
          subject: tag,
          binding: null,
          evidence: {},
        });
        await service.ownerRecomputes.drain();
        clock.set(Date.UTC(2026, 9, 2) / 1000);
        expect(await service.scoring.recomputeDay("2026-10-02")).to.be.greaterThan(0);
        expect(await store.read.hasDailyScore(kept.agentId, "2026-10-02")).to.equal(true);
        expect(await store.read.hasDailyScore(agentId, "2026-10-02")).to.equal(false);
        expect(await scoresOf(agentId)).to.equal(stored);
      });

      it("refuses another owner's agent (403), an unknown one (404) and an agent unclaimed already (409), changing nothing", async () => {
        const { agentId, ownerId, agentKey } = await provenAgent();
        const { ownerId: other } = await service.accounts.createOwner();
        expect(await refusal(service.accounts.unclaim(other, agentId))).to.include({ code: "agent_owned_by_another_owner", status: 403 });
        expect(await refusal(service.accounts.unclaim(ownerId, "agt_nobody"))).to.include({ code: "agent_not_found", status: 404 });
        expect(await store.read.getAgent(agentId)).to.include({ releasedAt: null });
        expect(await checkIn(agentId, agentKey, "still mine")).to.include({ type: "counted" });
        await service.accounts.unclaim(ownerId, agentId);
        for (const by of [ownerId, other]) {
          expect(await refusal(service.accounts.unclaim(by, agentId))).to.include({ code: "agent_unclaimed", status: 409 });
        }
        // Nothing but a new claim changes it: a new key and new proofs of it are refused.
        expect(await refusal(service.accounts.rotateAgentKey(ownerId, agentId))).to.include({ code: "agent_unclaimed", status: 409 });
        const proofs = createProofChecks({
          store,
          clock,
          identity: service.identity,
          verifier: createProofVerifier({ now: () => clock.now() }),
        });
        expect(await refusal(proofs.issueChallenge(ownerId, { kind: "domain", subject: "example.com", agentId }))).to.include({
          code: "agent_unclaimed",
          status: 409,
        });
        expect(
          await refusal(
            service.identity.recordProof({
              id: `late-${agentId}`,
              kind: "domain",
              ownerId,
              agentId,
              subject: "late.example.com",
              binding: `domain:late-${agentId}`,
              evidence: {},
            }),
          ),
        ).to.include({ code: "agent_unclaimed", status: 409 });
      });

      it("refuses a check-in decided before the unclaim and committed after it (the write's compare-and-set)", async () => {
        const { agentId, ownerId, agentKey } = await provenAgent();
        // Admitted (its key held), then the owner unclaims it before the check-in is written: decided again, and refused.
        const racing = service.checkins.checkIn(
          agentId,
          "racing",
          (agent) => service.accounts.checkAgentKey(agent, agentKey),
          async () => {
            await service.accounts.unclaim(ownerId, agentId);
          },
        );
        expect(await refusal(racing)).to.include({ code: "invalid_agent_key", status: 401 });
        expect((await store.read.getAgent(agentId))?.last).to.equal(null);
      });

      it("lets any owner claim an unclaimed agent: a new claim with a new key, counted toward its limit, without the proofs", async () => {
        clock.set(T0 + 30 * H);
        const accounts = createAccounts({ store, clock, limits: { agents: 1 } });
        const { ownerId: first } = await accounts.createOwner();
        const claim = await accounts.claimNewAgent(first);
        await service.identity.recordProof({
          id: `domain-re-${setup.name}`,
          kind: "domain",
          ownerId: first,
          agentId: claim.agentId,
          subject: `re-${setup.name}`,
          binding: `domain:re-${setup.name}`,
          evidence: {},
        });
        expect(await checkIn(claim.agentId, claim.agentKey, "same key twice")).to.include({ type: "counted" });
        // At its limit, the owner frees room by unclaiming.
        expect(await refusal(accounts.claimNewAgent(first))).to.include({ code: "limit_reached" });
        clock.set(T0 + 31 * H);
        await accounts.unclaim(first, claim.agentId);
        const another = await accounts.claimNewAgent(first);

        // Another owner at its limit is refused; one with room claims it.
        const { ownerId: full } = await accounts.createOwner();
        await accounts.claimNewAgent(full);
        expect(await refusal(accounts.reclaim(full, claim.agentId))).to.include({ code: "limit_reached", status: 409 });
        const { ownerId: second } = await accounts.createOwner();
        clock.set(T0 + 32 * H);
        const reclaimed = await accounts.reclaim(second, claim.agentId);
        expect(reclaimed).to.include({ agentId: claim.agentId, ownerId: second, claimedAt: T0 + 32 * H });
        expect(reclaimed.claimId).to.not.equal(claim.claimId);
        expect(reclaimed.agentKey).to.not.equal(claim.agentKey);
        expect(await store.read.getAgent(claim.agentId)).to.include({ ownerId: second, releasedAt: null, last: null });
        expect(await store.read.listAgentsOfOwner(second)).to.deep.equal([claim.agentId]);
        expect(await store.read.listAgentsOfOwner(first)).to.deep.equal([another.agentId]);
        expect(await store.read.listClaimedAgentIds({ limit: 100_000 })).to.include(claim.agentId);
        // V2: the old key is refused, the new one counts, and an idempotency key of the earlier claim is forgotten (counted, with no credit).
        expect(await refusal(checkIn(claim.agentId, claim.agentKey, "old key"))).to.include({ code: "invalid_agent_key" });
        expect(await checkIn(claim.agentId, reclaimed.agentKey, "same key twice")).to.include({ type: "counted", credit: 0 });
        // The proof of the first owner is not the new owner's (removed at the unclaim, and never active again).
        expect(await activeKinds(claim.agentId, second, T0 + 32 * H)).to.deep.equal([]);
        expect(await store.read.getProof(`domain-re-${setup.name}`)).to.include({ removedAt: T0 + 31 * H });
        // Unclaimed again, it is anyone's: the first owner claims it back.
        await accounts.unclaim(second, claim.agentId);
        await accounts.unclaim(first, another.agentId);
        expect((await accounts.reclaim(first, claim.agentId)).ownerId).to.equal(first);
      });
    });
  });
}
