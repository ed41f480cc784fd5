import { toRfc3339 } from "../method";
import type { Clock } from "./clock";
import { stopErc8004Publishing } from "./erc8004-stop";
import { UNNAMED_OPERATOR } from "./operator";
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from "./errors";
import { limitReached, type OwnerLimits } from "./limits";
import type { AgentRow, OwnerRow, Store, StoreTx } from "./ports";
import { generateId, generateSecret, hashSecret, secretMatches } from "./secrets";
import { newEvent } from "./events/record";
import { proofRemovedEvent } from "./identity";

/** Owners and claims (METHOD V2), and the secrets that identify owners and agents. */
export type Accounts = {
  /** Creates an owner; its token is returned this once and only its hash is stored. */
  createOwner(options?: { ownerId?: string }): Promise<{ ownerId: string; token: string }>;
  /** The owner an owner token belongs to; 401 when it matches none. */
  authenticateOwner(token: string): Promise<string>;
  /** A new owner token for the owner, returned this once; the old one stops at once (issue #29). */
  rotateOwnerToken(ownerId: string): Promise<string>;
  /** Checks an agent key against the agent's stored key hash; 401 when it does not match. */
  checkAgentKey(agent: AgentRow | null, agentKey: string): asserts agent is AgentRow;
  /** The agent an agent key belongs to; 401 when it is not that agent's key. */
  authenticateAgent(agentId: string, agentKey: string): Promise<AgentRow>;
  /** An owner claims a new agent (V2); its key is returned once. */
  claimNewAgent(ownerId: string, options?: { agentId?: string; name?: string | null }): Promise<ClaimResult>;
  /** The owner claims its own agent again: a new key, and everything V2 restarts. */
  reclaim(ownerId: string, agentId: string): Promise<ClaimResult>;
  /** A new key for the owner's agent, returned once; the old key stops at once, and nothing else changes (no new claim, V2). */
  rotateAgentKey(ownerId: string, agentId: string): Promise<KeyRotation>;
  /** An operator transfers an agent to an owner (V2, logged). */
  transfer(agentId: string, toOwnerId: string, reason: string, actor?: string): Promise<ClaimResult>;
};

/** An owner token: `vo_<owner id>.<256 random bits>`, so the owner is found without a search and the secret checked in constant time. */
const newOwnerToken = (ownerId: string): string => `vo_${ownerId}.${generateSecret("t")}`;

/** Who is calling, once a token or key has been checked. */
export type Actor = { type: "owner"; ownerId: string } | { type: "operator" } | { type: "agent"; agentId: string };

export type ClaimResult = { agentId: string; ownerId: string; agentKey: string; claimId: number; claimedAt: number };

/** A rotated agent key: the new key (shown once) and the claim it is the key of, unchanged. */
export type KeyRotation = { agentId: string; agentKey: string; claimId: number; rotatedAt: number };

/**
 * Creates owners, claims agents (new claim, re-claim by the owner, operator transfer) and checks
 * the secrets that identify owners and agents.
 * @param deps.onClaimed called inside the claim's transaction, to recompute the score at once (V9)
 * @param deps.limits what one owner may keep (none: no limit)
 */
