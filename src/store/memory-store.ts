import { applyDayDeltas, GRACE_S, type DayAggregate, type OutageWindow } from "../method";
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

    async listDays(agentId, claimId, lastDay) {
      const byDay = checkinsOf.get(agentId)?.claims.get(claimId)?.days;
      if (!byDay) return [];
      return [...byDay.values()].filter((d) => d.day <= lastDay).sort((a, b) => (a.day < b.day ? -1 : 1)).map((d) => ({ ...d }));
    },
    countCheckinsAt: async (agentId, claimId, at) =>
      (checkinsOf.get(agentId)?.claims.get(claimId)?.arrivals ?? []).filter((arrival) => arrival === at).length,

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

  /** V4.3 windows that may excuse the check-in after `last` (the SQL store's filter, `checkinState`). */
  const windowsAfter = (last: AgentRow["last"]): OutageWindow[] => {
    const found: OutageWindow[] = [];
    if (last === null || outages.size === 0) return found;
    const deadline = last.arrival + last.nextHeartbeatS + GRACE_S;
    for (const o of outages.values()) if (o.end === null || o.end >= deadline || (o.closedAt ?? -Infinity) > last.arrival) found.push({ ...o });
    return found;
  };

  return {
    transaction: (fn) => fn(tx),
    read: tx,
    async checkinState(agentId, key) {
      const agent = agents.get(agentId);
      if (!agent) return { agent: null, duplicate: null, windows: [] };
      // The agent is copied (claims change the stored row in place); stored check-ins never change, so the duplicate is shared.
      return { agent: { ...agent }, duplicate: checkinsOf.get(agentId)?.byKey.get(key) ?? null, windows: windowsAfter(agent.last) };
    },
    async commitCheckin(expected, c, deltas) {
      const agent = agents.get(c.agentId);
      if (!agent || agent.claimId !== expected.claimId || (agent.last === null ? null : agent.last.arrival) !== expected.lastArrival) return false;
      stateOf(c.agentId).byKey.set(c.idempotencyKey, c); // built by the service for this call only
      const claim = claimStateOf(c.agentId, c.claimId);
      claim.arrivals.push(c.arrival);
      agent.last = { arrival: c.arrival, nextHeartbeatS: c.nextHeartbeatS, dayDigest: deltas[deltas.length - 1].digest as string };
      applyDayDeltas(claim.days, deltas);
      return true;
    },
  };
}
