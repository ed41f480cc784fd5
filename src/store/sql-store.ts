import { componentLeafValue } from "../chain/score-tree";
import { BaseError } from "../errors";
import { scoreFromInputs, type DayAggregate, type MethodVersion, type ScoreResult } from "../method";
import type {
  AgentRow, AuditEntry, ChallengeRow, LatestScores, NewScore, OutageRow, OwnerRow, PenaltyRow, ProofRow, ScoreRow, ScoreSummary, Store, StoreTx, StoredCheckin,
} from "../service/ports";
import type { SiteStore } from "../service/reads";
import type { AgentFactRows, DailyBatchTx } from "../service/scoring";
import { AGENT_COLUMNS, AGENT_COLUMNS_OF_A, agentFrom } from "./agent-rows";
import { createBatcher } from "./batch";
import { atMidnight, createCheckinWrites } from "./checkin-writes";
import type { Db, Queryable } from "./db";
import type { ScoreCache } from "./score-cache";
import { decodeScoreFacts, encodeScoreFacts, type SettledDay } from "./score-facts";

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
 * The `agent_days` lines a compact score (migration 010) takes its settled days from: the agent's
 * rows of the score's claim in the score's window (the 30 days before the day of `at`, V1), as one
 * text of `day checkins on_time credit_s digest` lines, every field separated by one space (as
 * DAYS_OF_AGENT: no field holds a space; cheaper than JSON to make and to read); NULL for a row that
 * keeps its inputs as text, or without such rows.
 */
const settledLinesOf = (s: string) => `CASE WHEN ${s}.facts IS NULL THEN NULL ELSE (
  SELECT string_agg(d.day || ' ' || d.checkins || ' ' || d.on_time || ' ' || d.credit_s || ' ' || d.digest, ' ') FROM agent_days d
  WHERE d.agent_id = ${s}.agent_id AND d.claim_id = ${s}.claim_id
    AND d.day >= to_char((to_timestamp(${s}.at) AT TIME ZONE 'UTC')::date - 30, 'YYYY-MM-DD')
    AND d.day < to_char(to_timestamp(${s}.at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')) END`;

const SETTLED_FIELDS = 5;

/** A score's inputs, digest and result as a row holds them: as text (rows before migration 010), or rebuilt from its compact form. */
type StoredInputs = { inputs: string; sha256: string; result: ScoreResult; resultJson: string | null };

/**
 * The inputs and result of a score row. A compact row's document is rebuilt from its facts and the
 * settled lines (src/store/score-facts.ts) and its result computed from it (V9: a pure function of
 * the inputs). `strict`: a rebuilt document whose SHA-256 is not the stored one is an error (a fact it
 * refers to changed); otherwise it is returned as rebuilt, for `vrai recompute --verify` to report.
 */
function storedInputsOf(r: Row, strict: boolean): StoredInputs {
  if (r.facts === null) return { inputs: r.inputs, sha256: r.sha256, result: r.result, resultJson: null };
  const settled = new Map<string, SettledDay>();
  if (r.settled !== null) {
    const f = (r.settled as string).split(" ");
    for (let i = 0; i < f.length; i += SETTLED_FIELDS) {
      settled.set(f[i], { checkins: Number(f[i + 1]), onTime: Number(f[i + 2]), creditS: Number(f[i + 3]), digest: f[i + 4] });
    }
  }
  const document = decodeScoreFacts(r.facts, { agent: r.agent_id, method: r.method as MethodVersion, at: Number(r.at) }, settled);
  const { result, canonical, sha256 } = scoreFromInputs(document);
  if (strict && sha256 !== r.sha256) {
    throw new BaseError("score_inputs_mismatch", `score ${r.id}: its inputs rebuilt from the stored facts hash to ${sha256}, not the stored ${r.sha256}`);
  }
  return { inputs: canonical, sha256: r.sha256, result, resultJson: JSON.stringify(result) };
}