export function createAccounts(deps: {
  store: Store;
  clock: Clock;
  onClaimed?: (tx: StoreTx, agentId: string, at: number) => Promise<void>;
  limits?: Pick<OwnerLimits, "agents">;
}): Accounts {
  const { store, clock } = deps;

  /** Creates an owner; the token is returned here once and only its hash is stored. */
  async function createOwner(options: { ownerId?: string } = {}): Promise<{ ownerId: string; token: string }> {
    const ownerId = options.ownerId ?? generateId("own");
    const token = newOwnerToken(ownerId);
    const owner: OwnerRow = { id: ownerId, tokenHash: hashSecret(token), createdAt: clock.now() };
    await store.transaction(async (tx) => {
      if (await tx.getOwner(ownerId)) throw new ConflictError("owner_exists", `owner ${ownerId} already exists`);
      await tx.insertOwner(owner);
    });
    return { ownerId, token };
  }

  /** A new owner token for the owner, returned this once; the old one stops at once. */
  async function rotateOwnerToken(ownerId: string): Promise<string> {
    const token = newOwnerToken(ownerId);
    await store.transaction(async (tx) => {
      if (!(await tx.getOwner(ownerId, { lock: true }))) throw new NotFoundError("owner_not_found", `owner ${ownerId} does not exist`);
      await tx.setOwnerTokenHash(ownerId, hashSecret(token));
    });
    return token;
  }

  /** The owner an owner token belongs to; 401 when it matches none. */
  async function authenticateOwner(token: string): Promise<string> {
    const match = /^vo_([A-Za-z0-9_-]{1,64})\./.exec(token);
    const owner = match ? await store.read.getOwner(match[1]) : null;
    if (!owner || !secretMatches(token, owner.tokenHash))
      throw new UnauthorizedError("invalid_owner_token", "the owner token is not valid");
    return owner.id;
  }

  /** Checks an agent key against the agent's stored key hash; 401 when it does not match. */
  function checkAgentKey(agent: AgentRow | null, agentKey: string): asserts agent is AgentRow {
    if (!agent || !secretMatches(agentKey, agent.keyHash))
      throw new UnauthorizedError("invalid_agent_key", "the agent key is not valid for this agent");
  }

  /** The agent an agent key belongs to; 401 when it is not that agent's key (or there is no such agent). */
  async function authenticateAgent(agentId: string, agentKey: string): Promise<AgentRow> {
    const agent = await store.read.getAgent(agentId);
    checkAgentKey(agent, agentKey);
    return agent;
  }

  async function startClaim(tx: StoreTx, agentId: string, ownerId: string, kind: "claim" | "reclaim" | "transfer"): Promise<ClaimResult> {
    const agentKey = `va_${agentId}.${generateSecret("k")}`;
    const claimedAt = clock.now();
    const claimId = await tx.startClaim(agentId, { ownerId, keyHash: hashSecret(agentKey), claimedAt, kind });
    await deps.onClaimed?.(tx, agentId, claimedAt);
    return { agentId, ownerId, agentKey, claimId, claimedAt };
  }

  /**
   * An owner claims a new agent (V2). The agent key is returned once.
   * @param options.agentId an id of the caller's choosing (replay); a fresh one otherwise
   * @throws ConflictError `limit_reached` when the owner has as many agents as `limits.agents`
   */
  async function claimNewAgent(ownerId: string, options: { agentId?: string; name?: string | null } = {}): Promise<ClaimResult> {
    const agentId = options.agentId ?? generateId("agt");
    return store.transaction(async (tx) => {
      // Locked: two claims of one owner at its limit are counted one after the other, so one is refused.
      if (!(await tx.getOwner(ownerId, { lock: true }))) throw new NotFoundError("owner_not_found", `owner ${ownerId} does not exist`);
      const limit = deps.limits?.agents;
      if (limit !== undefined && (await tx.countAgentsOfOwner(ownerId)) >= limit) {
        throw limitReached("agents", limit, "MAX_AGENTS_PER_OWNER", "an operator's transfer can move an agent to another owner");
      }
      if (await tx.getAgent(agentId, { lock: true })) throw new ConflictError("agent_exists", `agent ${agentId} is already claimed`);
      await tx.insertAgent({
        id: agentId,
        name: options.name ?? null,
        ownerId,
        claimId: 0,
        claimedAt: 0,
        keyHash: "",
        last: null,
        lateDeadline: null,
        releasedAt: null,
        createdAt: clock.now(),
      });
      return startClaim(tx, agentId, ownerId, "claim");
    });
  }

  /** The owner's agent, locked until the transaction ends; 404 when there is none, 403 when it is another owner's. */
  async function ownedAgent(tx: StoreTx, ownerId: string, agentId: string): Promise<AgentRow> {
    const agent = await tx.getAgent(agentId, { lock: true });
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    if (agent.ownerId !== ownerId) {
      throw new ForbiddenError(
        "agent_owned_by_another_owner",
        `agent ${agentId} belongs to another owner; only an operator's transfer can move it`,
      );
    }
    return agent;
  }

  /** The owner claims its own agent again: rotates the key and restarts everything V2 restarts. */
  async function reclaim(ownerId: string, agentId: string): Promise<ClaimResult> {
    return store.transaction(async (tx) => {
      await ownedAgent(tx, ownerId, agentId);
      return startClaim(tx, agentId, ownerId, "reclaim");
    });
  }

  /**
   * A new key for the owner's agent: only its hash is stored, in place of the old one, which no request is taken with
   * once this returns (a check-in reads the agent's key hash with the row it decides on). The claim stays (V2: nothing
   * restarts, check-ins keep counting), as do its proofs and score.
   */
  async function rotateAgentKey(ownerId: string, agentId: string): Promise<KeyRotation> {
    return store.transaction(async (tx) => {
      const agent = await ownedAgent(tx, ownerId, agentId);
      const agentKey = `va_${agentId}.${generateSecret("k")}`;
      await tx.setAgentKey(agentId, hashSecret(agentKey));
      return { agentId, agentKey, claimId: agent.claimId, rotatedAt: clock.now() };
    });
  }

  /**
   * An operator transfers an agent to an owner: a new claim by that owner (V2), logged. V2: a claim
   * by another owner removes the agent's proofs of one agent (V6) at that instant (the new owner
   * has proven none of them); a transfer to the agent's own owner is a re-claim and keeps them.
   * @param actor the operator who transfers it, for the audit log (V7)
   */
  async function transfer(agentId: string, toOwnerId: string, reason: string, actor = UNNAMED_OPERATOR): Promise<ClaimResult> {
    return store.transaction(async (tx) => {
      const agent = await tx.getAgent(agentId, { lock: true });
      if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
      if (!(await tx.getOwner(toOwnerId))) throw new NotFoundError("owner_not_found", `owner ${toOwnerId} does not exist`);
      const at = clock.now();
      if (toOwnerId !== agent.ownerId) {
        const removed = "agent claimed by another owner";
        for (const proof of await tx.proofsForAgentAt(agentId, agent.ownerId, at)) {
          if (proof.agentId !== agentId) continue;
          await tx.removeProof(proof.id, at, removed);
          await tx.recordEvents([proofRemovedEvent(proof, at, removed)]);
          if (proof.kind === "erc8004")
            await stopErc8004Publishing(tx, agentId, at, "its ERC-8004 proof was removed (agent claimed by another owner)");
        }
        // Told to the owner who loses it (issue #28): from now on its events go to the new owner.
        await tx.recordEvents([newEvent("claim.changed", agent.ownerId, at, { agentId, claimedAt: toRfc3339(at), reason })]);
      }
      await tx.audit({ at, actor, action: "agent.transfer", subject: agentId, details: { from: agent.ownerId, to: toOwnerId, reason } });
      return startClaim(tx, agentId, toOwnerId, "transfer");
    });
  }

  return {
    createOwner,
    authenticateOwner,
    rotateOwnerToken,
    checkAgentKey,
    authenticateAgent,
    claimNewAgent,
    reclaim,
    rotateAgentKey,
    transfer,
  };
}
