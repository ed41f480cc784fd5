/**
 * What the API and the pages read: each answer with the errors a reader gets when the thing asked
 * for does not exist. Nothing here writes.
 */
import { dayName, dayNumber, dayStart, firstDailyAt, parseRfc3339, toRfc3339 } from "../method";
import type { Clock } from "./clock";
import { agentUnclaimedError, NotFoundError } from "./errors";
import { keysetPage, parseKeyset, type CursorList, type KeysetPage } from "./keyset";
import type { DayAggregate } from "../method";
import type { AgentRow, AuditEntry, LatestScores, OutageRow, PenaltyRow, ProofRow, ScoreRow, ScoreSummary, Store } from "./ports";
import { erc8004Binding, formatErc8004Subject, type Erc8004Identity } from "./proofs/kinds/erc8004";
import type { RegistrationFiles, StoredRegistration } from "./registration-files";
import { ID_PATTERN } from "./secrets";

/** The Vrai agent holding an ERC-8004 identity now: its active erc8004 proof and its latest score (null before the first). */
export type Erc8004Holder = { agentId: string; provenAt: number; score: ScoreSummary | null };

/**
 * An agent's page: the agent, its latest score (null before the first), the declared windows that touch that score's window,
 * and what it says of itself in its ERC-8004 registration file (null without an erc8004 proof whose file was read).
 */
export type AgentPageData = { agent: AgentRow; score: ScoreRow | null; outages: OutageRow[]; selfDeclared: StoredRegistration | null };

/**
 * A page of a list asked for: `limit` items after the position `cursor` names (a page's
 * `nextCursor`), or the first ones. A cursor no page of that list gave is 400 `invalid_cursor`.
 */
export type PageAsked = { cursor?: string; limit: number };

export type Reads = {
  /** The agent; agent_not_found otherwise, and 404 agent_unclaimed for one its owner unclaimed (issue #29). */
  agent(agentId: string): Promise<AgentRow>;
  /**
   * The agent and what it says of itself in the registration file of its latest active ERC-8004 proof's identity (self-declared,
   * issue #27; null when it holds none, or before its file was first read); agent_not_found otherwise.
   */
  agentWithRegistration(agentId: string): Promise<{ agent: AgentRow; selfDeclared: StoredRegistration | null }>;
  /** The ids of the owner's agents, in id order, a page at a time. */
  agentsOfOwner(ownerId: string, page: PageAsked): Promise<KeysetPage<string>>;
  /** The agent's latest score without its inputs (V9); agent_not_found, agent_unclaimed or score_not_found otherwise. */
  latestScore(agentId: string): Promise<ScoreSummary>;
  /**
   * The agent's daily scores from `from` to `to` (days, inclusive; default: the last 90 days up to now), oldest first, a page at a time,
   * with when its latest claim's first daily score is computed (V9), and whether that is still to come.
   */
  dailyScores(
    agentId: string,
    range: { from?: string; to?: string } & PageAsked,
  ): Promise<{ from: string; to: string; firstDailyAt: number; firstDailyToCome: boolean } & KeysetPage<ScoreRow>>;
  /** One stored score with its inputs; score_not_found otherwise. */
  score(id: number): Promise<ScoreRow>;
  /** The agent's penalties, active or not (V7), oldest first, a page at a time. */
  penaltiesOf(agentId: string, page: PageAsked): Promise<KeysetPage<PenaltyRow>>;
  /** The audit log, oldest first, a page at a time. */
  audit(page: PageAsked): Promise<KeysetPage<AuditEntry & { id: number }>>;
  /** The identity proofs that count for the agent now: its own and its owner's (V6), oldest first, a page at a time. */
  proofsOf(agentId: string, page: PageAsked): Promise<{ agent: AgentRow } & KeysetPage<ProofRow>>;
  /** What the agent's page shows; null when there is no such agent, "unclaimed" for one its owner unclaimed (issue #29). */
  agentPage(agentId: string): Promise<AgentPageData | "unclaimed" | null>;
  /** The agent holding ERC-8004 identity `identity` now (V6: one at a time); erc8004_identity_not_held otherwise. */
  erc8004Holder(identity: Erc8004Identity): Promise<Erc8004Holder>;
};

/** Days of score history a reader gets when it names no range. */
const DEFAULT_HISTORY_DAYS = 90;

// The keys of the lists (keyset.ts): an id; a day; an instant and an id; an audit entry's serial id.
const ID_KEY = /^(.+)$/;
const DAY_KEY = /^(\d{4}-\d{2}-\d{2})$/;
const INSTANT_ID_KEY = /^(0|[1-9]\d{0,11}):(.+)$/;
const SERIAL_KEY = /^([1-9]\d{0,15})$/;