const scoreOf = (strict: boolean) => (r: Row): ScoreRow => {
  const { inputs, result } = storedInputsOf(r, strict);
  return { id: r.id, agentId: r.agent_id, method: r.method, at: r.at, trigger: r.trigger, day: r.day, inputs, sha256: r.sha256, result, total: r.total };
};
const scoreFrom = scoreOf(true);

const SCORE_COLUMNS = `s.id, s.agent_id, s.method, s.at, s.trigger, s.day, s.inputs, s.sha256, s.result, s.total, s.facts, ${settledLinesOf("s")} AS settled`;

/**
 * The columns of a score as `insertScores` writes them; with its claim and document, the compact form (migration 010);
 * its components as a version-2 leaf holds them (migration 014).
 */
const INSERT_COLUMNS = "agent_id, method, at, trigger, day, inputs, sha256, result, total, claim_id, facts, established, identity_points, reliability_points, integrity_points";

/** The parameters of INSERT_COLUMNS; `resultJson` is asked for only by a score kept as text (a compact one derives its result). */
function insertParams(s: NewScore, resultJson: () => string): unknown[] {
  const { identity, reliability, integrity } = s.result.components;
  const components = [componentLeafValue(identity), componentLeafValue(reliability), componentLeafValue(integrity)];
  if (s.claimId === undefined || s.document === undefined) {
    return [s.agentId, s.method, s.at, s.trigger, s.day, s.inputs, s.sha256, resultJson(), s.total, null, null, null, ...components];
  }
  return [s.agentId, s.method, s.at, s.trigger, s.day, null, s.sha256, null, s.total, s.claimId, encodeScoreFacts(s.document, s.at), s.result.state === "established", ...components];
}
const DAY_COLUMNS = "day, checkins, on_time, credit_s, coverage_s, digest";

/**
 * An agent's (`a`) day aggregates of its claim up to day $3 as one text for the daily recompute, oldest
 * first: six fields a day (DAY_COLUMNS), all separated by one space (days are YYYY-MM-DD, digests hex or
 * empty, the rest integers: none holds a space). NULL for none. Thirty rows an agent parsed by node-postgres
 * cost the recompute more than all its scoring: one text is a third of that in node and less in PostgreSQL
 * (json_agg costs PostgreSQL more than the rows).
 */
const DAYS_OF_AGENT = `(SELECT string_agg(d.day || ' ' || d.checkins || ' ' || d.on_time || ' ' || d.credit_s || ' ' || d.coverage_s || ' ' || d.digest, ' ' ORDER BY d.day)
  FROM agent_days d WHERE d.agent_id = a.id AND d.claim_id = a.claim_id AND d.day <= $3)`;
const DAY_FIELDS = 6;

/** The day aggregates of a DAYS_OF_AGENT text. */
function daysFrom(text: string | null): DayAggregate[] {
  if (text === null) return [];
  const f = text.split(" ");
  const days: DayAggregate[] = new Array(f.length / DAY_FIELDS);
  for (let i = 0, k = 0; i < f.length; i += DAY_FIELDS, k++) {
    days[k] = { day: f[i], checkins: Number(f[i + 1]), onTime: Number(f[i + 2]), creditS: Number(f[i + 3]), coverageS: Number(f[i + 4]), digest: f[i + 5] };
  }
  return days;
}

type SummaryAnswer = { agentExists: boolean; score: ScoreSummary | null };

/** The most agents asked for in one statement of latest scores. */
const SUMMARY_BATCH = 1000;

const SUMMARY_COLUMNS = `s.id, s.agent_id, s.method, s.at, s.trigger, s.day, s.sha256, s.result::text AS result_json, s.total, s.facts, ${settledLinesOf("s")} AS settled`;

const summaryFrom = (r: Row): ScoreSummary => {
  const head = { id: r.id, agentId: r.agent_id, method: r.method, at: r.at, trigger: r.trigger, day: r.day, sha256: r.sha256, total: r.total };
  if (r.facts === null) return { ...head, resultJson: r.result_json };
  const { result, resultJson } = storedInputsOf(r, true);
  return { ...head, resultJson: resultJson!, result };
};

/**
 * `latestScoreSummary` batched (src/store/batch.ts): the agents asked for while the event loop
 * handles one round of I/O are looked up together, in one statement; with a score cache, cached
 * agents are answered without one.
 */
