import type { Logger } from "pino";
import type { Address } from "viem";
import { toRfc3339 } from "../method";
import type { Clock } from "./clock";
import { agentUnclaimedError, ConflictError, ForbiddenError, NotFoundError } from "./errors";
import { checkProofAgent, type Identity } from "./identity";
import { limitReached, type OwnerLimits } from "./limits";
import type { AccountsTx, ChallengeRow, EventsTx, ProofKind, ProofRow, ProofsTx, Transactions } from "./ports";
import { createChallenge, isExpired } from "./proofs/challenge";
import { proofError } from "./proofs/errors";
import { applyRecheckOutcome, dueForRecheck, nextRecheckAt } from "./proofs/recheck-policy";
import { newEvent } from "./events/record";
import { erc8004Binding, parseErc8004Subject } from "./proofs/kinds/erc8004";
import { NO_PROOF_CONTEXT, type ProofContext } from "./proofs/types";
import type { ProofVerifier, VerifiedProof } from "./proofs/verifiers";
import type { RegistrationFiles } from "./registration-files";
import { generateId } from "./secrets";

/** How long a proof challenge may be answered (V6: challenges expire). */
export const CHALLENGE_TTL_S = 3600;
/** Expired challenges deleted per statement: by an owner asking for a challenge, and by the scheduler until none is left. */
const EXPIRED_CHALLENGES_BATCH = 5000;

/** A challenge issued, and what the service knows of its agent (what its instructions name, e.g. the agent's ERC-8004 identity). */
export type IssuedChallenge = ChallengeRow & { context: ProofContext };

/** The life of an identity proof (V6): challenges, verified submissions, re-checks. */
export type ProofChecks = {
  /** Issues a challenge for the owner to prove `subject` of `kind` (for `agentId` when the kind belongs to one agent). */
  issueChallenge(ownerId: string, input: { kind: ProofKind; subject: string; agentId?: string | null }): Promise<IssuedChallenge>;
  /** One of the owner's challenges, used or not, with what its instructions name; proof_challenge_not_found otherwise. */
  challenge(ownerId: string, challengeId: string): Promise<IssuedChallenge>;
  /** Deletes every challenge expired now; returns how many. */
  deleteExpiredChallenges(): Promise<number>;
  /** Verifies evidence against one of the owner's challenges and records the proof, using the challenge up. */
  submitProof(ownerId: string, challengeId: string, evidence: unknown): Promise<ProofRow>;
  /** Re-checks one proof now; removes it when V6 says so. */
  recheck(proof: ProofRow): Promise<"kept" | "removed">;
  /** Re-checks every proof whose time has come. */
  recheckDue(): Promise<{ checked: number; removed: number }>;
  /** Re-checks at once the active ERC-8004 proof of one identity token (V6: when the token moves); returns how many. */
  recheckErc8004(chainId: number, registry: Address, agentId: bigint): Promise<number>;
};

/**
 * The life of an identity proof (V6): a challenge issued and remembered (single use, expiring),
 * its verification against the real source, and the scheduled re-checks that keep or remove it.
 */
