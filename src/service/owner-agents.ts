/**
 * What an owner sees of its own agents (the console, issue #29): each agent with its latest score's total, band and
 * state, its last counted check-in and next deadline (V3.5), the proofs that count for it with their next re-check
 * (V6), and its ERC-8004 publishing. Nothing here writes; every figure is one the API serves elsewhere.
 */
import { bandOf, deadlineOf, type Band, type ScoreResult } from "../method";
import type { Clock } from "./clock";
import type { Erc8004Publishing, PublishingStatus } from "./erc8004-publishing";
import { ForbiddenError } from "./errors";
import type { KeysetPage } from "./keyset";
import type { AgentRow, LatestScores, ProofRow, Store } from "./ports";
import { nextRecheckAt } from "./proofs/recheck-policy";
import type { PageAsked, Reads } from "./reads";

/** An agent's latest score as a list shows it. */
export type ScoreHeadline = { id: number; at: number; total: number; band: Band; state: "provisional" | "established" };

/** A proof and when it is next re-checked (V6; null: never). */
export type ProofWithRecheck = { proof: ProofRow; nextRecheckAt: number | null };

/** One agent as its owner's console lists it. */
export type AgentOverview = {
  agent: AgentRow;
  /** Its latest score; null before the first. */
  score: ScoreHeadline | null;
  /** V3.5: when its next check-in is due on time (the previous counted check-in's arrival, next_heartbeat_s and 600 s); null before the first. */
  nextDeadline: number | null;
  /** The proofs that count for it now (its own and its owner's, V6), oldest first, each with its next re-check (null: never). */
  proofs: ProofWithRecheck[];
  publishing: PublishingStatus;
};

export type OwnerAgents = {
  /** The owner's agents in id order, a page at a time (the cursors of `GET /v1/owners/me`). */
  page(ownerId: string, page: PageAsked): Promise<KeysetPage<AgentOverview>>;
  /** One of the owner's agents; agent_not_found, agent_unclaimed (404), or 403 agent_owned_by_another_owner. */
  one(ownerId: string, agentId: string): Promise<AgentOverview>;
  /** Whether the agent is unclaimed and the owner is the one that unclaimed it (issue #29). */
  unclaimedBy(ownerId: string, agentId: string): Promise<boolean>;
  /** The owner's own proofs (V6: owner-level, counting for each of its agents) active now, oldest first, with their next re-check. */
  ownerProofs(ownerId: string): Promise<ProofWithRecheck[]>;
};

/**
 * The owner's view of its agents over the service's reads.
 * @param deps.latestScores the latest-score read the API serves (cached)
 */
export function createOwnerAgents(deps: {
  store: Store;
  reads: Reads;
  latestScores: LatestScores;
  publishing: Pick<Erc8004Publishing, "status">;
  clock: Clock;
}): OwnerAgents {
  const { store, reads, clock } = deps;
  const withRecheck = (proof: ProofRow): ProofWithRecheck => ({ proof, nextRecheckAt: nextRecheckAt(proof) });

  async function overview(agent: AgentRow): Promise<AgentOverview> {
    const [{ score }, proofs, publishing] = await Promise.all([
      deps.latestScores.latestScoreSummary(agent.id),
      store.read.proofsForAgentAt(agent.id, agent.ownerId, clock.now()),
      deps.publishing.status(agent.id),
    ]);
    let headline: ScoreHeadline | null = null;
    if (score) {
      // V8: the band is the total's; the state is the stored result's.
      const { state } = JSON.parse(score.resultJson) as Pick<ScoreResult, "state">;
      headline = { id: score.id, at: score.at, total: score.total, band: bandOf(score.total), state };
    }
    return {
      agent,
      score: headline,
      nextDeadline: agent.last === null ? null : deadlineOf(agent.last),
      proofs: proofs.map(withRecheck),
      publishing,
    };
  }

  return {
    async page(ownerId, asked) {
      const { items, nextCursor } = await reads.agentsOfOwner(ownerId, asked);
      const agents = await Promise.all(items.map((id) => store.read.getAgent(id)));
      // An agent transferred away or unclaimed between the two reads is left out: it is no longer the owner's.
      const own = agents.filter((agent): agent is AgentRow => agent?.ownerId === ownerId && agent.releasedAt === null);
      return { items: await Promise.all(own.map(overview)), nextCursor };
    },
    async one(ownerId, agentId) {
      const agent = await reads.agent(agentId);
      if (agent.ownerId !== ownerId) {
        throw new ForbiddenError("agent_owned_by_another_owner", `agent ${agentId} belongs to another owner`);
      }
      return overview(agent);
    },
    async unclaimedBy(ownerId, agentId) {
      // An unclaimed agent keeps the owner of its last claim on its row until a new claim.
      const agent = await store.read.getAgent(agentId);
      return agent !== null && agent.releasedAt !== null && agent.ownerId === ownerId;
    },
    async ownerProofs(ownerId) {
      return (await store.read.ownerLevelProofsAt(ownerId, clock.now())).map(withRecheck);
    },
  };
}