function createSummaryReader(db: Queryable, cache: ScoreCache | undefined): LatestScores {
  const read = createBatcher<string, SummaryAnswer>({
    maxBatch: SUMMARY_BATCH,
    async run(asked) {
      const mark = cache?.mark() ?? 0;
      const { rows } = await db.query<Row>(
        `SELECT q.id AS asked, a.id IS NOT NULL AS agent_exists, ${SUMMARY_COLUMNS}
         FROM unnest($1::text[]) AS q (id)
         LEFT JOIN agents a ON a.id = q.id
         LEFT JOIN LATERAL (
           SELECT id, agent_id, method, at, trigger, day, sha256, result, total, claim_id, facts FROM scores
           WHERE agent_id = a.id ORDER BY at DESC, id DESC LIMIT 1
         ) s ON true`,
        [[...new Set(asked)]],
      );
      const answers = new Map<string, SummaryAnswer>();
      for (const r of rows) {
        const answer: SummaryAnswer = { agentExists: r.agent_exists, score: r.id === null ? null : summaryFrom(r) };
        // Agents that do not exist are not cached: creating one does not pass through the cache.
        if (answer.agentExists) cache?.offerRead(r.asked, answer.score, mark);
        answers.set(r.asked, answer);
      }
      return asked.map((id) => answers.get(id) ?? { agentExists: false, score: null });
    },
  });

  return {
    latestScoreSummary(agentId) {
      const cached = cache?.get(agentId);
      if (cached !== undefined) return Promise.resolve({ agentExists: true, score: cached });
      return read(agentId);
    },
  };
}

/** Agents' latest scores per statement when filling a score cache at start. */
const WARM_BATCH = 1000;
/**
 * Scores rebuilt between two turns of the event loop while the cache fills: each is a document rebuilt,
 * hashed and scored (about a third of a millisecond), so a batch at once would hold every request
 * waiting for a third of a second.
 */
const WARM_SLICE = 50;

/**
 * Fills `cache` with the latest score of every agent that has one, in agent order, a batch per
 * statement (the next asked for while this one is rebuilt) and a turn of the event loop every
 * WARM_SLICE scores (requests are served meanwhile), until every agent is in or the cache is full:
 * once it has had to drop entries to make room, reading more would only push out what was read, so it
 * stops (the rest is read on demand).
 * @returns how many agents' scores were offered
 */
