import { buildScoreInputs, CURRENT_METHOD, dayStart, scoreFromInputs, utcDay, type DayAggregate, type MethodVersion, type ScoreFacts } from "../method";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";
import type { AgentRow, NewScore, PenaltyRow, ProofRow, ScoreRow, Store, StoreTx } from "./ports";

export type Scoring = ReturnType<typeof createScoring>;

/** The rows an agent's score facts are made of (V5–V8), as `factsAt` reads them one by one. */
export type AgentFactRows = {
  agent: AgentRow;
  /** `listDays(agent, claim, day of at)`: the claim's day aggregates up to the day of `at`, oldest first. */
  days: DayAggregate[];
  /** `countCheckinsAt(agent, claim, at)`: counted check-ins of the claim arriving exactly at `at`. */
  atMidnight: number;
  /** `proofsForAgentAt(agent, owner, at)`, in its order. */
  proofs: ProofRow[];
  /** `listPenalties(agent)`, in its order. */
  penalties: PenaltyRow[];
};

/**
 * Bulk reads and writes a store may also offer (on `read` and in its transactions), so the daily
 * recompute handles many agents per round trip (the SQL store does). Stores without them are
 * recomputed one agent at a time.
 */
export type DailyBatchTx = {
  /**
   * The fact rows at `at` of those of `agentIds` that exist, were claimed by `at` and have no daily
   * score of `day` yet, in the order of `agentIds`.
   */
  dailyFactRows(agentIds: readonly string[], day: string, at: number): Promise<AgentFactRows[]>;
  /** Inserts scores in the order given (so their ids follow that order). */
  insertScores(scores: readonly NewScore[]): Promise<void>;
};

/** Agents per batch (one insert transaction) in the batched daily recompute. */
const DAILY_BATCH = 1000;
/** Batches read and computed ahead of the one being written. */
const DAILY_READ_AHEAD = 2;

const isDailyBatchTx = (tx: StoreTx): tx is StoreTx & DailyBatchTx =>
  typeof (tx as Partial<DailyBatchTx>).dailyFactRows === "function" && typeof (tx as Partial<DailyBatchTx>).insertScores === "function";

/**
 * Computes and stores Vrai scores (V9): gathers an agent's facts at `at` from the store, builds
 * the canonical inputs with the method engine, and stores inputs, digest and result together.
 */