/** Each paged list's name in its cursors: a cursor of one is refused by every other (issue #33), one agent's list by another agent's. */
const LISTS = {
  agentsOfOwner: (ownerId: string): CursorList => ({ kind: "owner-agents", of: ownerId }),
  dailyScores: (agentId: string): CursorList => ({ kind: "daily-scores", of: agentId }),
  penalties: (agentId: string): CursorList => ({ kind: "penalties", of: agentId }),
  proofs: (agentId: string): CursorList => ({ kind: "proofs", of: agentId }),
  audit: { kind: "audit" } satisfies CursorList,
  outages: { kind: "outages" } satisfies CursorList,
};
const anId = ([id]: string[]) => (ID_PATTERN.test(id) ? id : null);
const instantAndId = ([at, id]: string[]) => (ID_PATTERN.test(id) ? { at: Number(at), id } : null);

/** Windows that touch the score's window, from its first day to its instant (open windows touch everything after their start). */
function outagesOfWindow(outages: readonly OutageRow[], score: ScoreRow): OutageRow[] {
  const to = parseRfc3339(score.result.at);
  const from = score.result.window.length > 0 ? dayStart(score.result.window[0].day) : to;
  return outages.filter((o) => o.start <= to && (o.end === null || o.end >= from));
}

/**
 * The service's reads over `store`.
 * @param deps.latestScores the latest-score read, batched and cached by the SQL store
 * @param deps.registrations the ERC-8004 registration files as last read (self-declared, issue #27)
 */
