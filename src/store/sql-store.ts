import type { DayAggregate } from "../method";
import type {
  AgentRow, AuditEntry, ChallengeRow, LatestScores, NewScore, OutageRow, OwnerRow, PenaltyRow, ProofRow, ScoreRow, ScoreSummary, Store, StoreTx, StoredCheckin,
} from "../service/ports";
import type { SiteStore } from "../service/reads";
import type { AgentFactRows, DailyBatchTx } from "../service/scoring";
import { AGENT_COLUMNS, AGENT_COLUMNS_OF_A, agentFrom } from "./agent-rows";
import { createBatcher } from "./batch";
import { atMidnight, createCheckinWrites } from "./checkin-writes";
import type { Db, Queryable } from "./db";
import type { SettledDay } from "./score-facts";
import { packScore, scoreRowOf, summaryOf, type ScoreColumns } from "./score-packing";

type Row = Record<string, any>;

const dayFrom = (r: Row): DayAggregate => ({
  day: r.day,
  checkins: r.checkins,
  onTime: r.on_time,
  creditS: r.credit_s,
  coverageS: r.coverage_s,
  digest: r.digest,
});

const outageFrom = (r: Row): OutageRow => ({
  id: r.id, start: r.start_at, end: r.end_at, declaredAt: r.declared_at, closedAt: r.closed_at, reason: r.reason,
  declaredBy: r.declared_by, closedBy: r.closed_by,
});

const penaltyFrom = (r: Row): PenaltyRow => ({
  id: r.id, agentId: r.agent_id, code: r.code, points: r.points, days: r.days, addedAt: r.added_at,
  reason: r.reason, revokedAt: r.revoked_at, revokeReason: r.revoke_reason, addedBy: r.added_by, revokedBy: r.revoked_by,
});

const challengeFrom = (r: Row): ChallengeRow => ({
  id: r.id, kind: r.kind, ownerId: r.owner_id, agentId: r.agent_id, subject: r.subject, nonce: r.nonce, token: r.token,
  message: r.message, issuedAt: r.issued_at, expiresAt: r.expires_at, usedAt: r.used_at,
});

const proofFrom = (r: Row): ProofRow => ({
  id: r.id, kind: r.kind, ownerId: r.owner_id, agentId: r.agent_id, subject: r.subject, binding: r.binding,
  evidence: r.evidence, verifiedAt: r.verified_at, lastCheckedAt: r.last_checked_at,
  consecutiveFailures: r.consecutive_failures, removedAt: r.removed_at, removedReason: r.removed_reason,
});

/**
 * The `agent_days` lines of a compact score (migration 010) in its window (the 30 days before the day
 * of `at`, V1), of its claim, as JSON `[[day, checkins, on_time, credit_s, digest], ...]`: what its
 * inputs are rebuilt from (src/store/score-packing.ts). Read only `when` the SQL condition holds (NULL otherwise).
 */
const settledOf = (s: string, when: string) => `(SELECT json_agg(json_build_array(d.day, d.checkins, d.on_time, d.credit_s, d.digest)) FROM agent_days d
  WHERE ${when} AND d.agent_id = ${s}.agent_id AND d.claim_id = ${s}.claim_id
    AND d.day >= to_char((to_timestamp(${s}.at) AT TIME ZONE 'UTC')::date - 30, 'YYYY-MM-DD')
    AND d.day < to_char(to_timestamp(${s}.at) AT TIME ZONE 'UTC', 'YYYY-MM-DD'))`;

type SettledLine = [day: string, checkins: number, onTime: number, creditS: number, digest: string];

/** A score row's columns, for score-packing.ts. */
function scoreColumnsOf(r: Row): ScoreColumns {
  const settled = new Map<string, SettledDay>();
  for (const [day, checkins, onTime, creditS, digest] of (r.settled ?? []) as SettledLine[]) settled.set(day, { checkins, onTime, creditS: Number(creditS), digest });
  return {
    id: r.id, agentId: r.agent_id, method: r.method, at: r.at, trigger: r.trigger, day: r.day, sha256: r.sha256, total: r.total,
    inputs: r.inputs, resultJson: r.result_json, facts: r.facts, packed: r.packed, settled,
  };
}

const scoreOf = (strict: boolean) => (r: Row): ScoreRow => scoreRowOf(scoreColumnsOf(r), { strict });
const scoreFrom = scoreOf(true);
const summaryFrom = (r: Row): ScoreSummary => summaryOf(scoreColumnsOf(r));