export function createProofChecks(deps: {
  store: Transactions<AccountsTx & ProofsTx & EventsTx>;
  clock: Clock;
  identity: Identity;
  verifier: ProofVerifier;
  logger?: Logger;
  /** What one owner may keep (none: no limit). */
  limits?: Pick<OwnerLimits, "openChallenges">;
  /** Where an erc8004 proof's registration file is read and kept, when it is made and at its re-checks (issue #27); none: not read. */
  registrations?: Pick<RegistrationFiles, "refresh">;
}): ProofChecks {
  const { store, clock, identity, verifier } = deps;

  /** What a proof of `agentId` is verified in now: the ERC-8004 identities of the agent's active erc8004 proofs, latest first. */
  async function contextOf(agentId: string | null): Promise<ProofContext> {
    const agent = agentId === null ? null : await store.read.getAgent(agentId);
    if (!agent) return NO_PROOF_CONTEXT;
    const proofs = await store.read.proofsForAgentAt(agent.id, agent.ownerId, clock.now());
    const erc8004 = proofs.filter((p) => p.kind === "erc8004" && p.agentId === agent.id).reverse();
    return { erc8004: erc8004.map((p) => parseErc8004Subject(p.subject)) };
  }

  /** Reads the registration file of an erc8004 proof (issue #27): what it is never changes the proof or a score. */
  async function readRegistration(proof: ProofRow, options: { submission?: boolean } = {}): Promise<void> {
    if (proof.kind !== "erc8004" || !deps.registrations) return;
    try {
      await deps.registrations.refresh(proof, options);
    } catch (error) {
      deps.logger?.warn({ proof: proof.id, err: error instanceof Error ? error.message : String(error) }, "registration file not stored");
    }
  }

  /**
   * Issues a challenge for `ownerId` to prove `subject` of `kind`: for `agentId` when the kind
   * belongs to one agent, which must be claimed, its latest claim by this owner; naming no agent
   * when it belongs to the owner (V2, V6). The owner's expired challenges are deleted first.
   * @throws ConflictError `limit_reached` when the owner has as many open challenges as `limits.openChallenges`
   */
  async function issueChallenge(
    ownerId: string,
    input: { kind: ProofKind; subject: string; agentId?: string | null },
  ): Promise<IssuedChallenge> {
    checkProofAgent(input.kind, input.agentId ?? null);
    if (input.agentId) {
      const agent = await store.read.getAgent(input.agentId);
      if (!agent) throw new NotFoundError("agent_not_found", `agent ${input.agentId} does not exist`);
      if (agent.releasedAt !== null) throw agentUnclaimedError(input.agentId, 409);
      if (agent.ownerId !== ownerId) {
        throw new ForbiddenError(
          "agent_owned_by_another_owner",
          `agent ${input.agentId} belongs to another owner: only the owner of its latest claim proves it`,
        );
      }
    }
    const c = createChallenge({
      kind: input.kind,
      subject: input.subject,
      ownerId,
      agentId: input.agentId ?? null,
      now: clock.now(),
      ttlS: CHALLENGE_TTL_S,
    });
    const row: ChallengeRow = {
      id: c.id,
      kind: c.kind,
      ownerId,
      agentId: c.agentId,
      subject: c.subject,
      nonce: c.nonce,
      token: c.token,
      message: c.message,
      issuedAt: c.issuedAt,
      expiresAt: c.expiresAt,
      usedAt: null,
    };
    await store.transaction(async (tx) => {
      // Locked: two requests of one owner at its limit are counted one after the other, so one is refused.
      if (!(await tx.getOwner(ownerId, { lock: true }))) throw new NotFoundError("owner_not_found", `owner ${ownerId} does not exist`);
      await tx.deleteExpiredChallenges(row.issuedAt, { ownerId, limit: EXPIRED_CHALLENGES_BATCH });
      const limit = deps.limits?.openChallenges;
      if (limit !== undefined && (await tx.countOpenChallenges(ownerId, row.issuedAt)) >= limit) {
        throw limitReached(
          "open proof challenges",
          limit,
          "MAX_OPEN_CHALLENGES_PER_OWNER",
          `answer one, or wait until one expires (challenges expire ${CHALLENGE_TTL_S} s after they are issued)`,
        );
      }
      await tx.insertChallenge(row);
    });
    return { ...row, context: await contextOf(row.agentId) };
  }

  /** Deletes every challenge expired now, a batch per statement (an expired challenge can no longer be answered); returns how many. */
  async function deleteExpiredChallenges(): Promise<number> {
    const now = clock.now();
    for (let deleted = 0; ; ) {
      const n = await store.transaction((tx) => tx.deleteExpiredChallenges(now, { limit: EXPIRED_CHALLENGES_BATCH }));
      deleted += n;
      if (n < EXPIRED_CHALLENGES_BATCH) return deleted;
    }
  }

  /** Challenge `challengeId` of `ownerId`; proof_challenge_not_found when it is not one (another owner's included). */
  async function ownedChallenge(ownerId: string, challengeId: string): Promise<ChallengeRow> {
    const challenge = await store.read.getChallenge(challengeId);
    if (!challenge || challenge.ownerId !== ownerId)
      throw new NotFoundError("proof_challenge_not_found", `challenge ${challengeId} does not exist for this owner`);
    return challenge;
  }

  /** Verifies `evidence` against challenge `challengeId` of `ownerId`, and records the proof (using the challenge up). */
  async function submitProof(ownerId: string, challengeId: string, evidence: unknown): Promise<ProofRow> {
    const challenge = await ownedChallenge(ownerId, challengeId);
    if (challenge.usedAt !== null) throw new ConflictError("proof_challenge_used", `challenge ${challengeId} was already used`);
    if (isExpired(challenge, clock.now()))
      throw proofError("proof_challenge_expired", `challenge ${challengeId} expired at ${toRfc3339(challenge.expiresAt)}`);
    const verified = await verifier.verify(challenge, evidence, await contextOf(challenge.agentId));
    const proof = await identity.recordProof(
      {
        id: generateId("prf"),
        kind: challenge.kind,
        ownerId,
        agentId: challenge.agentId,
        subject: challenge.subject,
        binding: verified.binding,
        evidence: verified.proof,
      },
      { challengeId },
    );
    await readRegistration(proof, { submission: true });
    return proof;
  }

  /** Re-checks one proof now (the schedule, or an ERC-8004 token move); removes it when V6 says so. */
  async function recheck(proof: ProofRow): Promise<"kept" | "removed"> {
    const outcome = await verifier.recheck(proof.evidence as VerifiedProof, await contextOf(proof.agentId));
    const decision = applyRecheckOutcome(proof, outcome);
    const at = clock.now();
    if (decision.action === "keep") {
      await store.transaction(async (tx) => {
        await tx.updateProofCheck(proof.id, { lastCheckedAt: at, consecutiveFailures: decision.consecutiveFailures });
        if (outcome.type !== "failed") return;
        // Told in the check's transaction (issue #28): one more failure in a row removes it (V6).
        const next = nextRecheckAt({ kind: proof.kind, lastCheckedAt: at });
        await tx.recordEvents([
          newEvent("proof.check_failed", proof.ownerId, at, {
            proofId: proof.id,
            kind: proof.kind,
            subject: proof.subject,
            agentId: proof.agentId,
            code: outcome.code,
            message: outcome.message,
            consecutiveFailures: decision.consecutiveFailures,
            nextCheckAt: next === null ? null : toRfc3339(next),
          }),
        ]);
      });
      if (outcome.type === "failed") deps.logger?.warn({ proof: proof.id, kind: proof.kind, code: outcome.code }, "proof check failed");
      // Each weekly re-check reads the identity's registration file again (issue #27).
      await readRegistration(proof);
      return "kept";
    }
    const reason = decision.reason === "moved" ? "the identity token moved to another wallet" : "failed two checks in a row";
    await identity.removeProof(proof.id, reason, { actor: "scheduler" });
    deps.logger?.info({ proof: proof.id, kind: proof.kind, reason }, "proof removed");
    return "removed";
  }

  /** Re-checks every proof whose time has come (V6 table); returns how many were checked and removed. */
  async function recheckDue(): Promise<{ checked: number; removed: number }> {
    const now = clock.now();
    let checked = 0;
    let removed = 0;
    for (const proof of await store.read.listActiveProofs()) {
      if (!dueForRecheck(proof, now)) continue;
      checked++;
      if ((await recheck(proof)) === "removed") removed++;
    }
    return { checked, removed };
  }

  /** Re-checks at once the active ERC-8004 proofs of one identity token (V6: when the token moves). */
  async function recheckErc8004(chainId: number, registry: Address, agentId: bigint): Promise<number> {
    const proof = await store.read.findActiveBinding(erc8004Binding({ chainId, registry, agentId }));
    if (!proof) return 0;
    await recheck(proof);
    return 1;
  }

  async function challenge(ownerId: string, challengeId: string): Promise<IssuedChallenge> {
    const row = await ownedChallenge(ownerId, challengeId);
    return { ...row, context: await contextOf(row.agentId) };
  }

  return { issueChallenge, challenge, deleteExpiredChallenges, submitProof, recheck, recheckDue, recheckErc8004 };
}
