/**
 * What the API and the pages read: each answer with the errors a reader gets when the thing asked
 * for does not exist. Nothing here writes.
 */
import { InvalidInputError } from "../errors";
import { dayName, dayNumber, dayStart, parseRfc3339, toRfc3339 } from "../method";
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

/** One day of an agent's score history: the total of its daily score (V9), or null when none was stored that day. */
export type DailyTotal = { day: string; total: number | null };

/** Where a page of declared windows resumes: after the window with this start and id (newest first). */
export type OutageCursor = { start: number; id: string };

/** The store's reads behind the site's pages (the SQL store serves them). */
export type SiteStore = {
  /** Declared windows newest first (start, then id, descending), `limit` of them after `after`. */
  listOutagesPage(after: OutageCursor | null, limit: number): Promise<OutageRow[]>;
  /** The totals of the agent's daily scores from `fromDay` to `toDay` (inclusive), oldest first. */
  listDailyTotals(agentId: string, fromDay: string, toDay: string): Promise<Array<{ day: string; total: number }>>;
};

/** A page of declared windows and the cursor of the next page (null on the last). */
export type OutagePage = { outages: OutageRow[]; nextCursor: string | null };

export type SiteReads = {
  /**
   * Every declared window (V4.4), newest first, `limit` at a time; `cursor` is a page's `nextCursor`.
   * @throws InvalidInputError `invalid_cursor` for a cursor no page gave
   */
  outagesPage(options: { cursor?: string; limit: number }): Promise<OutagePage>;
  /** The last `days` UTC days up to today, oldest first, each with its daily total or null. */
  dailyTotals(agentId: string, days: number): Promise<DailyTotal[]>;
};

const CURSOR_FORMAT = /^(\d{1,12})\.([A-Za-z0-9_-]{1,64})$/;

/** A cursor as the opaque text a page links to. */
export function encodeOutageCursor(cursor: OutageCursor): string {
  return Buffer.from(`${cursor.start}.${cursor.id}`).toString("base64url");
}

/** The cursor a page's `nextCursor` names; `invalid_cursor` otherwise. */
export function decodeOutageCursor(text: string): OutageCursor {
  const match = CURSOR_FORMAT.exec(Buffer.from(text, "base64url").toString());
  if (!match || encodeOutageCursor({ start: Number(match[1]), id: match[2] }) !== text) {
    throw new InvalidInputError("invalid_cursor", "cursor: not a cursor of this list; follow the link of the previous page");
  }
  return { start: Number(match[1]), id: match[2] };
}

/**
 * The reads of the site's pages over the SQL store's `site` queries.
 * @param deps.site the store's paged and summary reads
 */
export function createSiteReads(deps: { site: SiteStore; clock: Clock }): SiteReads {
  return {
    async outagesPage({ cursor, limit }) {
      const after = cursor === undefined ? null : decodeOutageCursor(cursor);
      // One more than asked tells whether a next page exists without a count.
      const rows = await deps.site.listOutagesPage(after, limit + 1);
      const outages = rows.slice(0, limit);
      const last = outages[outages.length - 1];
      return { outages, nextCursor: rows.length > limit ? encodeOutageCursor({ start: last.start, id: last.id }) : null };
    },
    async dailyTotals(agentId, days) {
      const today = dayNumber(deps.clock.now());
      const dayNames = Array.from({ length: days }, (_, i) => dayName(today - days + 1 + i));
      const stored = new Map((await deps.site.listDailyTotals(agentId, dayNames[0], dayNames[days - 1])).map((r) => [r.day, r.total]));
      return dayNames.map((day) => ({ day, total: stored.get(day) ?? null }));
    },
  };
}
