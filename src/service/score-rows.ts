/**
 * An agent's score from its fact rows (V5–V9), pure: no clock, no store, no I/O. The scoring service
 * computes every score through it, and the daily recompute may run it on a worker thread a page at a
 * time (`PageScorer`, src/app/score-workers.ts).
 */
import { buildScoreInputs, dayStart, scoreFromInputs, utcDay, type DayAggregate, type MethodVersion, type ScoreFacts } from "../method";
import type { AgentFactRows, AgentRow, NewScore, ScoreBatch } from "./ports";

/** The facts of V5–V8 at `at` from an agent's rows (`atMidnight` is used only when `at` is a midnight). */
export function factsFrom(rows: AgentFactRows, at: number, method: MethodVersion): ScoreFacts {
  const { agent, penalties } = rows;
  const today = utcDay(at);
  // Read once (AgentFactRows.days may be made at each read).
  let days: DayAggregate[] = rows.days;
  // Check-ins of the day of `at` count for the established state only when they arrived by `at` (V8).
  // A daily score at `D 00:00:00` sees at most those arriving at that very second.
  if (at === dayStart(today)) {
    days = days.filter((d) => d.day < today);
    if (rows.atMidnight > 0) days.push({ day: today, checkins: rows.atMidnight, onTime: 0, creditS: 0, coverageS: 0, digest: "" });
  }
  return {
    agent: agent.id,
    method,
    at,
    claimedAt: agent.claimedAt,
    proofs: rows.proofs.map((p) => ({ kind: p.kind })),
    penalties: penalties
      .filter((p) => p.addedAt <= at)
      .map((p) => ({
        id: p.id,
        code: p.code,
        points: p.points,
        days: p.days,
        addedAt: p.addedAt,
        revokedAt: p.revokedAt !== null && p.revokedAt <= at ? p.revokedAt : null,
      })),
    days,
    earlierCheckinDays: rows.earlierCheckinDays,
  };
}

/** The score to store (without id) of an agent's facts, with its claim and inputs document (the SQL store keeps them compactly). */
export function newScoreOf(agent: AgentRow, facts: ScoreFacts, at: number, trigger: "daily" | "change"): NewScore {
  const document = buildScoreInputs(facts);
  const { result, canonical, sha256 } = scoreFromInputs(document);
  return {
    agentId: agent.id,
    method: facts.method,
    at,
    trigger,
    day: trigger === "daily" ? utcDay(at) : null,
    inputs: canonical,
    sha256,
    result,
    total: result.total,
    claimId: agent.claimId,
    document,
  };
}

/** The daily scores at `at` (a midnight, V9) of a page of agents' rows, added to `batch` in the rows' order. */
export function addDailyScores(rows: readonly AgentFactRows[], at: number, method: MethodVersion, batch: ScoreBatch): void {
  for (const row of rows) batch.add(newScoreOf(row.agent, factsFrom(row, at, method), at, "daily"));
}

/**
 * Scores pages of the daily recompute off the calling thread (src/app/score-workers.ts): a page's rows in,
 * the store's batch of their daily scores out, as `addDailyScores` makes it. Pages shorter than `minRows`
 * are not worth the trip and are scored on the calling thread.
 */
export type PageScorer = {
  readonly minRows: number;
  /** The daily scores at `at` of `rows`, in a batch of the store that read them. */
  score(rows: readonly AgentFactRows[], at: number): Promise<ScoreBatch>;
  /** Ends the threads; a page asked for afterwards starts them again. */
  close(): Promise<void>;
};