/** A whole score: a compact one's settled lines come with it, its inputs being rebuilt. */
const SCORE_COLUMNS = `s.id, s.agent_id, s.method, s.at, s.trigger, s.day, s.inputs, s.sha256, s.result::text AS result_json, s.total, s.facts, s.packed,
  ${settledOf("s", "s.facts IS NOT NULL")} AS settled`;

/** A score's summary: settled lines only for a compact score of before migration 015, whose result is computed from its inputs. */
const SUMMARY_COLUMNS = `s.id, s.agent_id, s.method, s.at, s.trigger, s.day, s.sha256, s.result::text AS result_json, s.total, s.facts, s.packed,
  ${settledOf("s", "s.facts IS NOT NULL AND s.packed IS NULL")} AS settled`;

/** The columns an insert writes (score-packing.ts makes the stored form). */
const INSERT_COLUMNS = "agent_id, method, at, trigger, day, inputs, sha256, result, total, claim_id, facts, packed, established";

function insertParams(s: NewScore): unknown[] {
  const p = packScore(s);
  return [s.agentId, s.method, s.at, s.trigger, s.day, p.inputs, s.sha256, p.resultJson, s.total, p.claimId, p.facts, p.packed, p.established];
}

const DAY_COLUMNS = "day, checkins, on_time, credit_s, coverage_s, digest";

/** An agent's (`a`) day aggregates of its claim up to day $3, oldest first, for the daily recompute: JSON `[[day, checkins, on_time, credit_s, coverage_s, digest], ...]`. */
const DAYS_OF_AGENT = `(SELECT json_agg(json_build_array(d.day, d.checkins, d.on_time, d.credit_s, d.coverage_s, d.digest) ORDER BY d.day)
  FROM agent_days d WHERE d.agent_id = a.id AND d.claim_id = a.claim_id AND d.day <= $3)`;

type DayLine = [day: string, checkins: number, onTime: number, creditS: number, coverageS: number, digest: string];

/** The day aggregates of a DAYS_OF_AGENT value. */
const daysFrom = (lines: DayLine[] | null): DayAggregate[] =>
  (lines ?? []).map(([day, checkins, onTime, creditS, coverageS, digest]) => ({ day, checkins, onTime, creditS: Number(creditS), coverageS, digest }));

type SummaryAnswer = { agentExists: boolean; score: ScoreSummary | null };

/** The most agents asked for in one statement of latest scores. */
const SUMMARY_BATCH = 1000;

/**
 * `latestScoreSummary` batched (src/store/batch.ts): the agents asked for while the event loop
 * handles one round of I/O are looked up together, in one statement.
 */
function createSummaryReader(db: Queryable): LatestScores {
  const read = createBatcher<string, SummaryAnswer>({
    maxBatch: SUMMARY_BATCH,
    async run(asked) {
      const { rows } = await db.query<Row>(
        `SELECT q.id AS asked, a.id IS NOT NULL AS agent_exists, ${SUMMARY_COLUMNS}
         FROM unnest($1::text[]) AS q (id)
         LEFT JOIN agents a ON a.id = q.id
         LEFT JOIN LATERAL (
           SELECT id, agent_id, method, at, trigger, day, sha256, result, total, claim_id, facts, packed FROM scores
           WHERE agent_id = a.id ORDER BY at DESC, id DESC LIMIT 1
         ) s ON true`,
        [[...new Set(asked)]],
      );
      const answers = new Map<string, SummaryAnswer>();
      for (const r of rows) answers.set(r.asked, { agentExists: r.agent_exists, score: r.id === null ? null : summaryFrom(r) });
      return asked.map((id) => answers.get(id) ?? { agentExists: false, score: null });
    },
  });
  return { latestScoreSummary: read };
}

/** Latest scores a page at a time, by agent id: what a latest-score cache is filled from at start. */
export type LatestScorePages = {
  /** The latest score of each of the next `limit` agents after `afterAgentId` (by id) that have one. */
  latestScoresAfter(afterAgentId: string, limit: number): Promise<ScoreSummary[]>;
};

/**
 * Puts scores just inserted on their agents' rows as their latest (migration 008, for the directory)
 * where they are later (by `at`, then id) than the one there: from the values written, one statement.
 */