export function createReads(deps: {
  store: Store;
  latestScores: LatestScores;
  clock: Clock;
  registrations: Pick<RegistrationFiles, "ofAgent">;
}): Reads {
  const { read } = deps.store;

  async function agent(agentId: string): Promise<AgentRow> {
    const row = await read.getAgent(agentId);
    if (!row) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    if (row.releasedAt !== null) throw agentUnclaimedError(agentId, 404);
    return row;
  }

  return {
    agent,
    async agentWithRegistration(agentId) {
      const row = await agent(agentId);
      return { agent: row, selfDeclared: await deps.registrations.ofAgent(agentId) };
    },
    async agentsOfOwner(ownerId, { cursor, limit }) {
      const after = cursor === undefined ? undefined : parseKeyset(cursor, LISTS.agentsOfOwner(ownerId), ID_KEY, anId);
      return keysetPage(await read.listAgentsOfOwner(ownerId, { after, limit: limit + 1 }), limit, LISTS.agentsOfOwner(ownerId), (id) => [
        id,
      ]);
    },
    async latestScore(agentId) {
      const { agentExists, score } = await deps.latestScores.latestScoreSummary(agentId);
      // The latest-score read knows claimed agents only: whether the others exist is the agent's row's to say.
      if (!agentExists) await agent(agentId);
      if (!score) throw new NotFoundError("score_not_found", `agent ${agentId} has no score yet`);
      return score;
    },
    async dailyScores(agentId, { cursor, limit, ...range }) {
      const after = cursor === undefined ? undefined : parseKeyset(cursor, LISTS.dailyScores(agentId), DAY_KEY, ([day]) => day);
      const row = await agent(agentId);
      const to = range.to ?? "9999-12-31";
      const from = range.from ?? toRfc3339(deps.clock.now() - DEFAULT_HISTORY_DAYS * 86400).slice(0, 10);
      const page = keysetPage(
        await read.listDailyScores(agentId, from, to, { after, limit: limit + 1 }),
        limit,
        LISTS.dailyScores(agentId),
        (s) => [s.day ?? ""],
      );
      const first = firstDailyAt(row.claimedAt);
      return { from, to, firstDailyAt: first, firstDailyToCome: deps.clock.now() < first, ...page };
    },
    async score(id) {
      const row = await read.getScore(id);
      if (!row) throw new NotFoundError("score_not_found", `score ${id} does not exist`);
      return row;
    },
    async penaltiesOf(agentId, { cursor, limit }) {
      const after = cursor === undefined ? undefined : parseKeyset(cursor, LISTS.penalties(agentId), INSTANT_ID_KEY, instantAndId);
      await agent(agentId);
      const rows = await read.listPenalties(agentId, { after: after && { addedAt: after.at, id: after.id }, limit: limit + 1 });
      return keysetPage(rows, limit, LISTS.penalties(agentId), (p) => [p.addedAt, p.id]);
    },
    async audit({ cursor, limit }) {
      const afterId = cursor === undefined ? 0 : parseKeyset(cursor, LISTS.audit, SERIAL_KEY, ([id]) => Number(id));
      return keysetPage(await read.listAudit({ afterId, limit: limit + 1 }), limit, LISTS.audit, (e) => [e.id]);
    },
    async proofsOf(agentId, { cursor, limit }) {
      const after = cursor === undefined ? undefined : parseKeyset(cursor, LISTS.proofs(agentId), INSTANT_ID_KEY, instantAndId);
      const row = await agent(agentId);
      const rows = await read.proofsForAgentAt(row.id, row.ownerId, deps.clock.now(), {
        after: after && { verifiedAt: after.at, id: after.id },
        limit: limit + 1,
      });
      return { agent: row, ...keysetPage(rows, limit, LISTS.proofs(agentId), (p) => [p.verifiedAt, p.id]) };
    },
    async agentPage(agentId) {
      const row = await read.getAgent(agentId);
      if (!row) return null;
      if (row.releasedAt !== null) return "unclaimed";
      const score = await read.latestScore(agentId);
      return {
        agent: row,
        score,
        outages: score ? outagesOfWindow(await read.listOutages(), score) : [],
        selfDeclared: await deps.registrations.ofAgent(agentId),
      };
    },
    async erc8004Holder(identity) {
      const subject = formatErc8004Subject(identity);
      // The binding an erc8004 proof holds while active (V6), as the proof checks write and find it.
      const proof = await read.findActiveBinding(erc8004Binding(identity));
      if (!proof?.agentId)
        throw new NotFoundError(
          "erc8004_identity_not_held",
          `no Vrai agent holds ERC-8004 identity ${subject} (no active erc8004 proof of it)`,
        );
      const { score } = await deps.latestScores.latestScoreSummary(proof.agentId);
      return { agentId: proof.agentId, provenAt: proof.verifiedAt, score };
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
  /** The day aggregate (V10) of one day of one claim of the agent, null before its first check-in of that day. */
  dayOfClaim(agentId: string, claimId: number, day: string): Promise<Pick<DayAggregate, "checkins" | "onTime"> | null>;
  /** Whether the agent has a daily score of `fromDay` or later. */
  hasDailyScoreFrom(agentId: string, fromDay: string): Promise<boolean>;
};

/** An agent's day so far and, while it is to come, its latest claim's first daily score (V9): what its page says of today. */
export type AgentToday = { day: string; now: number; checkins: number; onTime: number; firstDailyAt: number | null };

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
  /** Today's counted check-ins of the agent's latest claim, and when its first daily score comes while none exists (issue #31). */
  today(agent: AgentRow): Promise<AgentToday>;
};

/**
 * The reads of the site's pages over the SQL store's `site` queries.
 * @param deps.site the store's paged and summary reads
 */
export function createSiteReads(deps: { site: SiteStore; clock: Clock }): SiteReads {
  return {
    async outagesPage({ cursor, limit }) {
      const after =
        cursor === undefined
          ? null
          : parseKeyset(cursor, LISTS.outages, INSTANT_ID_KEY, (fields) => {
              const key = instantAndId(fields);
              return key && { start: key.at, id: key.id };
            });
      const { items, nextCursor } = keysetPage(await deps.site.listOutagesPage(after, limit + 1), limit, LISTS.outages, (o) => [
        o.start,
        o.id,
      ]);
      return { outages: items, nextCursor };
    },
    async dailyTotals(agentId, days) {
      const today = dayNumber(deps.clock.now());
      const dayNames = Array.from({ length: days }, (_, i) => dayName(today - days + 1 + i));
      const stored = new Map((await deps.site.listDailyTotals(agentId, dayNames[0], dayNames[days - 1])).map((r) => [r.day, r.total]));
      return dayNames.map((day) => ({ day, total: stored.get(day) ?? null }));
    },
    async today(agent) {
      const now = deps.clock.now();
      const day = dayName(dayNumber(now));
      const first = firstDailyAt(agent.claimedAt);
      const [counted, scored] = await Promise.all([
        deps.site.dayOfClaim(agent.id, agent.claimId, day),
        deps.site.hasDailyScoreFrom(agent.id, dayName(dayNumber(first))),
      ]);
      return { day, now, checkins: counted?.checkins ?? 0, onTime: counted?.onTime ?? 0, firstDailyAt: scored ? null : first };
    },
  };
}
