/**
 * What the API and the pages read: each answer with the errors a reader gets when the thing asked
 * for does not exist. Nothing here writes.
 */
import { dayStart, parseRfc3339, toRfc3339 } from "../method";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";
import type { AgentRow, AuditEntry, LatestScores, OutageRow, PenaltyRow, ProofRow, ScoreRow, ScoreSummary, Store } from "./ports";

/** An agent's page: the agent, its latest score (null before the first), and the declared windows that touch that score's window. */
export type AgentPageData = { agent: AgentRow; score: ScoreRow | null; outages: OutageRow[] };

export type Reads = {
  /** The agent; agent_not_found otherwise. */
  agent(agentId: string): Promise<AgentRow>;
  agentsOfOwner(ownerId: string): Promise<string[]>;
  /** The agent's latest score without its inputs (V9); agent_not_found or score_not_found otherwise. */
  latestScore(agentId: string): Promise<ScoreSummary>;
  /** The agent's daily scores from `from` to `to` (days, inclusive; default: the last 90 days up to now). */
  dailyScores(agentId: string, range: { from?: string; to?: string }): Promise<{ from: string; to: string; scores: ScoreRow[] }>;
  /** One stored score with its inputs; score_not_found otherwise. */
  score(id: number): Promise<ScoreRow>;
  /** Every declared outage window (V4.4). */
  outages(): Promise<OutageRow[]>;
  /** The agent's penalties, active or not (V7). */
  penaltiesOf(agentId: string): Promise<PenaltyRow[]>;
  /** The audit log after entry `afterId`, oldest first. */
  audit(options: { afterId: number; limit: number }): Promise<Array<AuditEntry & { id: number }>>;
  /** The identity proofs that count for the agent now: its own and its owner's (V6). */
  proofsOf(agentId: string): Promise<{ agent: AgentRow; proofs: ProofRow[] }>;
  /** What the agent's page shows; null when there is no such agent. */
  agentPage(agentId: string): Promise<AgentPageData | null>;
};

/** Days of score history a reader gets when it names no range. */
const DEFAULT_HISTORY_DAYS = 90;

/** Windows that touch the score's window, from its first day to its instant (open windows touch everything after their start). */
function outagesOfWindow(outages: readonly OutageRow[], score: ScoreRow): OutageRow[] {
  const to = parseRfc3339(score.result.at);
  const from = score.result.window.length > 0 ? dayStart(score.result.window[0].day) : to;
  return outages.filter((o) => o.start <= to && (o.end === null || o.end >= from));
}

/**
 * The service's reads over `store`.
 * @param deps.latestScores the latest-score read, batched and cached by the SQL store
 */
export function createReads(deps: { store: Store; latestScores: LatestScores; clock: Clock }): Reads {
  const { read } = deps.store;

  async function agent(agentId: string): Promise<AgentRow> {
    const row = await read.getAgent(agentId);
    if (!row) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    return row;
  }

  return {
    agent,
    agentsOfOwner: (ownerId) => read.listAgentsOfOwner(ownerId),
    async latestScore(agentId) {
      const { agentExists, score } = await deps.latestScores.latestScoreSummary(agentId);
      if (!agentExists) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
      if (!score) throw new NotFoundError("score_not_found", `agent ${agentId} has no score yet`);
      return score;
    },
    async dailyScores(agentId, range) {
      await agent(agentId);
      const to = range.to ?? "9999-12-31";
      const from = range.from ?? toRfc3339(deps.clock.now() - DEFAULT_HISTORY_DAYS * 86400).slice(0, 10);
      return { from, to, scores: await read.listDailyScores(agentId, from, to) };
    },
    async score(id) {
      const row = await read.getScore(id);
      if (!row) throw new NotFoundError("score_not_found", `score ${id} does not exist`);
      return row;
    },
    outages: () => read.listOutages(),
    async penaltiesOf(agentId) {
      await agent(agentId);
      return read.listPenalties(agentId);
    },
    audit: (options) => read.listAudit(options),
    async proofsOf(agentId) {
      const row = await agent(agentId);
      return { agent: row, proofs: await read.proofsForAgentAt(row.id, row.ownerId, deps.clock.now()) };
    },
    async agentPage(agentId) {
      const row = await read.getAgent(agentId);
      if (!row) return null;
      const score = await read.latestScore(agentId);
      return { agent: row, score, outages: score ? outagesOfWindow(await read.listOutages(), score) : [] };
    },
  };
}
