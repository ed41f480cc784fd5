import { GRACE_S, type DayAggregate, type OutageWindow } from "../method";
import type { AgentRow, AuditEntry, ChallengeRow, OutageRow, OwnerRow, PenaltyRow, ProofRow, ScoreRow, Store, StoreTx, StoredCheckin } from "../service/ports";

/**
 * The store in memory, for `vrai replay` (METHOD F2: same service code, storage in memory).
 * One process, one event at a time: a transaction is the call itself. The service validates
 * before it writes, so a rejected operation leaves nothing behind here either.
 */
const NO_WINDOWS: readonly OutageWindow[] = Object.freeze([]);

export function createMemoryStore(): Store {
  const owners = new Map<string, OwnerRow>();
  const agents = new Map<string, AgentRow>();
  let nextClaimId = 1;
  // Per agent, every counted check-in as numbers in one typed array (no object per check-in: replay
  // keeps hundreds of thousands), its offset by idempotency key (keys are scoped per agent, V3.1), and per claim the
  // day aggregates. Agent rows are replaced, never changed in place, so they can be handed out as they are.
  type AgentCheckins = {
    byKey: Map<string, number>;
    /**
     * CHECKIN_FIELDS numbers per check-in: claim id, arrival, next_heartbeat_s, flags, credit; the first
     * `used` hold check-ins. A Float64Array holds every safe integer exactly and lives outside the JS heap,
     * so growing it (by doubling) copies nothing through the young generation, as growing an array did.
     */
    fields: Float64Array;
    used: number;
    days: Map<number, Map<string, DayAggregate>>;
  };
  const CHECKIN_FIELDS = 5;
  /** Check-ins an agent's array holds before it first grows. */
  const INITIAL_CHECKINS = 64;
  const checkinsOf = new Map<string, AgentCheckins>();
  const checkinsFor = (agentId: string): AgentCheckins => {
    let state = checkinsOf.get(agentId);
    if (!state) checkinsOf.set(agentId, (state = { byKey: new Map(), fields: new Float64Array(INITIAL_CHECKINS * CHECKIN_FIELDS), used: 0, days: new Map() }));
    return state;
  };
  /** Appends one check-in's fields; flags: 0 late, 1 on time, 2 null (first after a claim); + 4 when excused. */
  const appendCheckin = (all: AgentCheckins, c: StoredCheckin): void => {
    if (all.used + CHECKIN_FIELDS > all.fields.length) {
      const grown = new Float64Array(all.fields.length * 2);
      grown.set(all.fields);
      all.fields = grown;
    }
    const at = all.used;
    all.fields[at] = c.claimId;
    all.fields[at + 1] = c.arrival;
    all.fields[at + 2] = c.nextHeartbeatS;
    all.fields[at + 3] = (c.onTime === null ? 2 : c.onTime ? 1 : 0) + (c.excused ? 4 : 0);
    all.fields[at + 4] = c.credit;
    all.used = at + CHECKIN_FIELDS;
  };
  const storedCheckin = (agentId: string, key: string, c: AgentCheckins, at: number): StoredCheckin => ({
    agentId, claimId: c.fields[at], idempotencyKey: key, arrival: c.fields[at + 1], nextHeartbeatS: c.fields[at + 2],
    onTime: (c.fields[at + 3] & 3) === 2 ? null : (c.fields[at + 3] & 3) === 1, excused: (c.fields[at + 3] & 4) !== 0, credit: c.fields[at + 4],
  });
  const daysOf = (agentId: string, claimId: number) => checkinsOf.get(agentId)?.days.get(claimId);
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
      const claimId = nextClaimId++;
      agents.set(agentId, { ...agents.get(agentId)!, ownerId: c.ownerId, claimId, claimedAt: c.claimedAt, keyHash: c.keyHash, last: null });
      return claimId;
    },
    listClaimedAgentIds: async () => [...agents.keys()].sort(),
    listAgentsOfOwner: async (ownerId) => [...agents.values()].filter((a) => a.ownerId === ownerId).map((a) => a.id).sort(),

    async listDays(agentId, claimId, lastDay) {
      const byDay = daysOf(agentId, claimId);
      if (!byDay) return [];
      return [...byDay.values()].filter((d) => d.day <= lastDay).sort((a, b) => (a.day < b.day ? -1 : 1)).map((d) => ({ ...d }));
    },
    async countCheckinsAt(agentId, claimId, at) {
      const c = checkinsOf.get(agentId);
      let n = 0;
      if (c) for (let i = 0; i < c.used; i += CHECKIN_FIELDS) if (c.fields[i + 1] === at && c.fields[i] === claimId) n++;
      return n;
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

  /** V4.3 windows that may excuse the check-in after `last` (the SQL store's filter, `checkinState`). */
  const windowsAfter = (last: AgentRow["last"]): readonly OutageWindow[] => {
    if (last === null || outages.size === 0) return NO_WINDOWS;
    const found: OutageWindow[] = [];
    const deadline = last.arrival + last.nextHeartbeatS + GRACE_S;
    for (const o of outages.values()) if (o.end === null || o.end >= deadline || (o.closedAt ?? -Infinity) > last.arrival) found.push({ ...o });
    return found;
  };

  return {
    transaction: (fn) => fn(tx),
    read: tx,
    // The check-in calls answer at once, without a promise: replay plays a check-in synchronously.
    checkinState(agentId, key) {
      const agent = agents.get(agentId);
      if (!agent) return { agent: null, duplicate: null, windows: NO_WINDOWS };
      // Rows are replaced, never changed in place (startClaim, commitCheckin): the stored row is a snapshot.
      const c = checkinsOf.get(agentId);
      const i = c?.byKey.get(key);
      return { agent, duplicate: i === undefined ? null : storedCheckin(agentId, key, c!, i), windows: windowsAfter(agent.last) };
    },
    commitCheckin(expected, c, deltas) {
      const agent = agents.get(c.agentId);
      if (!agent || agent.claimId !== expected.claimId || (agent.last === null ? null : agent.last.arrival) !== expected.lastArrival) return false;
      const all = checkinsFor(c.agentId);
      all.byKey.set(c.idempotencyKey, all.used);
      appendCheckin(all, c);
      // A new row (rows are never changed in place, so checkinState hands them out as they are),
      // spelled out: an object spread with extra keys is several times slower than a literal here.
      agents.set(c.agentId, {
        id: agent.id, name: agent.name, ownerId: agent.ownerId, claimId: agent.claimId, claimedAt: agent.claimedAt, keyHash: agent.keyHash,
        last: { arrival: c.arrival, nextHeartbeatS: c.nextHeartbeatS, dayDigest: deltas[deltas.length - 1].digest as string }, createdAt: agent.createdAt,
      });
      let days = all.days.get(c.claimId);
      if (!days) all.days.set(c.claimId, (days = new Map()));
      // The aggregates live here only (listDays hands out copies), so deltas are added in place.
      for (const delta of deltas) {
        const day = days.get(delta.day);
        if (day === undefined) {
          days.set(delta.day, { day: delta.day, checkins: delta.checkins, onTime: delta.onTime, creditS: delta.creditS, coverageS: delta.coverageS, digest: delta.digest ?? "" });
        } else {
          day.checkins += delta.checkins;
          day.onTime += delta.onTime;
          day.creditS += delta.creditS;
          day.coverageS += delta.coverageS;
          if (delta.digest !== null) day.digest = delta.digest;
        }
      }
      return true;
    },
  };
}
