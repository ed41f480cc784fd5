/**
 * Vrai's scores as ERC-8004 feedback, as owners choose it (issue #27): an owner turns publishing on for an agent that
 * holds an active erc8004 proof of an identity in the registry this service gives feedback about, or off; and Vrai turns
 * it off itself when that proof goes (removed by the owner, failed checks, the token moved, a claim by another owner).
 * Turning it off, either way, asks every feedback of the agent to be revoked in the same transaction (the outbox sends
 * it: src/service/erc8004-sender.ts; Vrai's own turning off is src/service/erc8004-stop.ts). What is planned and sent is
 * src/service/erc8004-planning.ts's and the sender's.
 */
import { isAddressEqual, type Address } from "viem";
import type { Erc8004FeedbackRepository, FeedbackRow } from "../store/erc8004-feedback";
import type { Clock } from "./clock";
import { agentUnclaimedError, ConflictError, ForbiddenError, NotFoundError } from "./errors";
import type { ProofRow, Store } from "./ports";
import { formatErc8004Subject, parseErc8004Subject } from "./proofs/kinds/erc8004";

/** Where this service gives feedback: a reputation registry on a chain, about the agents of one identity registry. */
export type FeedbackTarget = { chainId: number; registry: Address; identityRegistry: Address };

/** An agent's publishing: the switch, where feedback goes, and its latest feedback. */
export type PublishingStatus = {
  enabled: boolean;
  /** When it was last turned on or off; null when never. */
  changedAt: number | null;
  /** Why Vrai turned it off; null when the owner set it. */
  reason: string | null;
  /** Where this service gives feedback; null when it gives none. */
  target: FeedbackTarget | null;
  /** The agent's feedback, newest day first (the latest few). */
  feedback: FeedbackRow[];
};

/** A feedback file, byte for byte, and its keccak256. */
export type FeedbackFileBytes = { id: string; file: Uint8Array; fileHash: `0x${string}` };

export type Erc8004Publishing = {
  /**
   * Turns publishing on or off for the owner's agent.
   * @throws ConflictError `erc8004_publishing_unavailable` (this service gives no feedback), `erc8004_proof_required` (no
   *   active ERC-8004 proof), `erc8004_registry_not_served` (an identity of another registry or chain) when turning it on
   */
  set(ownerId: string, agentId: string, enabled: boolean): Promise<PublishingStatus>;
  /** The agent's publishing; agent_not_found otherwise. */
  status(agentId: string): Promise<PublishingStatus>;
  /** A feedback file as served at its feedbackURI; feedback_not_found otherwise. */
  file(id: string): Promise<FeedbackFileBytes>;
};

/** Feedback rows a status carries: the latest day's two tags, and the ones they replaced. */
const STATUS_FEEDBACK = 6;

/** The agent's active erc8004 proof (the latest proven, should it hold two), if any. */
const activeErc8004 = (proofs: readonly ProofRow[], agentId: string): ProofRow | undefined =>
  proofs.filter((p) => p.kind === "erc8004" && p.agentId === agentId).at(-1);

/**
 * The owners' switch over `store`, the feedback of `outbox`; `target` is where this service gives feedback (none: it
 * gives none, and publishing cannot be turned on); `onChanged` is told after a change commits (the sender's wake).
 * @example const publishing = createErc8004Publishing({ store, outbox, clock, target });
 */
export function createErc8004Publishing(deps: {
  store: Store;
  outbox: Erc8004FeedbackRepository;
  clock: Clock;
  target?: FeedbackTarget;
  onChanged?: () => void;
}): Erc8004Publishing {
  const { store, outbox, clock, target } = deps;

  async function status(agentId: string): Promise<PublishingStatus> {
    const [agent, row, feedback] = await Promise.all([
      store.read.getAgent(agentId),
      store.read.getErc8004Publishing(agentId),
      outbox.ofAgent(agentId, STATUS_FEEDBACK),
    ]);
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    return {
      enabled: row?.enabled ?? false,
      changedAt: row?.changedAt ?? null,
      reason: row?.reason ?? null,
      target: target ?? null,
      feedback,
    };
  }

  /** Why the agent's identity cannot be published here, if it cannot. */
  function refusal(agentId: string, proof: ProofRow | undefined): ConflictError | null {
    if (!target)
      return new ConflictError(
        "erc8004_publishing_unavailable",
        "this service gives no ERC-8004 feedback: it has no reputation registry (REPUTATION_REGISTRY or REPUTATION_DEPLOYMENT)",
      );
    if (!proof)
      return new ConflictError(
        "erc8004_proof_required",
        `agent ${agentId} holds no active ERC-8004 proof: ` +
          "prove its identity first (POST /v1/proofs/challenges with kind erc8004), then turn publishing on",
      );
    const identity = parseErc8004Subject(proof.subject);
    if (identity.chainId !== target.chainId || !isAddressEqual(identity.registry, target.identityRegistry)) {
      return new ConflictError(
        "erc8004_registry_not_served",
        `agent ${agentId}'s ERC-8004 identity ${formatErc8004Subject(identity)} ` +
          "is not in the identity registry this service gives feedback about: " +
          `its reputation registry ${target.registry} on chain ${target.chainId} serves identity registry ${target.identityRegistry}`,
      );
    }
    return null;
  }

  async function set(ownerId: string, agentId: string, enabled: boolean): Promise<PublishingStatus> {
    await store.transaction(async (tx) => {
      const agent = await tx.getAgent(agentId, { lock: true });
      if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
      if (agent.releasedAt !== null) throw agentUnclaimedError(agentId, 409);
      if (agent.ownerId !== ownerId)
        throw new ForbiddenError(
          "agent_owned_by_another_owner",
          `agent ${agentId} belongs to another owner: only its owner turns publishing on or off`,
        );
      const at = clock.now();
      if (enabled) {
        const refused = refusal(agentId, activeErc8004(await tx.proofsForAgentAt(agentId, ownerId, at), agentId));
        if (refused) throw refused;
        await tx.setErc8004Publishing({ agentId, enabled: true, changedAt: at, reason: null });
      } else {
        await tx.setErc8004Publishing({ agentId, enabled: false, changedAt: at, reason: null });
        await tx.withdrawErc8004Feedback(agentId, at, "publishing turned off by the owner");
      }
      await tx.audit({
        at,
        actor: "owner",
        action: enabled ? "erc8004.publishing.on" : "erc8004.publishing.off",
        subject: agentId,
        details: {},
      });
    });
    deps.onChanged?.();
    return status(agentId);
  }

  return {
    set,
    status,
    async file(id) {
      const row = await outbox.get(id);
      if (!row) throw new NotFoundError("feedback_not_found", `feedback ${id} does not exist`);
      return { id, file: row.file, fileHash: row.fileHash };
    },
  };
}
