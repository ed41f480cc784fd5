import { CURRENT_METHOD, dayStart, utcDay, type MethodVersion, type ScoreFacts } from "../method";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";
import { scoreChangedEvents } from "./events/record";
import type { AgentRow, ScoreBatch, ScoreRow, StoreTx, Transactions } from "./ports";
import { addDailyScores, factsFrom, newScoreOf, type PageScorer } from "./score-rows";

/** Computes and stores Vrai scores (V9). */
export type Scoring = {
  /** The facts of `agent`'s score at `at`, read in `tx` (V5–V8). */
  factsAt(tx: StoreTx, agent: AgentRow, at: number): Promise<ScoreFacts>;
  /** Scores `agentId` at `at` in `tx` and stores it. */
  scoreAgentIn(tx: StoreTx, agentId: string, at: number, trigger: "daily" | "change"): Promise<ScoreRow>;
  /** What a change to an agent's facts does: its score at once, in the change's transaction (V9 "on change"). */
  onChange(tx: StoreTx, agentId: string, at: number): Promise<void>;
  /** The daily score of every claimed agent for `day` (those it has not yet); returns how many were stored. */
  recomputeDay(day: string, onProgress?: (done: number) => void): Promise<number>;
  /** Scores `agentId` now, in a transaction of its own. */
  scoreNow(agentId: string): Promise<ScoreRow>;
};

/**
 * Agents per keyset page of the daily recompute, and per batch (one insert transaction) when batched:
 * what it holds in memory at once is a few pages, whatever the number of agents.
 */
const DAILY_PAGE = 1000;
/**
 * Scores computed between two turns of the event loop: a whole page of them at once would hold
 * every request the process serves for as long as the page takes.
 */
const DAILY_SLICE = 100;
/** Pages read and computed ahead of the one being written. */
const DAILY_READ_AHEAD = 2;

/**
 * Computes and stores Vrai scores (V9): gathers an agent's facts at `at` from the store, builds
 * the canonical inputs with the method engine, and stores inputs, digest and result together.
 */
