import type { DayAggregate } from "../method";
import type { AgentRow, AuditEntry, ChallengeRow, OutageRow, OwnerRow, PenaltyRow, ProofRow, ScoreRow, Store, StoreTx, StoredCheckin } from "../service/ports";

/**
 * The store in memory, for `vrai replay` (METHOD F2: same service code, storage in memory).
 * One process, one event at a time: a transaction is the call itself. The service validates
 * before it writes, so a rejected operation leaves nothing behind here either.
 */
export function createMemoryStore(): Store {
  const owners = new Map<string, OwnerRow>();
  const agents = new Map<string, AgentRow>();
  let nextClaimId = 1;
  // Per agent: its counted check-ins by idempotency key (keys are scoped per agent, V3.1), and per
  // claim the arrivals and day aggregates. Nested maps keep the check-in path to a few lookups.
  const checkinsOf = new Map<string, { byKey: Map<string, StoredCheckin>; claims: Map<number, { arrivals: number[]; days: Map<string, DayAggregate> }> }>();
  const stateOf = (agentId: string) => {
    let state = checkinsOf.get(agentId);
    if (!state) checkinsOf.set(agentId, (state = { byKey: new Map(), claims: new Map() }));
    return state;
  };
  const claimStateOf = (agentId: string, claimId: number) => {
    const claims = stateOf(agentId).claims;
    let claim = claims.get(claimId);
    if (!claim) claims.set(claimId, (claim = { arrivals: [], days: new Map() }));
    return claim;
  };
  const outages = new Map<string, OutageRow>();
  const penalties = new Map<string, PenaltyRow>();
  const challenges = new Map<string, ChallengeRow>();
  const proofs = new Map<string, ProofRow>();
  const scores: ScoreRow[] = [];
  const auditLog: Array<AuditEntry & { id: number }> = [];
  const settings = new Map<string, unknown>();

  const copy = <T>(value: T | undefined): T | null => (value === undefined ? null : { ...value });

  const tx: StoreTx = {
    insertOwner: async (o: OwnerRow) => void owners.set(o.id, { ...o }),
    getOwner: async (id) => copy(owners.get(id)),

    getAgent: async (id) => copy(agents.get(id)),
    insertAgent: async (a) => void agents.set(a.id, { ...a }),
    async startClaim(agentId, c) {
      const agent = agents.get(agentId)!;
      const claimId = nextClaimId++;
      Object.assign(agent, { ownerId: c.ownerId, claimId, claimedAt: c.claimedAt, keyHash: c.keyHash, last: null });
      return claimId;
    },
    listClaimedAgentIds: async () => [...agents.keys()].sort(),
    listAgentsOfOwner: async (ownerId) => [...agents.values()].filter((a) => a.ownerId === ownerId).map((a) => a.id).sort(),

    findCheckinByKey: async (agentId, key) => copy(checkinsOf.get(agentId)?.byKey.get(key)),
    async recordCheckin(c: StoredCheckin, updated: readonly DayAggregate[]) {
      stateOf(c.agentId).byKey.set(c.idempotencyKey, { ...c });
      const claim = claimStateOf(c.agentId, c.claimId);
      claim.arrivals.push(c.arrival);
      agents.get(c.agentId)!.last = { arrival: c.arrival, nextHeartbeatS: c.nextHeartbeatS };
      for (const d of updated) claim.days.set(d.day, { ...d });
    },
    async getDays(agentId, claimId, wanted) {
      const byDay = checkinsOf.get(agentId)?.claims.get(claimId)?.days;
      const found: DayAggregate[] = [];
      if (!byDay) return found;
      for (const day of wanted) {
        const d = byDay.get(day);
        if (d) found.push({ ...d });
      }
      return found;
    },
    async listDays(agentId, claimId, lastDay) {
      const byDay = checkinsOf.get(agentId)?.claims.get(claimId)?.days;
      if (!byDay) return [];
      return [...byDay.values()].filter((d) => d.day <= lastDay).sort((a, b) => (a.day < b.day ? -1 : 1)).map((d) => ({ ...d }));
    },
    countCheckinsAt: async (agentId, claimId, at) =>
      (checkinsOf.get(agentId)?.claims.get(claimId)?.arrivals ?? []).filter((arrival) => arrival === at).length,

    async outagesFor(arrival, deadline) {
      const found: OutageRow[] = [];
      if (outages.size === 0) return found;
      for (const o of outages.values()) if (o.declaredAt <= arrival && (o.end === null || o.end >= deadline || (o.closedAt ?? 0) > arrival)) found.push({ ...o });
      return found;
    },
    listOutages: async () => [...outages.values()].map((o) => ({ ...o })).sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1)),
    getOutage: async (id) => copy(outages.get(id)),
    insertOutage: async (o) => void outages.set(o.id, { ...o }),
    closeOutage: async (id, end, closedAt) => void Object.assign(outages.get(id)!, { end, closedAt }),

    insertPenalty: async (p) => void penalties.set(p.id, { ...p }),
    getPenalty: async (id) => copy(penalties.get(id)),
    revokePenalty: async (id, revokedAt, reason) => void Object.assign(penalties.get(id)!, { revokedAt, revokeReason: reason }),
    listPenalties: async (agentId) => [...penalties.values()].filter((p) => p.agentId === agentId).map((p) => ({ ...p })),

    insertChallenge: async (c) => void challenges.set(c.id, { ...c }),
    async useChallenge(id, at) {
      const c = challenges.get(id);
      if (!c || c.usedAt !== null) return false;
      c.usedAt = at;
      return true;
    },
    getChallenge: async (id) => copy(challenges.get(id)),
    insertProof: async (p) => void proofs.set(p.id, { ...p }),
    getProof: async (id) => copy(proofs.get(id)),
    findActiveBinding: async (binding) => copy([...proofs.values()].find((p) => p.binding === binding && p.removedAt === null)),
    proofsForAgentAt: async (agentId, ownerId, at) =>
      [...proofs.values()]
        .filter((p) => (p.agentId === agentId || (p.agentId === null && p.ownerId === ownerId)) && p.verifiedAt <= at && (p.removedAt === null || p.removedAt > at))
        .map((p) => ({ ...p })),
    listActiveProofs: async () => [...proofs.values()].filter((p) => p.removedAt === null).map((p) => ({ ...p })),
    updateProofCheck: async (id, check) => void Object.assign(proofs.get(id)!, check),
    async removeProof(id, at, reason) {
      const p = proofs.get(id)!;
      if (p.removedAt === null) Object.assign(p, { removedAt: at, removedReason: reason });
    },

    async insertScore(s) {
      const row = { ...s, id: scores.length + 1 };
      scores.push(row);
      return row.id;
    },
    async latestScore(agentId) {
      let best: ScoreRow | undefined;
      for (const s of scores) if (s.agentId === agentId && (!best || s.at >= best.at)) best = s;
      return copy(best);
    },
    getScore: async (id) => copy(scores[id - 1]),
    listDailyScores: async (agentId, fromDay, toDay) =>
      scores.filter((s) => s.agentId === agentId && s.trigger === "daily" && s.day! >= fromDay && s.day! <= toDay).map((s) => ({ ...s })),
    hasDailyScore: async (agentId, day) => scores.some((s) => s.agentId === agentId && s.trigger === "daily" && s.day === day),
    scoresAfter: async (afterId, limit) => scores.slice(afterId, afterId + limit).map((s) => ({ ...s })),

    audit: async (e) => void auditLog.push({ ...e, id: auditLog.length + 1 }),
    listAudit: async ({ afterId, limit }) => auditLog.slice(afterId, afterId + limit).map((e) => ({ ...e })),

    getSetting: async <T>(key: string) => (settings.has(key) ? (settings.get(key) as T) : null),
    setSetting: async (key, value) => void settings.set(key, value),
  };

  return { transaction: (fn) => fn(tx), read: tx };
}