async function setLatestScores(q: Queryable, scores: ReadonlyArray<{ id: number; score: Omit<ScoreRow, "id"> }>): Promise<void> {
  const latest = new Map<string, { id: number; score: Omit<ScoreRow, "id"> }>();
  for (const w of scores) {
    const seen = latest.get(w.score.agentId);
    if (!seen || w.score.at > seen.score.at || (w.score.at === seen.score.at && w.id > seen.id)) latest.set(w.score.agentId, w);
  }
  const rows = [...latest.values()];
  await q.query(
    `UPDATE agents a SET score_id = n.id, score_at = n.at, score_total = n.total, score_band = n.band, score_state = n.state
     FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::integer[], $5::text[], $6::text[]) AS n (agent_id, id, at, total, band, state)
     WHERE a.id = n.agent_id AND (a.score_id IS NULL OR (n.at, n.id) > (a.score_at, a.score_id))`,
    [rows.map((w) => w.score.agentId), rows.map((w) => w.id), rows.map((w) => w.score.at), rows.map((w) => w.score.total), rows.map((w) => w.score.result.band), rows.map((w) => w.score.result.state)],
  );
}

/** Appends one entry to the audit log (V7: who, when, what and why). */
export async function insertAuditEntry(q: Queryable, e: AuditEntry): Promise<void> {
  await q.query("INSERT INTO audit_log (at, actor, action, subject, details) VALUES ($1, $2, $3, $4, $5)", [
    e.at, e.actor, e.action, e.subject, JSON.stringify(e.details),
  ]);
}

export type SqlStore = Store & LatestScores & LatestScorePages & SiteStore;

/**
 * The store on PostgreSQL or PGlite: all SQL of the service lives here.
 * @param options.onScoresCommitted told the agents whose scores a transaction (or a statement outside
 *   one) wrote, once it has committed: what keeps a latest-score cache of this process fresh (another
 *   process's writes are heard through `NOTIFY vrai_scores`, src/store/score-cache-sync.ts)
 */