export function createScoring(deps: {
  store: Transactions<StoreTx>;
  clock: Clock;
  method?: MethodVersion;
  /** Agents per page of the daily recompute (default DAILY_PAGE). */
  dailyPageSize?: number;
  /**
   * Threads that score the daily recompute's pages (src/app/score-workers.ts), started for one recompute and closed at
   * its end; none: this thread scores them.
   */
  pageScorers?: (method: MethodVersion) => PageScorer;
}): Scoring {
  const { store } = deps;
  const method = deps.method ?? CURRENT_METHOD;
  const pageSize = deps.dailyPageSize ?? DAILY_PAGE;

  /** The facts of V5–V8 for `agent` at `at`, read in `tx`. */
  async function factsAt(tx: StoreTx, agent: AgentRow, at: number): Promise<ScoreFacts> {
    const today = utcDay(at);
    const days = await tx.listDays(agent.id, agent.claimId, today);
    const atMidnight = at === dayStart(today) ? await tx.countCheckinsAt(agent.id, agent.claimId, at) : 0;
    const [proofs, penalties] = await Promise.all([tx.proofsForAgentAt(agent.id, agent.ownerId, at), tx.listPenalties(agent.id)]);
    return factsFrom({ agent, days, atMidnight, proofs, penalties }, at, method);
  }

  /** The agent, as `tx` reads it; agent_not_found otherwise. */
  async function agentIn(tx: StoreTx, agentId: string): Promise<AgentRow> {
    const agent = await tx.getAgent(agentId);
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    return agent;
  }

  /** Computes and stores the score of one agent at `at` inside `tx`. */
  async function scoreAgentIn(tx: StoreTx, agentId: string, at: number, trigger: "daily" | "change"): Promise<ScoreRow> {
    return scoreOf(tx, await agentIn(tx, agentId), at, trigger);
  }

  async function scoreOf(tx: StoreTx, agent: AgentRow, at: number, trigger: "daily" | "change"): Promise<ScoreRow> {
    const agentId = agent.id;
    const score = newScoreOf(agent, await factsAt(tx, agent, at), at, trigger);
    const { id, moved } = await tx.insertScore(score);
    // score.changed (issue #28), in the score's own transaction: when the agent's latest score moved and says something else.
    if (moved) await tx.recordEvents(scoreChangedEvents([moved]));
    return {
      id,
      agentId,
      method: score.method,
      at,
      trigger,
      day: score.day,
      inputs: score.inputs,
      sha256: score.sha256,
      result: score.result,
      total: score.total,
    };
  }

  /**
   * Recomputes one agent at once, `at` = now (V9: its claim, proofs or penalties changed); an unclaimed agent (issue #29)
   * is left as it is (V2: only a claimed agent has a score).
   */
  async function onChange(tx: StoreTx, agentId: string, at: number): Promise<void> {
    const agent = await agentIn(tx, agentId);
    if (agent.releasedAt === null) await scoreOf(tx, agent, at, "change");
  }

  /**
   * The agents' ids a page at a time, in id order: each call asks for the page after the one the
   * previous call got (one query after the other, however far ahead they are asked), and an empty
   * page once the last was shorter than `pageSize`. Nothing grows with the number of agents.
   */
  function agentPages(pageSize: number): () => Promise<string[]> {
    let previous: Promise<string[] | null> = Promise.resolve(null);
    return () => {
      previous = previous.then((ids) =>
        ids !== null && ids.length < pageSize ? [] : store.read.listClaimedAgentIds({ after: ids?.[ids.length - 1], limit: pageSize }),
      );
      return previous as Promise<string[]>;
    };
  }

  /**
   * The daily recompute of day `day` (V9): every agent claimed by `day 00:00:00`, at that instant.
   * Agents that already have that day's score are skipped, so a rerun (or a catch-up) is safe.
   * The agents are read a keyset page at a time (`dailyPageSize` of them), so memory stays the same
   * whatever their number; scores are stored in agent order (their ids follow it).
   * @param onProgress called with how many agents have been looked at so far, after each page
   * @returns how many scores were stored
   */
  async function recomputeDay(day: string, onProgress?: (done: number) => void): Promise<number> {
    const at = dayStart(day);
    const nextPage = agentPages(pageSize);
    let scorer: PageScorer | undefined;
    let stored = 0;
    let done = 0;
    // The facts of a page of agents read in a few statements, their scores inserted in one transaction per
    // page, pages committed in order (score ids follow agent order). The next pages are read and computed
    // while the previous one is being written: computed by a worker thread when one is given (`pageScorers`),
    // so that this thread only moves rows between the database and it.
    let last = false;
    const prepare = async () => {
      const ids = await nextPage();
      if (ids.length < pageSize) last = true;
      const rows = ids.length === 0 ? [] : await store.read.dailyFactRows(ids, day, at);
      if (deps.pageScorers !== undefined && rows.length > 0) {
        scorer ??= deps.pageScorers(method);
        if (rows.length >= scorer.minRows) return { looked: ids.length, scores: await scorer.score(rows, at) };
      }
      // Each score goes into the batch in its stored form as soon as it is computed (ScoreBatch).
      const scores: ScoreBatch = store.read.scoreBatch();
      for (let i = 0; i < rows.length; i += DAILY_SLICE) {
        // The recompute shares its process with the API: requests are served between slices of a page.
        if (i > 0) await new Promise((resolve) => setImmediate(resolve));
        addDailyScores(rows.slice(i, i + DAILY_SLICE), at, method, scores);
      }
      return { looked: ids.length, scores };
    };
    const ahead: Array<ReturnType<typeof prepare>> = [];
    const readAhead = () => {
      while (!last && ahead.length < DAILY_READ_AHEAD) {
        const page = prepare();
        page.catch(() => undefined);
        ahead.push(page);
      }
    };
    try {
      readAhead();
      while (ahead.length > 0) {
        const { looked, scores } = await ahead.shift()!;
        readAhead();
        if (scores.size > 0) {
          stored += await store.transaction(async (tx) => {
            const written = await tx.insertScores(scores);
            await tx.recordEvents(scoreChangedEvents(written.moved));
            return written.stored;
          });
        }
        done += looked;
        if (looked > 0) onProgress?.(done);
      }
    } finally {
      // Pages still being prepared after a failure end first: a worker closed under one would fail it unheard.
      await Promise.allSettled(ahead);
      await scorer?.close();
    }
    return stored;
  }

  /** Computes the current score of an agent now and stores it. */
  async function scoreNow(agentId: string): Promise<ScoreRow> {
    return store.transaction((tx) => scoreAgentIn(tx, agentId, deps.clock.now(), "change"));
  }

  return { factsAt, scoreAgentIn, onChange, recomputeDay, scoreNow };
}
