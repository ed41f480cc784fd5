import type { ProofKind } from "../method";
import { InvalidInputError } from "../errors";
import type { Clock } from "./clock";
import { stopErc8004Publishing } from "./erc8004-stop";
import { agentUnclaimedError, ConflictError, ForbiddenError, NotFoundError } from "./errors";
import { newEvent } from "./events/record";
import type { ProofRow, Store, StoreTx } from "./ports";
import { currentProofRule, OFFERED_PROOF_KINDS, proofKindModule, type VerifiedProof } from "./proofs/kinds";

/** Records and removes identity proofs (V6), recomputing the scores they count for. */
export type Identity = {
  /** Records a verified proof and recomputes the agents it counts for. */
  recordProof(
    input: Omit<VerifiedProofInput, "kind"> & { kind: string },
    options?: { challengeId?: string; agentField?: string },
  ): Promise<ProofRow>;
  /** Removes a proof (by its owner, or after failed checks) and recomputes the agents it counted for. */
  removeProof(id: string, reason: string, options?: { ownerId?: string; actor?: string }): Promise<ProofRow>;
};

/**
 * V6: an agent-level proof names its agent; an owner-level one names none, since it counts for every
 * agent of its owner (the current method's table says which a kind is).
 * @param field where the caller names the agent, said in the error (the API's `agentId`)
 * @throws InvalidInputError `proof_agent_required` | `proof_agent_not_allowed`
 */
export function checkProofAgent(kind: ProofKind, agentId: string | null, field = "agentId"): void {
  const belongsTo = currentProofRule(kind).belongsTo;
  if (belongsTo === "agent" && agentId === null) {
    throw new InvalidInputError("proof_agent_required", `a ${kind} proof belongs to one agent: name the agent (${field})`);
  }
  if (belongsTo === "owner" && agentId !== null) {
    throw new InvalidInputError(
      "proof_agent_not_allowed",
      `a ${kind} proof belongs to the owner and counts for all its agents: leave ${field} out`,
    );
  }
}

type BindingInput = Pick<ProofRow, "binding" | "subject" | "agentId" | "ownerId">;

/**
 * The 409 of a proof whose subject is already bound (V6): to the same holder (nothing to do), or to another,
 * an agent for an agent-level proof (domain, erc8004) and an owner for an owner-level one (github, wallet),
 * each said in its code and its message with what frees the subject.
 */
function bindingConflict(input: BindingInput, by: "this" | "another"): ConflictError {
  const holder = input.agentId === null ? "owner" : "agent";
  if (by === "this") {
    return new ConflictError(
      "proof_already_proven",
      `${input.subject} is already proven by this ${holder}${input.agentId === null ? "" : ` (${input.agentId})`}: ` +
        "nothing to do; GET /v1/agents/{id}/proofs lists it",
    );
  }
  return holder === "agent"
    ? new ConflictError(
        "proof_bound_to_another_agent",
        `${input.subject} is already proven by another agent: it proves one agent at a time (V6), ` +
          "so that agent's owner must remove its proof (DELETE /v1/proofs/{id}) first",
      )
    : new ConflictError(
        "proof_bound_to_another_owner",
        `${input.subject} is already proven by another owner: it proves one owner at a time (V6), for all that owner's agents; ` +
          "prove it with that owner's token, or remove the proof there (DELETE /v1/proofs/{id}) first",
      );
}

/** V6: a subject is bound to one agent at a time; while a proof holds the binding, another is refused. */
async function refuseHeldBinding(tx: StoreTx, input: BindingInput): Promise<void> {
  const holder = input.binding === null ? null : await tx.findActiveBinding(input.binding);
  if (holder) throw bindingConflict(input, holder.agentId === input.agentId && holder.ownerId === input.ownerId ? "this" : "another");
}

