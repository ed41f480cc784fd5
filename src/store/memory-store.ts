import { BaseError } from "../errors";
import { GRACE_S, type DayAggregate, type OutageWindow } from "../method";
import { agentAfterCheckin } from "./agent-rows";
import { KeyList } from "./key-list";
import { createMemoryConsole } from "./memory-console";
import type {
  AgentFactRows,
  AgentRow,
  AuditEntry,
  ChallengeRow,
  OutageRow,
  OwnerRecomputeJob,
  OwnerRow,
  PageRequest,
  PenaltyRow,
  NewScore,
  ProofRow,
  ScoreBatch,
  ScoreRow,
  Store,
  Erc8004PublishingRow,
  StoreTx,
  StoredCheckin,
} from "../service/ports";

/**
 * The store in memory, for `vrai replay` (METHOD F2: same service code, storage in memory).
 * One process, one event at a time: a transaction is the call itself. The service validates
 * before it writes, so a rejected operation leaves nothing behind here either.
 */
const NO_WINDOWS: readonly OutageWindow[] = Object.freeze([]);

/** The memory store's ScoreBatch: the scores as given, inserted one by one (`insertScore`); replay keeps no pages waiting. */
class MemoryScoreBatch implements ScoreBatch {
  readonly scores: NewScore[] = [];
  add(score: NewScore): void {
    this.scores.push(score);
  }
  get size(): number {
    return this.scores.length;
  }
}

/**
 * An agent: its row, replaced and never changed in place (so `checkinState` hands it out as it is),
 * and every counted check-in as numbers in one typed array (no object per check-in: replay keeps
 * hundreds of thousands), the idempotency keys of the latest claim's check-ins (scoped per agent and
 * claim, V3.1: a new claim forgets them) and per claim the day aggregates.
 */
type AgentRecord = {
  row: AgentRow;
  /** Idempotency key of each counted check-in of the latest claim, in order: position n is check-in `claimFirst + n`. */
  keys: KeyList;
  /** The position of the latest claim's first check-in (the check-ins before it were counted under earlier claims). */
  claimFirst: number;
  /**
   * CHECKIN_FIELDS numbers per check-in: claim id, arrival, next_heartbeat_s, flags, credit; the first
   * `used` hold check-ins. A Float64Array holds every safe integer exactly and lives outside the JS heap,
   * so growing it copies nothing through the young generation, as growing an array did.
   */
  fields: Float64Array;
  used: number;
  days: Map<number, Map<string, DayAggregate>>;
  /** The aggregate of the latest day written (a check-in nearly always adds to the day of the one before). */
  lastDay: { claimId: number; aggregate: DayAggregate } | null;
};
const CHECKIN_FIELDS = 5;
/** Check-ins an agent's array holds once it first grows. */
const INITIAL_CHECKINS = 64;
const NO_FIELDS = new Float64Array(0);

