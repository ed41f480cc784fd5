import { toRfc3339 } from "../method";
import type { Clock } from "./clock";
import { stopErc8004Publishing } from "./erc8004-stop";
import { UNNAMED_OPERATOR } from "./operator";
import { agentUnclaimedError, ConflictError, ForbiddenError, NotFoundError, UnauthorizedError } from "./errors";
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
  /**
   * The owner claims its own agent again: a new key, and everything V2 restarts. An unclaimed agent (issue #29) is
   * claimed so by any owner.
   */
  reclaim(ownerId: string, agentId: string): Promise<ClaimResult>;
  /** A new key for the owner's agent, returned once; the old key stops at once, and nothing else changes (no new claim, V2). */
  rotateAgentKey(ownerId: string, agentId: string): Promise<KeyRotation>;
  /**
   * The owner lets its agent go (issue #29): its key stops, its proofs of one agent are removed, and it leaves the owner's
   * agents, the recomputes and the directory until an owner claims it again.
   */
  unclaim(ownerId: string, agentId: string): Promise<Unclaimed>;
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

/** An agent unclaimed: when, and the ids of the proofs of one agent removed with it. */
export type Unclaimed = { agentId: string; unclaimedAt: number; removedProofs: string[] };

/** V2, V6: why an agent's proofs of one agent are removed when no owner of it holds them any more. */
const ANOTHER_OWNER = "agent claimed by another owner";
const UNCLAIMED = "agent unclaimed";
/** What frees room under MAX_AGENTS_PER_OWNER. */
const UNCLAIM_ONE = "unclaim one (POST /v1/agents/{id}/unclaim), or an operator's transfer can move one to another owner";

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
        throw limitReached("agents", limit, "MAX_AGENTS_PER_OWNER", UNCLAIM_ONE);
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

  /**
   * The owner's agent, locked until the transaction ends; 404 when there is none, 409 when it is unclaimed (no one's),
   * 403 when it is another owner's.
   */
  async function ownedAgent(tx: StoreTx, ownerId: string, agentId: string): Promise<AgentRow> {
    return ownersAgent(await tx.getAgent(agentId, { lock: true }), ownerId, agentId);
  }

  /** `agent` (the row of `agentId`), when it is the owner's: as `ownedAgent` refuses it otherwise. */
  function ownersAgent(agent: AgentRow | null, ownerId: string, agentId: string): AgentRow {
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    if (agent.releasedAt !== null) throw agentUnclaimedError(agentId, 409);
    if (agent.ownerId !== ownerId) {
      throw new ForbiddenError(
        "agent_owned_by_another_owner",
        `agent ${agentId} belongs to another owner; only an operator's transfer can move it`,
      );
    }
    return agent;
  }

  /**
   * The owner claims its own agent again: rotates the key and restarts everything V2 restarts. An unclaimed agent (issue
   * #29) is no one's: any owner claims it so, a new claim counted among that owner's agents (`limits.agents`); a claim by
   * another owner than the one that let it go holds none of its proofs of one agent (V2: removed at the unclaim already).
   */
  async function reclaim(ownerId: string, agentId: string): Promise<ClaimResult> {
    return store.transaction(async (tx) => {
      const agent = await tx.getAgent(agentId, { lock: true });
      if (agent === null || agent.releasedAt === null) {
        ownersAgent(agent, ownerId, agentId);
        return startClaim(tx, agentId, ownerId, "reclaim");
      }
      // Locked as for a new agent: two claims of one owner at its limit are counted one after the other.
      if (!(await tx.getOwner(ownerId, { lock: true }))) throw new NotFoundError("owner_not_found", `owner ${ownerId} does not exist`);
      const limit = deps.limits?.agents;
      if (limit !== undefined && (await tx.countAgentsOfOwner(ownerId)) >= limit) {
        throw limitReached("agents", limit, "MAX_AGENTS_PER_OWNER", UNCLAIM_ONE);
      }
      if (ownerId !== agent.ownerId) await removeAgentProofs(tx, agent, clock.now(), ANOTHER_OWNER);
      return startClaim(tx, agentId, ownerId, ownerId === agent.ownerId ? "reclaim" : "claim");
    });
  }

  /**
   * Removes the agent's proofs of one agent (V6: domain, erc8004) at `at`, for `reason`, each told to its owner
   * (proof.removed); Vrai's ERC-8004 feedback about the agent stops with its erc8004 proof. Returns their ids.
   */
  async function removeAgentProofs(tx: StoreTx, agent: AgentRow, at: number, reason: string): Promise<string[]> {
    const removed: string[] = [];
    for (const proof of await tx.proofsForAgentAt(agent.id, agent.ownerId, at)) {
      if (proof.agentId !== agent.id) continue;
      await tx.removeProof(proof.id, at, reason);
      await tx.recordEvents([proofRemovedEvent(proof, at, reason)]);
      if (proof.kind === "erc8004") await stopErc8004Publishing(tx, agent.id, at, `its ERC-8004 proof was removed (${reason})`);
      removed.push(proof.id);
    }
    return removed;
  }

  /**
   * The owner unclaims its agent (issue #29), at once and in one transaction: its key hash is cleared (a check-in with the
   * old key is refused from the commit on, and one decided before it finds the agent changed), its proofs of one agent
   * are removed (V2: no owner holds them), and it leaves the owner's agents, its count toward `limits.agents`, the
   * recomputes and the directory. No score is computed (V2: only a claimed agent has one); those stored stay (V9).
   * Recorded: agent.unclaimed to the owner, and the audit log.
   */
  async function unclaim(ownerId: string, agentId: string): Promise<Unclaimed> {
    return store.transaction(async (tx) => {
      const agent = await ownedAgent(tx, ownerId, agentId);
      const at = clock.now();
      const removedProofs = await removeAgentProofs(tx, agent, at, UNCLAIMED);
      await tx.releaseAgent(agentId, at);
      await tx.recordEvents([newEvent("agent.unclaimed", ownerId, at, { agentId, unclaimedAt: toRfc3339(at) })]);
      await tx.audit({ at, actor: "owner", action: "agent.unclaim", subject: agentId, details: { ownerId, removedProofs } });
      return { agentId, unclaimedAt: at, removedProofs };
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
        await removeAgentProofs(tx, agent, at, ANOTHER_OWNER);
        // Told to the owner who loses it (issue #28): from now on its events go to the new owner. One that unclaimed it has
        // lost it already (agent.unclaimed).
        if (agent.releasedAt === null)
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
    unclaim,
    transfer,
  };
}