export function createSqlStore(db: Db, options: { onScoresCommitted?: (agentIds: readonly string[]) => void } = {}): SqlStore {
  const committed = options.onScoresCommitted;

  /** `q` runs the statements; the agents of the scores written go to `written`, told once its transaction commits (at once outside one). */
  const txFor = (q: Queryable, written?: string[]): StoreTx & DailyBatchTx => {
    const wrote = (agentIds: string[]) => {
      if (!committed) return;
      if (written) written.push(...agentIds);
      else committed(agentIds);
    };
    const one = async <T>(sql: string, params: unknown[], map: (r: Row) => T): Promise<T | null> => {
      const { rows } = await q.query<Row>(sql, params);
      return rows.length === 0 ? null : map(rows[0]);
    };
    const many = async <T>(sql: string, params: unknown[], map: (r: Row) => T): Promise<T[]> =>
      (await q.query<Row>(sql, params)).rows.map(map);

    return {
      async insertOwner(o: OwnerRow) {
        await q.query("INSERT INTO owners (id, token_hash, created_at) VALUES ($1, $2, $3)", [o.id, o.tokenHash, o.createdAt]);
      },
      // NO KEY UPDATE: lockers of one owner wait for each other, rows that only reference the owner (proofs, claims) do not.
      getOwner: (id, options) =>
        one(`SELECT * FROM owners WHERE id = $1${options?.lock ? " FOR NO KEY UPDATE" : ""}`, [id], (r) => ({ id: r.id, tokenHash: r.token_hash, createdAt: r.created_at })),

      getAgent: (id, options) =>
        one(`SELECT ${AGENT_COLUMNS} FROM agents WHERE id = $1${options?.lock ? " FOR UPDATE" : ""}`, [id], agentFrom),
      async insertAgent(a) {
        await q.query(
          `INSERT INTO agents (id, name, owner_id, claim_id, claimed_at, key_hash, last_arrival, last_next_heartbeat_s, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, $7)`,
          [a.id, a.name, a.ownerId, a.claimId, a.claimedAt, a.keyHash, a.createdAt],
        );
      },
      async startClaim(agentId, c) {
        const { rows } = await q.query<Row>(
          "INSERT INTO claims (agent_id, owner_id, kind, claimed_at) VALUES ($1, $2, $3, $4) RETURNING id",
          [agentId, c.ownerId, c.kind, c.claimedAt],
        );
        const claimId = rows[0].id as number;
        await q.query(
          `UPDATE agents SET owner_id = $2, claim_id = $3, claimed_at = $4, key_hash = $5, last_arrival = NULL, last_next_heartbeat_s = NULL, last_day_digest = ''
           WHERE id = $1`,
          [agentId, c.ownerId, claimId, c.claimedAt, c.keyHash],
        );
        return claimId;
      },
      listClaimedAgentIds: async (page) =>
        (await q.query<Row>("SELECT id FROM agents WHERE id > $1 ORDER BY id LIMIT $2", [page.after ?? "", page.limit])).rows.map((r) => r.id),
      listAgentsOfOwner: async (ownerId, page) =>
        (page === undefined
          ? await q.query<Row>("SELECT id FROM agents WHERE owner_id = $1 ORDER BY id", [ownerId])
          : await q.query<Row>("SELECT id FROM agents WHERE owner_id = $1 AND id > $2 ORDER BY id LIMIT $3", [ownerId, page.after ?? "", page.limit])
        ).rows.map((r) => r.id),
      countAgentsOfOwner: async (ownerId) =>
        (await q.query<Row>("SELECT count(*)::int AS n FROM agents WHERE owner_id = $1", [ownerId])).rows[0].n,

      listDays: (agentId, claimId, lastDay) =>
        many(`SELECT ${DAY_COLUMNS} FROM agent_days WHERE agent_id = $1 AND claim_id = $2 AND day <= $3 ORDER BY day`, [agentId, claimId, lastDay], dayFrom),
      countCheckinsAt: async (agentId, claimId, at) =>
        (await q.query<Row>(`SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1 AND claim_id = $2 AND arrival = $3${atMidnight(at)}`, [agentId, claimId, at]))
          .rows[0].n,

      listOutages: () => many("SELECT * FROM outages ORDER BY start_at, id", [], outageFrom),
      getOutage: (id) => one("SELECT * FROM outages WHERE id = $1", [id], outageFrom),
      async insertOutage(o) {
        await q.query("INSERT INTO outages (id, start_at, end_at, declared_at, closed_at, reason, declared_by) VALUES ($1, $2, $3, $4, NULL, $5, $6)", [
          o.id, o.start, o.end, o.declaredAt, o.reason, o.declaredBy,
        ]);
      },
      async closeOutage(id, end, closedAt, closedBy) {
        await q.query("UPDATE outages SET end_at = $2, closed_at = $3, closed_by = $4 WHERE id = $1", [id, end, closedAt, closedBy]);
      },

      async insertPenalty(p: PenaltyRow) {
        await q.query(
          "INSERT INTO penalties (id, agent_id, code, points, days, added_at, reason, added_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
          [p.id, p.agentId, p.code, p.points, p.days, p.addedAt, p.reason, p.addedBy],
        );
      },
      getPenalty: (id) => one("SELECT * FROM penalties WHERE id = $1", [id], penaltyFrom),
      async revokePenalty(id, revokedAt, reason, revokedBy) {
        await q.query("UPDATE penalties SET revoked_at = $2, revoke_reason = $3, revoked_by = $4 WHERE id = $1", [id, revokedAt, reason, revokedBy]);
      },
      listPenalties: (agentId, page) =>
        page === undefined
          ? many("SELECT * FROM penalties WHERE agent_id = $1 ORDER BY added_at, id", [agentId], penaltyFrom)
          : many(
            "SELECT * FROM penalties WHERE agent_id = $1 AND (added_at, id) > ($2::bigint, $3::text) ORDER BY added_at, id LIMIT $4",
            [agentId, page.after?.addedAt ?? -1, page.after?.id ?? "", page.limit],
            penaltyFrom,
          ),

      async insertChallenge(c: ChallengeRow) {
        await q.query(
          `INSERT INTO proof_challenges (id, kind, owner_id, agent_id, subject, nonce, token, message, issued_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [c.id, c.kind, c.ownerId, c.agentId, c.subject, c.nonce, c.token, c.message, c.issuedAt, c.expiresAt],
        );
      },
      useChallenge: async (id, at) =>
        (await q.query("UPDATE proof_challenges SET used_at = $2 WHERE id = $1 AND used_at IS NULL", [id, at])).rowCount === 1,
      getChallenge: (id) => one("SELECT * FROM proof_challenges WHERE id = $1", [id], challengeFrom),
      countOpenChallenges: async (ownerId, at) =>
        (await q.query<Row>("SELECT count(*)::int AS n FROM proof_challenges WHERE owner_id = $1 AND used_at IS NULL AND expires_at > $2", [ownerId, at]))
          .rows[0].n,
      deleteExpiredChallenges: async (at, { ownerId, limit }) =>
        (await q.query(
          `DELETE FROM proof_challenges WHERE id IN (
             SELECT id FROM proof_challenges WHERE expires_at <= $1 ${ownerId === undefined ? "" : "AND owner_id = $3"} ORDER BY expires_at LIMIT $2
           )`,
          ownerId === undefined ? [at, limit] : [at, limit, ownerId],
        )).rowCount ?? 0,
      // The arbiter is proofs_active_binding_idx: a proof whose binding another transaction holds (or
      // is committing) is not written, and the statement waits for that transaction rather than
      // failing with a unique violation. Any other conflict (an id) still fails.
      async insertProof(p: ProofRow) {
        const { rowCount } = await q.query(
          `INSERT INTO proofs (id, kind, owner_id, agent_id, subject, binding, evidence, verified_at, last_checked_at, consecutive_failures)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (binding) WHERE removed_at IS NULL AND binding IS NOT NULL DO NOTHING`,
          [p.id, p.kind, p.ownerId, p.agentId, p.subject, p.binding, JSON.stringify(p.evidence), p.verifiedAt, p.lastCheckedAt, p.consecutiveFailures],
        );
        return rowCount === 1;
      },
      getProof: (id) => one("SELECT * FROM proofs WHERE id = $1", [id], proofFrom),
      findActiveBinding: (binding) =>
        one("SELECT * FROM proofs WHERE binding = $1 AND removed_at IS NULL", [binding], proofFrom),
      proofsForAgentAt: (agentId, ownerId, at, page) =>
        many(
          `SELECT * FROM proofs
           WHERE (agent_id = $1 OR (agent_id IS NULL AND owner_id = $2))
             AND verified_at <= $3 AND (removed_at IS NULL OR removed_at > $3)
             ${page === undefined ? "" : "AND (verified_at, id) > ($4::bigint, $5::text)"}
           ORDER BY verified_at, id${page === undefined ? "" : " LIMIT $6"}`,
          page === undefined ? [agentId, ownerId, at] : [agentId, ownerId, at, page.after?.verifiedAt ?? -1, page.after?.id ?? "", page.limit],
          proofFrom,
        ),
      listActiveProofs: () => many("SELECT * FROM proofs WHERE removed_at IS NULL ORDER BY id", [], proofFrom),
      async updateProofCheck(id, check) {
        await q.query("UPDATE proofs SET last_checked_at = $2, consecutive_failures = $3 WHERE id = $1", [
          id, check.lastCheckedAt, check.consecutiveFailures,
        ]);
      },
      async removeProof(id, at, reason) {
        await q.query("UPDATE proofs SET removed_at = $2, removed_reason = $3 WHERE id = $1 AND removed_at IS NULL", [id, at, reason]);
      },

      async insertScore(s) {
        const { rows } = await q.query<Row>(
          `INSERT INTO scores (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
          insertParams(s),
        );
        await setLatestScores(q, [{ id: rows[0].id, score: s }]);
        wrote([s.agentId]);
        return rows[0].id;
      },
      latestScore: (agentId) =>
        one(`SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.agent_id = $1 ORDER BY s.at DESC, s.id DESC LIMIT 1`, [agentId], scoreFrom),
      getScore: (id) => one(`SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.id = $1`, [id], scoreFrom),
      listDailyScores: (agentId, fromDay, toDay, page) =>
        page === undefined
          ? many(
            `SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.agent_id = $1 AND s.trigger = 'daily' AND s.day >= $2 AND s.day <= $3 ORDER BY s.day`,
            [agentId, fromDay, toDay],
            scoreFrom,
          )
          : many(
            `SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.agent_id = $1 AND s.trigger = 'daily' AND s.day >= $2 AND s.day <= $3 AND s.day > $4 ORDER BY s.day LIMIT $5`,
            [agentId, fromDay, toDay, page.after ?? "", page.limit],
            scoreFrom,
          ),
      // The daily recompute's bulk path (DailyBatchTx): the same rows, in the same order, as
      // getAgent + hasDailyScore + listDays + countCheckinsAt + proofsForAgentAt + listPenalties per agent.
      async dailyFactRows(agentIds: readonly string[], day: string, at: number): Promise<AgentFactRows[]> {
        const ids = [...agentIds];
        // Each agent found by primary key, with its claim's day aggregates up to `day` as one text
        // (DAYS_OF_AGENT). Whether it already has the day's score is left to the insert (ON CONFLICT on
        // scores_daily_idx): a probe here was planned, with the scores table's statistics of an empty or
        // new day, as a pass over the day's scores per agent, which the recompute is writing (quadratic:
        // a million agents took a quarter of an hour). A rerun computes again and stores nothing.
        // The four statements leave together (one round trip): the other three take every agent asked
        // for, and what belongs to an agent not found (or claimed after `at`) is ignored below.
        const [agentRows, midnight, proofs, penalties] = await Promise.all([
          q.query<Row>(
            `SELECT ${AGENT_COLUMNS_OF_A}, ${DAYS_OF_AGENT} AS days
             FROM unnest($1::text[]) AS i (id) JOIN agents a ON a.id = i.id
             WHERE a.claimed_at <= $2`,
            [ids, at, day],
          ),
          q.query<Row>(
            `SELECT agent_id, claim_id, count(*)::int AS n FROM checkins WHERE agent_id = ANY($1::text[]) AND arrival = $2${atMidnight(at)} GROUP BY agent_id, claim_id`,
            [ids, at],
          ),
          // Only what the facts take of a proof: its kind (V6), in the order of proofsForAgentAt.
          q.query<Row>(
            `SELECT for_agent, kind FROM (
               SELECT p.agent_id AS for_agent, p.kind, p.verified_at, p.removed_at, p.id FROM proofs p WHERE p.agent_id = ANY($1::text[])
               UNION ALL
               SELECT a.id AS for_agent, p.kind, p.verified_at, p.removed_at, p.id FROM unnest($1::text[]) AS i (id)
                 JOIN agents a ON a.id = i.id JOIN proofs p ON p.agent_id IS NULL AND p.owner_id = a.owner_id
             ) x
             WHERE verified_at <= $2 AND (removed_at IS NULL OR removed_at > $2)
             ORDER BY for_agent, verified_at, id`,
            [ids, at],
          ),
          q.query<Row>("SELECT * FROM penalties WHERE agent_id = ANY($1::text[]) ORDER BY agent_id, added_at, id", [ids]),
        ]);
        if (agentRows.rows.length === 0) return [];
        const byAgent = new Map<string, AgentFactRows>(
          agentRows.rows.map((r) => [r.id, { agent: agentFrom(r), days: daysFrom(r.days), atMidnight: 0, proofs: [], penalties: [] }]),
        );
        for (const r of midnight.rows) {
          const a = byAgent.get(r.agent_id);
          if (a && a.agent.claimId === r.claim_id) a.atMidnight = r.n;
        }
        for (const r of proofs.rows) byAgent.get(r.for_agent)?.proofs.push({ kind: r.kind });
        for (const r of penalties.rows) byAgent.get(r.agent_id)?.penalties.push(penaltyFrom(r));
        return ids.flatMap((id) => byAgent.get(id) ?? []);
      },
      async insertScores(given) {
        if (given.length === 0) return 0;
        // One multi-row INSERT: rows get ids in the order given; a daily score of an agent and day that
        // has one already is skipped by the unique index (RETURNING lists the inserted rows, in order).
        const params: unknown[] = [];
        const tuples = given.map((s) => {
          const b = params.length;
          params.push(...insertParams(s));
          return `(${Array.from({ length: params.length - b }, (_, k) => `$${b + k + 1}`).join(", ")})`;
        });
        const { rows } = await q.query<Row>(
          `INSERT INTO scores (${INSERT_COLUMNS}) VALUES ${tuples.join(", ")}
           ON CONFLICT (agent_id, day) WHERE trigger = 'daily' DO NOTHING RETURNING id, agent_id, at, trigger`,
          params,
        );
        const inserted: Array<{ id: number; score: NewScore }> = [];
        for (let i = 0, r = 0; i < given.length && r < rows.length; i++) {
          if (rows[r].agent_id === given[i].agentId && Number(rows[r].at) === given[i].at && rows[r].trigger === given[i].trigger) inserted.push({ id: rows[r++].id, score: given[i] });
        }
        if (inserted.length > 0) await setLatestScores(q, inserted);
        wrote(inserted.map((w) => w.score.agentId));
        return inserted.length;
      },
      hasDailyScore: async (agentId, day) =>
        (await q.query("SELECT 1 FROM scores WHERE agent_id = $1 AND trigger = 'daily' AND day = $2", [agentId, day])).rows.length > 0,
      scoresAfter: (afterId, limit) =>
        // Not strict: a compact row whose facts changed is returned as rebuilt, for the verification to report.
        many(`SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.id > $1 ORDER BY s.id LIMIT $2`, [afterId, limit], scoreOf(false)),

      audit: (e) => insertAuditEntry(q, e),
      listAudit: ({ afterId, limit }) =>
        many("SELECT * FROM audit_log WHERE id > $1 ORDER BY id LIMIT $2", [afterId, limit], (r) => ({
          id: r.id, at: r.at, actor: r.actor, action: r.action, subject: r.subject, details: r.details,
        })),

      async requestOwnerRecompute(ownerId, at) {
        await q.query(
          `INSERT INTO owner_recomputes (owner_id, requested_at, due_at) VALUES ($1, $2, $2)
           ON CONFLICT (owner_id) DO UPDATE SET generation = nextval('owner_recompute_generations')`,
          [ownerId, at],
        );
      },
      // SKIP LOCKED: drains of several instances take different owners.
      takeOwnerRecomputes: (now, leaseUntil, limit) =>
        many(
          `UPDATE owner_recomputes SET due_at = $2 WHERE owner_id IN (
             SELECT owner_id FROM owner_recomputes WHERE due_at <= $1 ORDER BY due_at, owner_id LIMIT $3 FOR UPDATE SKIP LOCKED
           ) RETURNING owner_id, generation, attempts`,
          [now, leaseUntil, limit],
          (r) => ({ ownerId: r.owner_id, generation: Number(r.generation), attempts: r.attempts }),
        ),
      async finishOwnerRecompute(job, now) {
        const { rowCount } = await q.query("DELETE FROM owner_recomputes WHERE owner_id = $1 AND generation = $2", [job.ownerId, job.generation]);
        if (rowCount === 0) await q.query("UPDATE owner_recomputes SET due_at = $2, attempts = 0, last_error = NULL WHERE owner_id = $1", [job.ownerId, now]);
      },
      async failOwnerRecompute(job, dueAt, error) {
        await q.query("UPDATE owner_recomputes SET due_at = $2, attempts = attempts + 1, last_error = $3 WHERE owner_id = $1", [job.ownerId, dueAt, error]);
      },

      getSetting: (key) => one("SELECT value FROM settings WHERE key = $1", [key], (r) => r.value),
      async setSetting(key, value) {
        await q.query(
          "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2",
          [key, JSON.stringify(value)],
        );
      },
    };
  };

  return {
    async transaction(fn) {
      const written: string[] = [];
      const result = await db.transaction((q) => fn(txFor(q, written)));
      if (committed && written.length > 0) committed(written);
      return result;
    },
    read: txFor(db),
    ...createSummaryReader(db),
    async latestScoresAfter(afterAgentId, limit) {
      const { rows } = await db.query<Row>(
        `SELECT DISTINCT ON (s.agent_id) ${SUMMARY_COLUMNS} FROM scores s
         WHERE s.agent_id > $1 ORDER BY s.agent_id, s.at DESC, s.id DESC LIMIT $2`,
        [afterAgentId, limit],
      );
      return rows.map(summaryFrom);
    },

    // Keyset pages: the row comparison resumes after the cursor's window, stable while windows are added.
    async listOutagesPage(after, limit) {
      const { rows } = await db.query<Row>(
        after === null
          ? "SELECT * FROM outages ORDER BY start_at DESC, id DESC LIMIT $1"
          : "SELECT * FROM outages WHERE (start_at, id) < ($2::bigint, $3::text) ORDER BY start_at DESC, id DESC LIMIT $1",
        after === null ? [limit] : [limit, after.start, after.id],
      );
      return rows.map(outageFrom);
    },
    async listDailyTotals(agentId, fromDay, toDay) {
      const { rows } = await db.query<Row>(
        "SELECT day, total FROM scores WHERE agent_id = $1 AND trigger = 'daily' AND day >= $2 AND day <= $3 ORDER BY day",
        [agentId, fromDay, toDay],
      );
      return rows.map((r) => ({ day: r.day, total: r.total }));
    },

    ...createCheckinWrites(db),
  };
}
