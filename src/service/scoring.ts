import { buildScoreInputs, CURRENT_METHOD, dayStart, scoreFromInputs, utcDay, type DayAggregate, type MethodVersion, type ScoreFacts } from "../method";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";
import type { AgentRow, ScoreRow, Store, StoreTx } from "./ports";

export type Scoring = ReturnType<typeof createScoring>;

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
    const stored = await tx.listDays(agent.id, agent.claimId, today);
    // Check-ins of the day of `at` count for the established state only when they arrived by `at` (V8).
    // A daily score at `D 00:00:00` sees at most those arriving at that very second.
    let days: DayAggregate[] = stored;
    if (at === dayStart(today)) {
      days = stored.filter((d) => d.day < today);
      const atMidnight = await tx.countCheckinsAt(agent.id, agent.claimId, at);
      if (atMidnight > 0) days.push({ day: today, checkins: atMidnight, onTime: 0, creditS: 0, coverageS: 0, digest: "" });
    }
    const [proofs, penalties] = await Promise.all([tx.proofsForAgentAt(agent.id, agent.ownerId, at), tx.listPenalties(agent.id)]);
    return {
      agent: agent.id,
      method,
      at,
      claimedAt: agent.claimedAt,
      proofs: proofs.map((p) => ({ kind: p.kind })),
      penalties: penalties
        .filter((p) => p.addedAt <= at)
        .map((p) => ({ id: p.id, code: p.code, points: p.points, days: p.days, addedAt: p.addedAt, revokedAt: p.revokedAt !== null && p.revokedAt <= at ? p.revokedAt : null })),
      days,
    };
  }

  /** Computes and stores the score of one agent at `at` inside `tx`. */
  async function scoreAgentIn(tx: StoreTx, agentId: string, at: number, trigger: "daily" | "change"): Promise<ScoreRow> {
    const agent = await tx.getAgent(agentId);
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    const inputs = buildScoreInputs(await factsAt(tx, agent, at));
    const { result, canonical, sha256 } = scoreFromInputs(inputs);
    const row: Omit<ScoreRow, "id"> = {
      agentId, method, at, trigger, day: trigger === "daily" ? utcDay(at) : null, inputs: canonical, sha256, result, total: result.total,
    };
    const id = await tx.insertScore(row);
    return { ...row, id };
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