/** `proof.removed` of `proof`, removed at `at` for `reason` (issue #28). */
export const proofRemovedEvent = (proof: ProofRow, at: number, reason: string) =>
  newEvent("proof.removed", proof.ownerId, at, {
    proofId: proof.id,
    kind: proof.kind,
    subject: proof.subject,
    agentId: proof.agentId,
    reason,
  });

/** A proof that passed its check, ready to be recorded (V6). */
export type VerifiedProofInput = Pick<ProofRow, "id" | "kind" | "ownerId" | "agentId" | "subject" | "binding" | "evidence">;

/**
 * Records and removes identity proofs (V6) and recomputes the scores they count for (V6, V9).
 * Verification against the outside world happens before (src/service/proofs); this module keeps
 * the rules that hold whatever the source: who a proof belongs to and the one-agent bindings.
 * @param deps.onChanged recomputes one agent inside the change's transaction (an agent-level proof)
 * @param deps.onOwnerRecomputeRequested told after the commit of a change that asked for every agent
 *   of an owner to be recomputed (an owner-level proof): the request is stored with the change and
 *   done in the background (src/service/owner-recomputes.ts), since an owner may have thousands of agents
 */
export function createIdentity(deps: {
  store: Store;
  clock: Clock;
  onChanged: (tx: StoreTx, agentId: string, at: number) => Promise<void>;
  onOwnerRecomputeRequested?: () => void;
}): Identity {
  const { store, clock } = deps;

  /** Recomputes what a proof counts for (V6 "belongs to"): its agent at once, in `tx`; every agent of its owner by a request stored in `tx`. */
  async function recomputeCountedBy(tx: StoreTx, proof: Pick<ProofRow, "agentId" | "ownerId">, at: number): Promise<void> {
    if (proof.agentId !== null) await deps.onChanged(tx, proof.agentId, at);
    else await tx.requestOwnerRecompute(proof.ownerId, at);
  }

  /** Runs a change of one proof in a transaction; once committed, tells of the owner's recompute an owner-level proof asked for. */
  async function change(fn: (tx: StoreTx) => Promise<ProofRow>): Promise<ProofRow> {
    const proof = await store.transaction(fn);
    if (proof.agentId === null) deps.onOwnerRecomputeRequested?.();
    return proof;
  }

  /**
   * Records a verified proof and recomputes the agents it counts for. V6: an owner-level proof names no
   * agent; an agent-level one names an agent that was claimed (V2), and is accepted only from the owner
   * of its latest claim.
   * @param input its kind as given (replay passes the timeline's): one that is not a V6 kind is rejected
   * @param options.challengeId the challenge it answers, used up in the same transaction (single use)
   * @param options.agentField where the caller named the agent, for the error of one named or missing (default `agentId`)
   */
  async function recordProof(
    input: Omit<VerifiedProofInput, "kind"> & { kind: string },
    options: { challengeId?: string; agentField?: string } = {},
  ): Promise<ProofRow> {
    const kind = OFFERED_PROOF_KINDS.find((offered) => offered === input.kind);
    if (kind === undefined)
      throw new InvalidInputError(
        "proof_kind_invalid",
        `proof kind must be one of ${OFFERED_PROOF_KINDS.join(", ")}, got ${JSON.stringify(input.kind)}`,
      );
    checkProofAgent(kind, input.agentId, options.agentField);
    return change(async (tx) => {
      if (!(await tx.getOwner(input.ownerId))) throw new NotFoundError("owner_not_found", `owner ${input.ownerId} does not exist`);
      if (input.agentId !== null) {
        const agent = await tx.getAgent(input.agentId, { lock: true });
        if (!agent) throw new NotFoundError("agent_not_found", `agent ${input.agentId} does not exist`);
        if (agent.releasedAt !== null) throw agentUnclaimedError(input.agentId, 409);
        if (agent.ownerId !== input.ownerId) {
          throw new ForbiddenError(
            "agent_owned_by_another_owner",
            `agent ${input.agentId} belongs to another owner: only the owner of its latest claim proves it`,
          );
        }
      }
      if (await tx.getProof(input.id)) throw new ConflictError("proof_exists", `proof ${input.id} already exists`);
      await refuseHeldBinding(tx, input);
      const at = clock.now();
      if (options.challengeId !== undefined && !(await tx.useChallenge(options.challengeId, at))) {
        throw new ConflictError("proof_challenge_used", `challenge ${options.challengeId} was already used`);
      }
      const proof: ProofRow = {
        ...input,
        kind,
        verifiedAt: at,
        lastCheckedAt: at,
        consecutiveFailures: 0,
        removedAt: null,
        removedReason: null,
      };
      if (!(await tx.insertProof(proof))) {
        // Another submission bound the subject first and committed while this one waited for it:
        // the same 409 as had it come later (nothing is written; the challenge's use rolls back).
        await refuseHeldBinding(tx, input);
        throw bindingConflict(input, "another");
      }
      await tx.recordEvents([
        newEvent("proof.added", proof.ownerId, at, { proofId: proof.id, kind: proof.kind, subject: proof.subject, agentId: proof.agentId }),
      ]);
      await recomputeCountedBy(tx, proof, at);
      return proof;
    });
  }

  /**
   * The agent's active proofs that rest on `proof` (a domain proven by the endpoint-domain verification of the
   * ERC-8004 identity `proof` proves): they go with it.
   */
  async function restingOn(tx: StoreTx, proof: ProofRow, at: number): Promise<ProofRow[]> {
    if (proof.agentId === null || proof.binding === null) return [];
    const active = await tx.proofsForAgentAt(proof.agentId, proof.ownerId, at);
    return active.filter(
      (p) =>
        p.id !== proof.id &&
        p.agentId === proof.agentId &&
        proofKindModule(p.kind).reliesOn?.(p.evidence as VerifiedProof) === proof.binding,
    );
  }

  /**
   * Removes a proof (by its owner, or after failed checks) and recomputes the agents it counted for. The agent's proofs
   * that rest on it are removed with it, in the same change.
   * @param ownerId when given, only this owner's proof may be removed
   */
  async function removeProof(id: string, reason: string, options: { ownerId?: string; actor?: string } = {}): Promise<ProofRow> {
    return change(async (tx) => {
      const proof = await tx.getProof(id);
      if (!proof) throw new NotFoundError("proof_not_found", `proof ${id} does not exist`);
      if (options.ownerId !== undefined && proof.ownerId !== options.ownerId)
        throw new ForbiddenError("proof_owned_by_another_owner", `proof ${id} belongs to another owner`);
      if (proof.removedAt !== null) throw new ConflictError("proof_already_removed", `proof ${id} was already removed`);
      const at = clock.now();
      const dependents = await restingOn(tx, proof, at);
      const title = proofKindModule(proof.kind).title;
      for (const [removed, why] of [
        [proof, reason],
        ...dependents.map((d): [ProofRow, string] => [d, `the ${title} proof it rests on (${proof.id}) was removed: ${reason}`]),
      ] as const) {
        await tx.removeProof(removed.id, at, why);
        await tx.audit({
          at,
          actor: options.actor ?? "owner",
          action: "proof.remove",
          subject: removed.id,
          details: { reason: why, kind: removed.kind, agentId: removed.agentId },
        });
        await tx.recordEvents([proofRemovedEvent(removed, at, why)]);
      }
      // Vrai's feedback about an identity the agent no longer proves stops with the proof (issue #27).
      if (proof.kind === "erc8004" && proof.agentId !== null)
        await stopErc8004Publishing(tx, proof.agentId, at, `its ERC-8004 proof was removed (${reason})`);
      await recomputeCountedBy(tx, proof, at);
      return { ...proof, removedAt: at, removedReason: reason };
    });
  }

  return { recordProof, removeProof };
}