/** A keyset page of rows already in key order: those after `page.after` (by `compare`), `page.limit` of them; all without a page. */
function pageOf<T, P>(rows: T[], page: PageRequest<P> | undefined, compare: (row: T, after: P) => number): T[] {
  if (page === undefined) return rows;
  const { after } = page;
  return (after === undefined ? rows : rows.filter((r) => compare(r, after) > 0)).slice(0, page.limit);
}
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export function createMemoryStore(): Store {
  const owners = new Map<string, OwnerRow>();
  // Per agent one record: its row and its check-ins, so a check-in finds both with one lookup.
  const agents = new Map<string, AgentRecord>();
  let nextClaimId = 1;
  /** Every claimed agent's id in id order, for keyset pages of them; rebuilt after an agent is added, unclaimed or claimed again. */
  let sortedIds: string[] | null = null;
  /** Appends one check-in's fields; flags: 0 late, 1 on time, 2 null (first after a claim); + 4 when excused. */
  const appendCheckin = (r: AgentRecord, c: StoredCheckin): void => {
    if (r.used + CHECKIN_FIELDS > r.fields.length) {
      // Grown 4 times at once: each new typed array is zeroed outside the heap, and costs more than the copy.
      const grown = new Float64Array(Math.max(INITIAL_CHECKINS * CHECKIN_FIELDS, r.fields.length * 4));
      grown.set(r.fields);
      r.fields = grown;
    }
    const at = r.used;
    r.fields[at] = c.claimId;
    r.fields[at + 1] = c.arrival;
    r.fields[at + 2] = c.nextHeartbeatS;
    r.fields[at + 3] = (c.onTime === null ? 2 : c.onTime ? 1 : 0) + (c.excused ? 4 : 0);
    r.fields[at + 4] = c.credit;
    r.used = at + CHECKIN_FIELDS;
  };
  const storedCheckin = (r: AgentRecord, n: number, idempotencyKey: string): StoredCheckin => {
    const at = n * CHECKIN_FIELDS;
    const f = r.fields;
    return {
      agentId: r.row.id,
      claimId: f[at],
      idempotencyKey,
      arrival: f[at + 1],
      nextHeartbeatS: f[at + 2],
      onTime: (f[at + 3] & 3) === 2 ? null : (f[at + 3] & 3) === 1,
      excused: (f[at + 3] & 4) !== 0,
      credit: f[at + 4],
    };
  };
  const outages = new Map<string, OutageRow>();
  const penalties = new Map<string, PenaltyRow>();
  const challenges = new Map<string, ChallengeRow>();
  const proofs = new Map<string, ProofRow>();
  const scores: ScoreRow[] = [];
  const auditLog: Array<AuditEntry & { id: number }> = [];
  const settings = new Map<string, unknown>();
  const publishing = new Map<string, Erc8004PublishingRow>();
  const ownerRecomputes = new Map<string, OwnerRecomputeJob & { dueAt: number }>();
  /** Generations are never reused, not even by a later request of the same owner (as migration 009's sequence). */
  let lastGeneration = 0;

  const copy = <T>(value: T | undefined): T | null => (value === undefined ? null : { ...value });

  const tx: StoreTx = {
    insertOwner: async (o: OwnerRow) => void owners.set(o.id, { ...o }),
    getOwner: async (id) => copy(owners.get(id)),

    getAgent: async (id) => copy(agents.get(id)?.row),
    async insertAgent(a) {
      agents.set(a.id, { row: { ...a }, keys: new KeyList(), claimFirst: 0, fields: NO_FIELDS, used: 0, days: new Map(), lastDay: null });
      sortedIds = null;
    },
    async startClaim(agentId, c) {
      const claimId = nextClaimId++;
      const r = agents.get(agentId)!;
      if (r.row.releasedAt !== null) sortedIds = null;
      r.row = {
        ...r.row,
        ownerId: c.ownerId,
        claimId,
        claimedAt: c.claimedAt,
        keyHash: c.keyHash,
        last: null,
        lateDeadline: null,
        releasedAt: null,
      };
      // V2, V3.1: a new claim forgets the idempotency keys.
      r.keys = new KeyList();
      r.claimFirst = r.used / CHECKIN_FIELDS;
      return claimId;
    },
    async releaseAgent(agentId, at) {
      const r = agents.get(agentId)!;
      r.row = { ...r.row, releasedAt: at, keyHash: "", lateDeadline: null };
      sortedIds = null;
    },
    async setAgentKey(agentId, keyHash) {
      const r = agents.get(agentId)!;
      r.row = { ...r.row, keyHash };
    },
    async listClaimedAgentIds({ after, limit }) {
      sortedIds ??= [...agents.values()]
        .filter((r) => r.row.releasedAt === null)
        .map((r) => r.row.id)
        .sort(byText);
      const ids = sortedIds;
      // The first id after `after`, by binary search: a page costs the same however deep it is.
      let lo = 0;
      for (let hi = ids.length; after !== undefined && lo < hi; ) {
        const mid = (lo + hi) >>> 1;
        if (ids[mid] <= after) lo = mid + 1;
        else hi = mid;
      }
      return ids.slice(lo, lo + limit);
    },
    listAgentsOfOwner: async (ownerId, page) =>
      pageOf(
        [...agents.values()]
          .filter((r) => r.row.ownerId === ownerId && r.row.releasedAt === null)
          .map((r) => r.row.id)
          .sort(),
        page,
        byText,
      ),
    countAgentsOfOwner: async (ownerId) =>
      [...agents.values()].filter((r) => r.row.ownerId === ownerId && r.row.releasedAt === null).length,

    async listDays(agentId, claimId, lastDay) {
      const byDay = agents.get(agentId)?.days.get(claimId);
      if (!byDay) return [];
      return [...byDay.values()]
        .filter((d) => d.day <= lastDay)
        .sort((a, b) => (a.day < b.day ? -1 : 1))
        .map((d) => ({ ...d }));
    },
    async countCheckinsAt(agentId, claimId, at) {
      const r = agents.get(agentId);
      let n = 0;
      if (r) for (let i = 0; i < r.used; i += CHECKIN_FIELDS) if (r.fields[i + 1] === at && r.fields[i] === claimId) n++;
      return n;
    },

    listOutages: async () => [...outages.values()].map((o) => ({ ...o })).sort((a, b) => a.start - b.start || (a.id < b.id ? -1 : 1)),
    getOutage: async (id) => copy(outages.get(id)),
    insertOutage: async (o) => void outages.set(o.id, { ...o }),
    closeOutage: async (id, end, closedAt, closedBy) => void Object.assign(outages.get(id)!, { end, closedAt, closedBy }),

    insertPenalty: async (p) => void penalties.set(p.id, { ...p }),
    getPenalty: async (id) => copy(penalties.get(id)),
    revokePenalty: async (id, revokedAt, reason, revokedBy) =>
      void Object.assign(penalties.get(id)!, { revokedAt, revokeReason: reason, revokedBy }),
    listPenalties: async (agentId, page) => {
      const rows = [...penalties.values()].filter((p) => p.agentId === agentId).map((p) => ({ ...p }));
      if (page === undefined) return rows;
      return pageOf(
        rows.sort((a, b) => a.addedAt - b.addedAt || byText(a.id, b.id)),
        page,
        (p, after) => p.addedAt - after.addedAt || byText(p.id, after.id),
      );
    },

    insertChallenge: async (c) => void challenges.set(c.id, { ...c }),
    async useChallenge(id, at) {
      const c = challenges.get(id);
      if (!c || c.usedAt !== null) return false;
      c.usedAt = at;
      return true;
    },
    getChallenge: async (id) => copy(challenges.get(id)),
    countOpenChallenges: async (ownerId, at) =>
      [...challenges.values()].filter((c) => c.ownerId === ownerId && c.usedAt === null && c.expiresAt > at).length,
    async deleteExpiredChallenges(at, { ownerId, limit }) {
      const expired = [...challenges.values()].filter((c) => c.expiresAt <= at && (ownerId === undefined || c.ownerId === ownerId));
      const deleted = expired.sort((a, b) => a.expiresAt - b.expiresAt).slice(0, limit);
      for (const c of deleted) challenges.delete(c.id);
      return deleted.length;
    },
    async insertProof(p) {
      if (p.binding !== null && [...proofs.values()].some((held) => held.binding === p.binding && held.removedAt === null)) return false;
      proofs.set(p.id, { ...p });
      return true;
    },
    getProof: async (id) => copy(proofs.get(id)),
    findActiveBinding: async (binding) => copy([...proofs.values()].find((p) => p.binding === binding && p.removedAt === null)),
    async proofsForAgentAt(agentId, ownerId, at, page) {
      const rows = [...proofs.values()]
        .filter(
          (p) =>
            (p.agentId === agentId || (p.agentId === null && p.ownerId === ownerId)) &&
            p.verifiedAt <= at &&
            (p.removedAt === null || p.removedAt > at),
        )
        .map((p) => ({ ...p }));
      if (page === undefined) return rows;
      return pageOf(
        rows.sort((a, b) => a.verifiedAt - b.verifiedAt || byText(a.id, b.id)),
        page,
        (p, after) => p.verifiedAt - after.verifiedAt || byText(p.id, after.id),
      );
    },
    async ownerLevelProofsAt(ownerId, at) {
      return [...proofs.values()]
        .filter((p) => p.agentId === null && p.ownerId === ownerId && p.verifiedAt <= at && (p.removedAt === null || p.removedAt > at))
        .sort((a, b) => a.verifiedAt - b.verifiedAt || byText(a.id, b.id))
        .map((p) => ({ ...p }));
    },
    listActiveProofs: async () => [...proofs.values()].filter((p) => p.removedAt === null).map((p) => ({ ...p })),
    updateProofCheck: async (id, check) => void Object.assign(proofs.get(id)!, check),
    async removeProof(id, at, reason) {
      const p = proofs.get(id)!;
      if (p.removedAt === null) Object.assign(p, { removedAt: at, removedReason: reason });
    },

    async insertScore(s) {
      const row = { ...s, id: scores.length + 1 };
      scores.push(row);
      // No owner keeps events here: replay has no webhook endpoints (issue #28).
      return { id: row.id, moved: null };
    },
    async latestScore(agentId) {
      let best: ScoreRow | undefined;
      for (const s of scores) if (s.agentId === agentId && (!best || s.at >= best.at)) best = s;
      return copy(best);
    },
    getScore: async (id) => copy(scores[id - 1]),
    listDailyScores: async (agentId, fromDay, toDay, page) =>
      pageOf(
        scores.filter((s) => s.agentId === agentId && s.trigger === "daily" && s.day! >= fromDay && s.day! <= toDay).map((s) => ({ ...s })),
        page,
        (s, after) => byText(s.day!, after),
      ),
    hasDailyScore: async (agentId, day) => scores.some((s) => s.agentId === agentId && s.trigger === "daily" && s.day === day),
    // The daily recompute's bulk reads and writes, made of the one-by-one ones (nothing here is a round trip).
    async dailyFactRows(agentIds, day, at) {
      const rows: AgentFactRows[] = [];
      for (const id of agentIds) {
        const agent = await tx.getAgent(id);
        if (!agent || agent.claimedAt > at || agent.releasedAt !== null) continue;
        const [days, atMidnight, proofs, penalties] = await Promise.all([
          tx.listDays(id, agent.claimId, day),
          tx.countCheckinsAt(id, agent.claimId, at),
          tx.proofsForAgentAt(id, agent.ownerId, at),
          tx.listPenalties(id),
        ]);
        rows.push({ agent, days, atMidnight, proofs, penalties });
      }
      return rows;
    },
    scoreBatch: () => new MemoryScoreBatch(),
    async insertScores(batch) {
      if (!(batch instanceof MemoryScoreBatch))
        throw new BaseError("foreign_score_batch", "insertScores takes a batch of this store's scoreBatch()");
      let inserted = 0;
      for (const s of batch.scores) {
        if (s.trigger === "daily" && s.day !== null && (await tx.hasDailyScore(s.agentId, s.day))) continue;
        await tx.insertScore(s);
        inserted++;
      }
      return { stored: inserted, moved: [] };
    },
    scoresAfter: async (afterId, limit) => scores.slice(afterId, afterId + limit).map((s) => ({ ...s })),

    audit: async (e) => void auditLog.push({ ...e, id: auditLog.length + 1 }),
    listAudit: async ({ afterId, limit }) => auditLog.slice(afterId, afterId + limit).map((e) => ({ ...e })),

    async requestOwnerRecompute(ownerId, at) {
      const pending = ownerRecomputes.get(ownerId);
      if (pending) pending.generation = ++lastGeneration;
      else ownerRecomputes.set(ownerId, { ownerId, generation: ++lastGeneration, attempts: 0, dueAt: at });
    },
    async takeOwnerRecomputes(now, leaseUntil, limit) {
      const due = [...ownerRecomputes.values()]
        .filter((j) => j.dueAt <= now)
        .sort((a, b) => a.dueAt - b.dueAt || byText(a.ownerId, b.ownerId))
        .slice(0, limit);
      for (const j of due) j.dueAt = leaseUntil;
      return due.map((j) => ({ ownerId: j.ownerId, generation: j.generation, attempts: j.attempts }));
    },
    async finishOwnerRecompute(job, now) {
      const pending = ownerRecomputes.get(job.ownerId);
      if (pending?.generation === job.generation) ownerRecomputes.delete(job.ownerId);
      else if (pending) Object.assign(pending, { dueAt: now, attempts: 0 });
    },
    async failOwnerRecompute(job, dueAt) {
      const pending = ownerRecomputes.get(job.ownerId);
      if (pending) Object.assign(pending, { dueAt, attempts: pending.attempts + 1 });
    },

    getSetting: async <T>(key: string) => (settings.has(key) ? (settings.get(key) as T) : null),
    setSetting: async (key, value) => void settings.set(key, value),

    // Events are kept for owners with a webhook endpoint (issue #28); replay has none, so it records none.
    recordEvents: async () => undefined,

    getErc8004Publishing: async (agentId) => copy(publishing.get(agentId)),
    setErc8004Publishing: async (row) => void publishing.set(row.agentId, { ...row }),
    // Replay gives no feedback (it has no chain): there is never one to withdraw.
    withdrawErc8004Feedback: async () => 0,

    ...createMemoryConsole(owners),
  };

  /** V4.3 windows that may excuse the check-in after `last` (the SQL store's filter, `checkinState`). */
  const windowsAfter = (last: AgentRow["last"]): readonly OutageWindow[] => {
    if (last === null || outages.size === 0) return NO_WINDOWS;
    const found: OutageWindow[] = [];
    const deadline = last.arrival + last.nextHeartbeatS + GRACE_S;
    for (const o of outages.values())
      if (o.end === null || o.end >= deadline || (o.closedAt ?? -Infinity) > last.arrival) found.push({ ...o });
    return found;
  };

  return {
    transaction: (fn) => fn(tx),
    read: tx,
    // Always as it is now (one process's memory is the store): never `cached`; the windows have no revisions.
    async checkinState(agentId, key) {
      const r = agents.get(agentId);
      if (!r) return { agent: null, duplicate: null, windows: NO_WINDOWS, windowsRevision: 0, cached: false };
      const n = r.keys.indexOf(key);
      const duplicate = n < 0 ? null : storedCheckin(r, r.claimFirst + n, key);
      return { agent: r.row, duplicate, windows: windowsAfter(r.row.last), windowsRevision: 0, cached: false };
    },
    // One process's memory: what it holds is what it keeps.
    async confirmDurable(d) {
      const r = agents.get(d.agentId);
      const n = r && r.row.claimId === d.claimId ? r.keys.indexOf(d.idempotencyKey) : -1;
      return r !== undefined && n >= 0 && storedCheckin(r, r.claimFirst + n, d.idempotencyKey).arrival === d.arrival;
    },
    async commitCheckin(expected, c, deltas) {
      const r = agents.get(c.agentId);
      if (!r) return false;
      const agent = r.row;
      if (agent.claimId !== expected.claimId || (agent.last === null ? null : agent.last.arrival) !== expected.lastArrival) return false;
      if (agent.releasedAt !== null || agent.keyHash !== expected.keyHash || r.keys.indexOf(c.idempotencyKey) >= 0) return false;
      r.keys.add(c.idempotencyKey);
      appendCheckin(r, c);
      // A new row (rows are never changed in place, so checkinState hands them out as they are).
      r.row = agentAfterCheckin(agent, c, deltas[deltas.length - 1].digest as string);
      // The aggregates live here only (listDays hands out copies), so deltas are added in place.
      for (const delta of deltas) {
        const last = r.lastDay;
        let day = last !== null && last.claimId === c.claimId && last.aggregate.day === delta.day ? last.aggregate : undefined;
        if (day === undefined) {
          let days = r.days.get(c.claimId);
          if (!days) {
            days = new Map();
            r.days.set(c.claimId, days);
          }
          day = days.get(delta.day);
          if (day === undefined) {
            day = { day: delta.day, checkins: 0, onTime: 0, creditS: 0, coverageS: 0, digest: "" };
            days.set(delta.day, day);
          }
          r.lastDay = { claimId: c.claimId, aggregate: day };
        }
        day.checkins += delta.checkins;
        day.onTime += delta.onTime;
        day.creditS += delta.creditS;
        day.coverageS += delta.coverageS;
        if (delta.digest !== null) day.digest = delta.digest;
      }
      return true;
    },
  };
}