export function createScoring(deps: { store: Store; clock: Clock; method?: MethodVersion }) {
  const { store } = deps;
  const method = deps.method ?? CURRENT_METHOD;

  /** The facts of V5–V8 for `agent` at `at`, read in `tx`. */
  async function factsAt(tx: StoreTx, agent: AgentRow, at: number): Promise<ScoreFacts> {
    const today = utcDay(at);
    const days = await tx.listDays(agent.id, agent.claimId, today);
    const atMidnight = at === dayStart(today) ? await tx.countCheckinsAt(agent.id, agent.claimId, at) : 0;
    const [proofs, penalties] = await Promise.all([tx.proofsForAgentAt(agent.id, agent.ownerId, at), tx.listPenalties(agent.id)]);
    return factsFrom({ agent, days, atMidnight, proofs, penalties }, at);
  }

  /** The facts of V5–V8 at `at` from an agent's rows (`atMidnight` is used only when `at` is a midnight). */
  function factsFrom(rows: AgentFactRows, at: number): ScoreFacts {
    const { agent, penalties } = rows;
    const today = utcDay(at);
    // Check-ins of the day of `at` count for the established state only when they arrived by `at` (V8).
    // A daily score at `D 00:00:00` sees at most those arriving at that very second.
    let days: DayAggregate[] = rows.days;
    if (at === dayStart(today)) {
      days = rows.days.filter((d) => d.day < today);
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
        .map((p) => ({ id: p.id, code: p.code, points: p.points, days: p.days, addedAt: p.addedAt, revokedAt: p.revokedAt !== null && p.revokedAt <= at ? p.revokedAt : null })),
      days,
    };
  }

  /** The score to store (without id) of an agent's facts, with its claim and inputs document (the SQL store keeps them compactly). */
  function scoreRowOf(agent: AgentRow, facts: ScoreFacts, at: number, trigger: "daily" | "change"): NewScore {
    const document = buildScoreInputs(facts);
    const { result, canonical, sha256 } = scoreFromInputs(document);
    return {
      agentId: agent.id, method, at, trigger, day: trigger === "daily" ? utcDay(at) : null, inputs: canonical, sha256, result, total: result.total,
      claimId: agent.claimId, document,
    };
  }

  /** Computes and stores the score of one agent at `at` inside `tx`. */
  async function scoreAgentIn(tx: StoreTx, agentId: string, at: number, trigger: "daily" | "change"): Promise<ScoreRow> {
    const agent = await tx.getAgent(agentId);
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    const score = scoreRowOf(agent, await factsAt(tx, agent, at), at, trigger);
    const id = await tx.insertScore(score);
    return { id, agentId, method: score.method, at, trigger, day: score.day, inputs: score.inputs, sha256: score.sha256, result: score.result, total: score.total };
  }

  /** Recomputes one agent at once, `at` = now (V9: its claim, proofs or penalties changed). */
  async function onChange(tx: StoreTx, agentId: string, at: number): Promise<void> {
    await scoreAgentIn(tx, agentId, at, "change");
  }

  /**
   * The daily recompute of day `day` (V9): every agent claimed by `day 00:00:00`, at that instant.
   * Agents that already have that day's score are skipped, so a rerun (or a catch-up) is safe.
   * @returns how many scores were stored
   */
  async function recomputeDay(day: string, onProgress?: (done: number, total: number) => void): Promise<number> {
    const at = dayStart(day);
    const agentIds = await store.read.listClaimedAgentIds();
    let stored = 0;
    const bulk = store.read;
    if (isDailyBatchTx(bulk)) {
      // Batched when the store offers it: the facts of DAILY_BATCH agents read in a few statements, their
      // scores inserted in one transaction per batch, batches committed in order (score ids follow agent order).
      // The next batches are read and computed while the previous one is being written.
      const prepare = async (from: number) =>
        (await bulk.dailyFactRows(agentIds.slice(from, from + DAILY_BATCH), day, at)).map((r) => scoreRowOf(r.agent, factsFrom(r, at), at, "daily"));
      const ahead: Array<Promise<NewScore[]>> = [];
      let from = 0;
      const readAhead = () => {
        for (; ahead.length < DAILY_READ_AHEAD && from < agentIds.length; from += DAILY_BATCH) {
          const batch = prepare(from);
          batch.catch(() => undefined);
          ahead.push(batch);
        }
      };
      readAhead();
      for (let i = 0; ahead.length > 0; i += DAILY_BATCH) {
        const rows = await ahead.shift()!;
        readAhead();
        if (rows.length > 0) await store.transaction((tx) => (tx as StoreTx & DailyBatchTx).insertScores(rows));
        stored += rows.length;
        for (let k = i; k < Math.min(i + DAILY_BATCH, agentIds.length); k++) onProgress?.(k + 1, agentIds.length);
      }
      return stored;
    }
    for (let i = 0; i < agentIds.length; i++) {
      stored += await store.transaction(async (tx) => {
        const agent = await tx.getAgent(agentIds[i]);
        if (!agent || agent.claimedAt > at || (await tx.hasDailyScore(agent.id, day))) return 0;
        await scoreAgentIn(tx, agent.id, at, "daily");
        return 1;
      });
      onProgress?.(i + 1, agentIds.length);
    }
    return stored;
  }

  /** Computes the current score of an agent now and stores it. */
  async function scoreNow(agentId: string): Promise<ScoreRow> {
    return store.transaction((tx) => scoreAgentIn(tx, agentId, deps.clock.now(), "change"));
  }

  return { factsAt, scoreAgentIn, onChange, recomputeDay, scoreNow };
}