export async function warmScoreCache(db: Queryable, cache: ScoreCache): Promise<number> {
  const { evictions } = cache.stats();
  type Batch = { mark: number; rows: Promise<Row[]> };
  const batch = (after: string): Batch => {
    const mark = cache.mark();
    const rows = db.query<Row>(
      `SELECT DISTINCT ON (s.agent_id) ${SUMMARY_COLUMNS} FROM scores s
       WHERE s.agent_id > $1 ORDER BY s.agent_id, s.at DESC, s.id DESC LIMIT $2`,
      [after, WARM_BATCH],
    ).then((r) => r.rows);
    // Awaited in turn below; this keeps a failure meanwhile from going unhandled.
    rows.catch(() => undefined);
    return { mark, rows };
  };
  let offered = 0;
  for (let next: Batch | null = batch(""); next !== null; ) {
    const { mark, rows } = next;
    const page: Row[] = await rows;
    next = page.length === WARM_BATCH ? batch(page[page.length - 1].agent_id) : null;
    for (let i = 0; i < page.length; i++) {
      if (i > 0 && i % WARM_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
      cache.offerRead(page[i].agent_id, summaryFrom(page[i]), mark);
    }
    offered += page.length;
    const stats = cache.stats();
    if (stats.entries === 0 || stats.evictions > evictions) return offered;
  }
  return offered;
}

/** The SQL store: the service's `Store`, and latest scores read in batches (and from the cache when there is one). */

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

export type SqlStore = Store & LatestScores & SiteStore;

/**
 * The store on PostgreSQL or PGlite: all SQL of the service lives here.
 * @param options.scoreCache answers latest-score reads from memory, and is given every score this
 *   store writes once its transaction has committed. Score changes made any other way (another
 *   process, SQL typed by hand) reach it only by `invalidate` (the API server listens for them).
 */
export function createSqlStore(db: Db, options: { scoreCache?: ScoreCache } = {}): SqlStore {
  const cache = options.scoreCache;
  /** Scores written through one transaction (or one statement outside any), for the cache once committed. */
  type Written = { mark: number; scores: WrittenScore[] };
  /** A written score with its id and result text; id `null` when it is not known which row is which. */
  type WrittenScore = { score: Omit<ScoreRow, "id">; id: number | null; resultJson: string };
  const offerWritten = (written: Written) => {
    if (!cache) return;
    for (const { score: s, id, resultJson } of written.scores) {
      if (id === null) cache.invalidate([s.agentId]);
      else cache.offerWrite({ id, agentId: s.agentId, method: s.method, at: s.at, trigger: s.trigger, day: s.day, sha256: s.sha256, resultJson, result: s.result, total: s.total }, written.mark);
    }
  };

  /** `q` runs the statements; scores inserted are added to `written`, or offered at once when there is no transaction. */
  const txFor = (q: Queryable, written?: Written): StoreTx & DailyBatchTx => {
    const wrote = (scores: WrittenScore[], mark: number) => {
      if (!cache) return;
      if (written) written.scores.push(...scores);
      else offerWritten({ mark, scores });
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
        const mark = cache?.mark() ?? 0;
        const resultJson = JSON.stringify(s.result);
        const { rows } = await q.query<Row>(
          `INSERT INTO scores (${INSERT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
          insertParams(s, () => resultJson),
        );
        await setLatestScores(q, [{ id: rows[0].id, score: s }]);
        wrote([{ score: s, id: rows[0].id, resultJson }], mark);
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
        const mark = cache?.mark() ?? 0;
        // One multi-row INSERT: rows get ids in the order given; a daily score of an agent and day that
        // has one already is skipped by the unique index (RETURNING lists the inserted rows, in order).
        const params: unknown[] = [];
        // Result texts only where something takes them (a score kept as text, the cache): the daily
        // recompute of a million agents without a cache would spend a minute making texts nobody reads.
        const results: string[] = [];
        const resultOf = (i: number) => (results[i] ??= JSON.stringify(given[i].result));
        const tuples = given.map((s, i) => {
          const b = params.length;
          params.push(...insertParams(s, () => resultOf(i)));
          return `(${Array.from({ length: params.length - b }, (_, k) => `$${b + k + 1}`).join(", ")})`;
        });
        const { rows } = await q.query<Row>(
          `INSERT INTO scores (${INSERT_COLUMNS}) VALUES ${tuples.join(", ")}
           ON CONFLICT (agent_id, day) WHERE trigger = 'daily' DO NOTHING RETURNING id, agent_id, at, trigger`,
          params,
        );
        const inserted: Array<{ id: number; score: NewScore; index: number }> = [];
        for (let i = 0, r = 0; i < given.length && r < rows.length; i++) {
          if (rows[r].agent_id === given[i].agentId && Number(rows[r].at) === given[i].at && rows[r].trigger === given[i].trigger) inserted.push({ id: rows[r++].id, score: given[i], index: i });
        }
        if (inserted.length > 0) await setLatestScores(q, inserted);
        if (cache) {
          // The daily recompute writes one score per agent; an agent written twice is dropped from the cache instead.
          const ids = new Map<string, number | null>();
          for (const w of inserted) ids.set(w.score.agentId, ids.has(w.score.agentId) ? null : w.id);
          wrote(inserted.map((w) => ({ score: w.score, id: ids.get(w.score.agentId) ?? null, resultJson: resultOf(w.index) })), mark);
        }
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
      const written: Written = { mark: cache?.mark() ?? 0, scores: [] };
      const result = await db.transaction((q) => fn(txFor(q, written)));
      offerWritten(written);
      return result;
    },
    read: txFor(db),
    ...createSummaryReader(db, cache),

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
