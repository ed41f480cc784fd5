/**
 * Vrai scores (V9) in SQL (`ScoresTx`, with the daily recompute's bulk reads and writes),
 * the latest-score reads (batched), and the owners waiting for a recompute (V6). How a score is kept
 * and read back is src/store/score-packing.ts: here, only rows.
 */
import { componentLeafValue } from "../chain/score-tree";
import { BaseError } from "../errors";
import { windowDays, type DayAggregate, type MethodVersion, type ProofKind, type ScoreResult } from "../method";
import type {
  AgentFactRows,
  AgentRow,
  LatestScoreMove,
  LatestScores,
  NewScore,
  OwnerRecomputeJob,
  ScoreBatch,
  ScoreRow,
  ScoreSummary,
  ScoresTx,
} from "../service/ports";
import { AGENT_COLUMNS_OF_A, agentFrom, type AgentRecord } from "./agent-rows";
import { createBatcher } from "./batch";
import { atMidnight } from "./checkin-writes";
import type { Queryable } from "./db";
import { penaltyFrom, type PenaltyRecord } from "./operations";
import { many, one } from "./queries";
import type { SettledDay } from "./score-facts";
import { packScore, scoreRowOf, summaryOf, type ScoreColumns } from "./score-packing";

type SettledLine = [day: string, checkins: number, onTime: number, creditS: number, digest: string];

/** A score row as SCORE_COLUMNS and SUMMARY_COLUMNS read it. */
type ScoreRecord = {
  id: number;
  agent_id: string;
  method: MethodVersion;
  at: number;
  trigger: "daily" | "change";
  day: string | null;
  sha256: string;
  total: number;
  inputs: string | null;
  result_json: string | null;
  facts: Uint8Array | null;
  packed: Uint8Array | null;
  settled: SettledLine[] | null;
};

/**
 * The `agent_days` lines of a compact score (migration 010) in its window (the 30 days before the day
 * of `at`, V1), of its claim, as JSON `[[day, checkins, on_time, credit_s, digest], ...]`: what its
 * inputs are rebuilt from (src/store/score-packing.ts). Read only `when` the SQL condition holds (NULL otherwise).
 */
const settledOf = (
  s: string,
  when: string,
) => `(SELECT json_agg(json_build_array(d.day, d.checkins, d.on_time, d.credit_s, d.digest)) FROM agent_days d
  WHERE ${when} AND d.agent_id = ${s}.agent_id AND d.claim_id = ${s}.claim_id
    AND d.day >= to_char((to_timestamp(${s}.at) AT TIME ZONE 'UTC')::date - 30, 'YYYY-MM-DD')
    AND d.day < to_char(to_timestamp(${s}.at) AT TIME ZONE 'UTC', 'YYYY-MM-DD'))`;

/** A score row's columns, for score-packing.ts. */
function scoreColumnsOf(r: ScoreRecord): ScoreColumns {
  const settled = new Map<string, SettledDay>();
  for (const [day, checkins, onTime, creditS, digest] of r.settled ?? [])
    settled.set(day, { checkins, onTime, creditS: Number(creditS), digest });
  return {
    id: r.id,
    agentId: r.agent_id,
    method: r.method,
    at: r.at,
    trigger: r.trigger,
    day: r.day,
    sha256: r.sha256,
    total: r.total,
    inputs: r.inputs,
    resultJson: r.result_json,
    facts: r.facts,
    packed: r.packed,
    settled,
  };
}

const scoreOf =
  (strict: boolean) =>
  (r: ScoreRecord): ScoreRow =>
    scoreRowOf(scoreColumnsOf(r), { strict });
const scoreFrom = scoreOf(true);
const summaryFrom = (r: ScoreRecord): ScoreSummary => summaryOf(scoreColumnsOf(r));

/** A whole score: a compact one's settled lines come with it, its inputs being rebuilt. */
const SCORE_COLUMNS = `s.id, s.agent_id, s.method, s.at, s.trigger, s.day, s.inputs, s.sha256, s.result::text AS result_json, s.total, s.facts, s.packed,
  ${settledOf("s", "s.facts IS NOT NULL")} AS settled`;

/** A score's summary: settled lines only for a compact score of before migration 016, whose result is computed from its inputs. */
const SUMMARY_COLUMNS = `s.id, s.agent_id, s.method, s.at, s.trigger, s.day, s.sha256, s.result::text AS result_json, s.total, s.facts, s.packed,
  ${settledOf("s", "s.facts IS NOT NULL AND s.packed IS NULL")} AS settled`;

/**
 * The columns an insert writes, each with its SQL type for a batch's insert from one array a column (score-packing.ts
 * makes the stored form); its components as a version-2 leaf holds them (migration 014).
 */
const INSERT_COLUMN_TYPES: ReadonlyArray<[column: string, type: string]> = [
  ["agent_id", "text"],
  ["method", "text"],
  ["at", "bigint"],
  ["trigger", "text"],
  ["day", "text"],
  ["inputs", "text"],
  ["sha256", "text"],
  ["result", "json"],
  ["total", "integer"],
  ["claim_id", "bigint"],
  ["facts", "bytea"],
  ["packed", "bytea"],
  ["established", "boolean"],
  ["identity_points", "smallint"],
  ["reliability_points", "smallint"],
  ["integrity_points", "smallint"],
];
const INSERT_COLUMNS = INSERT_COLUMN_TYPES.map(([column]) => column).join(", ");
const INSERT_VALUES = INSERT_COLUMN_TYPES.map((_, i) => `$${i + 1}`).join(", ");
/**
 * A batch's parameters, the same number whatever the number of scores: an array literal a column, but a bytea column's
 * bytes all in one binary parameter (after the arrays), each value cut from it by its start (1-based) and length, two
 * integer arrays (NULL both for a NULL). As hex in an array literal, the two bytea columns were two thirds of a page's
 * bytes, written twice as long as they are and parsed back by PostgreSQL (issue #30).
 */
const BATCH_ARRAYS: ReadonlyArray<{ column: number; type: string }> = INSERT_COLUMN_TYPES.flatMap(([, type], column) =>
  type === "bytea"
    ? [
        { column, type: "integer" },
        { column, type: "integer" },
      ]
    : [{ column, type }],
);
/** The columns whose values travel as bytes (BATCH_ARRAYS). */
const BATCH_BYTES: readonly number[] = INSERT_COLUMN_TYPES.flatMap(([, type], column) => (type === "bytea" ? [column] : []));
/** A batch's insert: its rows from BATCH_ARRAYS unnested together, in the order given. */
const INSERT_BATCH = (() => {
  const first = (column: number) => BATCH_ARRAYS.findIndex((a) => a.column === column);
  const values = INSERT_COLUMN_TYPES.map((_, column) => {
    const v = first(column);
    const bytes = BATCH_BYTES.indexOf(column);
    return bytes === -1 ? `v${v}` : `substring($${BATCH_ARRAYS.length + bytes + 1}::bytea FROM v${v} FOR v${v + 1})`;
  });
  return `INSERT INTO scores (${INSERT_COLUMNS})
  SELECT ${values.join(", ")}
  FROM unnest(${BATCH_ARRAYS.map(({ type }, i) => `$${i + 1}::${type}[]`).join(", ")}) AS u (${BATCH_ARRAYS.map((_, i) => `v${i}`).join(", ")})
  ON CONFLICT (agent_id, day) WHERE trigger = 'daily' DO NOTHING RETURNING id, agent_id, at, trigger`;
})();

/**
 * A value of insertParams as an element of a PostgreSQL array literal: NULL, a number or boolean as it is written, text
 * double-quoted with `\` and `"` escaped, bytes as quoted hex (`"\\x..."`, the bytea hex form once the literal's escapes are read).
 */
export function arrayElement(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new BaseError("invalid_score_value", `a score's column holds ${value}`);
    return String(value);
  }
  if (typeof value === "boolean") return value ? "t" : "f";
  if (value instanceof Uint8Array) return `"\\\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}"`;
  if (typeof value === "string") return `"${value.replace(/[\\"]/g, "\\$&")}"`;
  throw new BaseError("invalid_score_value", `a score's column holds a ${typeof value}`);
}

function insertParams(s: NewScore): unknown[] {
  const p = packScore(s);
  const { identity, reliability, integrity } = s.result.components;
  return [
    s.agentId,
    s.method,
    s.at,
    s.trigger,
    s.day,
    p.inputs,
    s.sha256,
    p.resultJson,
    s.total,
    p.claimId,
    p.facts,
    p.packed,
    p.established,
    componentLeafValue(identity),
    componentLeafValue(reliability),
    componentLeafValue(integrity),
  ];
}

/**
 * An agent's (`a`) day aggregates of its claim up to day $3, for the daily recompute, in one pass over them (a LATERAL
 * join `h` on `agent_days_pkey`): `h.days`, those from day $4 (the window's first, V1) as one text, a line
 * `day,checkins,on_time,credit_s,coverage_s,digest` per day, `;` between lines, in the index's order (day order
 * when read through `agent_days_pkey`; `daysFrom` sorts otherwise); `h.earlier`, how many before day $4 had check-ins,
 * all the inputs take of them (V8). Text rather than a JSON array per day: at a million agents, building the JSON cost
 * PostgreSQL more than reading the rows, and parsing it cost node an array per day besides the day. Counted rather
 * than listed, the earlier days no longer make each agent's text a line longer a day of history: at 100,000 agents with
 * 120 days of history the recompute took 15.5 s listing them, 12.0-12.4 s counting them (README, issue #30). Every column is NOT NULL
 * (concat_ws would leave a NULL out, shifting the rest).
 */
const DAYS_OF_AGENT = `LEFT JOIN LATERAL (
  SELECT string_agg(concat_ws(',', d.day, d.checkins, d.on_time, d.credit_s, d.coverage_s, d.digest), ';') FILTER (WHERE d.day >= $4) AS days,
    (count(*) FILTER (WHERE d.day < $4 AND d.checkins > 0))::int AS earlier
  FROM agent_days d WHERE d.agent_id = a.id AND d.claim_id = a.claim_id AND d.day <= $3) h ON true`;

/**
 * The daily recompute's agents ($1) claimed at $2 or before and not released, each with its days up to $3 (DAYS_OF_AGENT,
 * the window from $4). The days are read from `agent_days`' key alone, an index-only scan (migration 025): a column read
 * here that the key does not include would read a page of the table per day again.
 */
export const DAILY_AGENT_ROWS_SQL = `SELECT ${AGENT_COLUMNS_OF_A}, h.days, h.earlier
  FROM unnest($1::text[]) AS i (id) JOIN agents a ON a.id = i.id ${DAYS_OF_AGENT}
  WHERE a.claimed_at <= $2 AND a.released_at IS NULL`;

/** The non-negative integer written in `text` from `from` up to `to` (a column of DAYS_OF_AGENT). */
function integerIn(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return Number.parseInt(text.slice(from, to), 10);
    n = n * 10 + digit;
  }
  return n;
}

/** The day aggregates of a DAYS_OF_AGENT value, oldest first. */
export function daysFrom(text: string | null): DayAggregate[] {
  const days: DayAggregate[] = [];
  if (text === null) return days;
  let ordered = true;
  for (let start = 0; start < text.length; ) {
    const end = text.indexOf(";", start);
    const stop = end === -1 ? text.length : end;
    const c1 = text.indexOf(",", start);
    const c2 = text.indexOf(",", c1 + 1);
    const c3 = text.indexOf(",", c2 + 1);
    const c4 = text.indexOf(",", c3 + 1);
    const c5 = text.indexOf(",", c4 + 1);
    const day = text.slice(start, c1);
    if (days.length > 0 && day <= days[days.length - 1].day) ordered = false;
    days.push({
      day,
      checkins: integerIn(text, c1 + 1, c2),
      onTime: integerIn(text, c2 + 1, c3),
      creditS: integerIn(text, c3 + 1, c4),
      coverageS: integerIn(text, c4 + 1, c5),
      digest: text.slice(c5 + 1, stop),
    });
    start = stop + 1;
  }
  if (!ordered) days.sort((x, y) => (x.day < y.day ? -1 : 1));
  return days;
}

/** An agent's fact rows as `dailyFactRows` reads them: its days kept as their text, parsed when the recompute scores it (issue #30). */
class SqlFactRows implements AgentFactRows {
  atMidnight = 0;
  proofs: AgentFactRows["proofs"] = [];
  penalties: AgentFactRows["penalties"] = [];
  constructor(
    readonly agent: AgentRow,
    readonly daysText: string | null,
    readonly earlierCheckinDays: number,
  ) {}
  get days(): DayAggregate[] {
    return daysFrom(this.daysText);
  }
}

/**
 * A page of fact rows as a worker thread is sent them (`postMessage`): plain data, each agent's days as the text
 * `dailyFactRows` read (a few kB, copied at once), or as given by a row of another kind.
 */
export type FactRowsMessage = Array<Omit<AgentFactRows, "days"> & { daysText: string | null; days?: DayAggregate[] }>;

export function factRowsMessage(rows: readonly AgentFactRows[]): FactRowsMessage {
  return rows.map((r) => {
    const plain = {
      agent: r.agent,
      earlierCheckinDays: r.earlierCheckinDays,
      atMidnight: r.atMidnight,
      proofs: r.proofs,
      penalties: r.penalties,
    };
    return r instanceof SqlFactRows ? { ...plain, daysText: r.daysText } : { ...plain, daysText: null, days: r.days };
  });
}

export function factRowsFromMessage(message: FactRowsMessage): AgentFactRows[] {
  return message.map((m) => {
    const rest = { atMidnight: m.atMidnight, proofs: m.proofs, penalties: m.penalties };
    if (m.days !== undefined) return { agent: m.agent, days: m.days, earlierCheckinDays: m.earlierCheckinDays, ...rest };
    return Object.assign(new SqlFactRows(m.agent, m.daysText, m.earlierCheckinDays ?? 0), rest);
  });
}

type SummaryAnswer = { agentExists: boolean; score: ScoreSummary | null };

/** The most agents asked for in one statement of latest scores. */
const SUMMARY_BATCH = 1000;
/**
 * Statements of latest scores on their way at once; what is asked for meanwhile leaves with the next. Unbounded, a
 * steady 2,000 reads a second of uncached agents (a restarted server's first minute) went out a statement per read,
 * each round trip's writes costing node and PostgreSQL more than the lookup (issue #30).
 */
const SUMMARY_IN_FLIGHT = 2;

/**
 * `latestScoreSummary` batched (src/store/batch.ts): the agents asked for while the event loop
 * handles one round of I/O are looked up together, in one statement.
 */
export function createSummaryReader(db: Queryable): LatestScores {
  const read = createBatcher<string, SummaryAnswer>({
    maxBatch: SUMMARY_BATCH,
    maxInFlight: SUMMARY_IN_FLIGHT,
    async run(asked) {
      const { rows } = await db.query<ScoreRecord & { asked: string; agent_exists: boolean }>(
        `SELECT q.id AS asked, a.id IS NOT NULL AS agent_exists, ${SUMMARY_COLUMNS}
         FROM unnest($1::text[]) AS q (id)
         LEFT JOIN agents a ON a.id = q.id AND a.released_at IS NULL
         LEFT JOIN LATERAL (
           SELECT id, agent_id, method, at, trigger, day, sha256, result, total, claim_id, facts, packed FROM scores
           WHERE agent_id = a.id ORDER BY at DESC, id DESC LIMIT 1
         ) s ON true`,
        [[...new Set(asked)]],
      );
      const answers = new Map<string, SummaryAnswer>();
      // A row of an agent without a score has its score's columns null.
      for (const r of rows) answers.set(r.asked, { agentExists: r.agent_exists, score: r.sha256 === null ? null : summaryFrom(r) });
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
 * The latest score of each of the next `limit` claimed agents after `afterAgentId` that have one (LatestScorePages):
 * agents in id order, those with a score (migration 008 keeps `score_id` set exactly then), each one's latest as the
 * summary reader finds it, all by index probes. Scores filtered by an anti-join on agents were planned, at a million
 * agents, as a scan of every agent for each page: 0.4 s a page, six minutes to fill a cache (issue #30).
 */
export async function latestScoresAfter(db: Queryable, afterAgentId: string, limit: number): Promise<ScoreSummary[]> {
  const { rows } = await db.query<ScoreRecord>(
    `SELECT ${SUMMARY_COLUMNS} FROM agents a
     JOIN LATERAL (SELECT * FROM scores s WHERE s.agent_id = a.id ORDER BY s.at DESC, s.id DESC LIMIT 1) s ON true
     WHERE a.id > $1 AND a.released_at IS NULL AND a.score_id IS NOT NULL
     ORDER BY a.id LIMIT $2`,
    [afterAgentId, limit],
  );
  return rows.map(summaryFrom);
}

/** What an agent's row kept of its latest score before an update moved it, and whether its owner keeps events. */
type MoveRecord = {
  agent_id: string;
  owner_id: string;
  watched: boolean;
  score_id: number | null;
  score_total: number | null;
  score_band: string | null;
  score_state: "provisional" | "established" | null;
};

/**
 * Puts scores just inserted on their agents' rows as their latest (migration 008, for the directory)
 * where they are later (by `at`, then id) than the one there: from the values written, one statement.
 * Returns the moves of the agents whose owners keep events (score.changed, issue #28), each with the
 * latest it replaced as the statement read it (the row joined again: its values before this update).
 */
async function setLatestScores(q: Queryable, scores: ReadonlyArray<{ id: number } & LatestCandidate>): Promise<LatestScoreMove[]> {
  const latest = new Map<string, { id: number } & LatestCandidate>();
  for (const w of scores) {
    const seen = latest.get(w.agentId);
    if (!seen || w.at > seen.at || (w.at === seen.at && w.id > seen.id)) latest.set(w.agentId, w);
  }
  const rows = [...latest.values()];
  const { rows: moved } = await q.query<MoveRecord>(
    `UPDATE agents a SET score_id = n.id, score_at = n.at, score_total = n.total, score_band = n.band, score_state = n.state
     FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::integer[], $5::text[], $6::text[]) AS n (agent_id, id, at, total, band, state),
       agents o
     WHERE a.id = n.agent_id AND o.id = a.id AND (a.score_id IS NULL OR (n.at, n.id) > (a.score_at, a.score_id))
     RETURNING a.id AS agent_id, a.owner_id, EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.owner_id = a.owner_id) AS watched,
       o.score_id, o.score_total, o.score_band, o.score_state`,
    [
      rows.map((w) => w.agentId),
      rows.map((w) => w.id),
      rows.map((w) => w.at),
      rows.map((w) => w.total),
      rows.map((w) => w.band),
      rows.map((w) => w.state),
    ],
  );
  return moved
    .filter((r) => r.watched)
    .map((r) => {
      const w = latest.get(r.agent_id)!;
      return {
        agentId: r.agent_id,
        ownerId: r.owner_id,
        at: w.at,
        trigger: w.trigger,
        current: { scoreId: w.id, total: w.total, band: w.band, state: w.state },
        previous:
          r.score_id === null
            ? null
            : { scoreId: r.score_id, total: r.score_total ?? 0, band: r.score_band ?? "", state: r.score_state ?? "provisional" },
      };
    });
}

/** What an inserted score may make its agent's latest (migration 008): the columns of the agent's row it sets. */
type LatestCandidate = Pick<NewScore, "agentId" | "at" | "trigger" | "total"> & Pick<ScoreResult, "band" | "state">;

const candidateOf = (s: NewScore): LatestCandidate => ({
  agentId: s.agentId,
  at: s.at,
  trigger: s.trigger,
  total: s.total,
  band: s.result.band,
  state: s.result.state,
});

/**
 * The SQL store's ScoreBatch: what each score may make its agent's latest, and its insert parameters (BATCH_ARRAYS), packed
 * as it is added: the elements of each array literal (`arrayElement`), and each bytea column's bytes.
 */
class SqlScoreBatch implements ScoreBatch {
  readonly scores: LatestCandidate[];
  /** Each array's elements and each bytea column's values, until the parameters are made; then null. */
  private elements: string[][] | null;
  private bytes: Uint8Array[][] | null;
  private byteLengths: number[];
  private made: Array<string | Uint8Array> | null;

  constructor(from?: ScoreBatchMessage) {
    this.scores = from?.scores ?? [];
    // Bytes that came through postMessage are plain Uint8Arrays: seen as Buffers (no copy), which drivers send as binary.
    this.made = from
      ? from.params.map((p) => (typeof p === "string" || Buffer.isBuffer(p) ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength)))
      : null;
    this.elements = from ? null : BATCH_ARRAYS.map(() => []);
    this.bytes = from ? null : BATCH_BYTES.map(() => []);
    this.byteLengths = BATCH_BYTES.map(() => 0);
  }
  add(score: NewScore): void {
    if (this.elements === null || this.bytes === null)
      throw new BaseError("score_batch_sealed", "a batch whose parameters are made (sent, or received from a worker) takes no more scores");
    this.scores.push(candidateOf(score));
    const values = insertParams(score);
    for (let c = 0, a = 0; c < values.length; c++) {
      const b = BATCH_BYTES.indexOf(c);
      if (b === -1) {
        this.elements[a++].push(arrayElement(values[c]));
        continue;
      }
      const value = values[c];
      if (value === null || value === undefined) {
        this.elements[a++].push("NULL");
        this.elements[a++].push("NULL");
        continue;
      }
      if (!(value instanceof Uint8Array)) throw new BaseError("invalid_score_value", `a score's bytea column holds a ${typeof value}`);
      this.elements[a++].push(String(this.byteLengths[b] + 1));
      this.elements[a++].push(String(value.byteLength));
      this.bytes[b].push(value);
      this.byteLengths[b] += value.byteLength;
    }
  }
  get size(): number {
    return this.scores.length;
  }
  /** The insert's parameters (BATCH_ARRAYS' literals, then each bytea column's bytes), made once; the batch takes no more scores afterwards. */
  params(): Array<string | Uint8Array> {
    if (this.made === null) {
      const literals = (this.elements ?? []).map((e) => `{${e.join(",")}}`);
      this.made = [...literals, ...(this.bytes ?? []).map((values) => Buffer.concat(values))];
      this.elements = null;
      this.bytes = null;
    }
    return this.made;
  }
}

/** A SQL store's batch, made without a store: what a worker thread scoring pages fills (src/app/score-workers.ts). */
export const createSqlScoreBatch = (): ScoreBatch => new SqlScoreBatch();

/** A batch of `createSqlScoreBatch` as `postMessage` sends it: its scores' candidates and its insert's parameters, plain data. */
export type ScoreBatchMessage = { scores: LatestCandidate[]; params: Array<string | Uint8Array> };

/** The message of `batch`, its parameters made on the calling thread (a worker's): the receiver only sends them on. */
export function scoreBatchMessage(batch: ScoreBatch): ScoreBatchMessage {
  if (!(batch instanceof SqlScoreBatch))
    throw new BaseError("foreign_score_batch", "scoreBatchMessage takes a batch of createSqlScoreBatch()");
  return { scores: batch.scores, params: batch.params() };
}

export const scoreBatchFromMessage = (message: ScoreBatchMessage): ScoreBatch => new SqlScoreBatch(message);

/**
 * The scores part of the store, its statements run by `q`.
 * @param wrote told the agents of the scores written (the store tells them on once their transaction commits)
 */
export function scoresIn(q: Queryable, wrote: (agentIds: string[]) => void): ScoresTx {
  return {
    async insertScore(s) {
      const { rows } = await q.query<{ id: number }>(
        `INSERT INTO scores (${INSERT_COLUMNS}) VALUES (${INSERT_VALUES}) RETURNING id`,
        insertParams(s),
      );
      const [moved] = await setLatestScores(q, [{ id: rows[0].id, ...candidateOf(s) }]);
      wrote([s.agentId]);
      return { id: rows[0].id, moved: moved ?? null };
    },
    latestScore: (agentId) =>
      one(q, `SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.agent_id = $1 ORDER BY s.at DESC, s.id DESC LIMIT 1`, [agentId], scoreFrom),
    getScore: (id) => one(q, `SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.id = $1`, [id], scoreFrom),
    listDailyScores: (agentId, fromDay, toDay, page) =>
      page === undefined
        ? many(
            q,
            `SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.agent_id = $1 AND s.trigger = 'daily' AND s.day >= $2 AND s.day <= $3 ORDER BY s.day`,
            [agentId, fromDay, toDay],
            scoreFrom,
          )
        : many(
            q,
            `SELECT ${SCORE_COLUMNS} FROM scores s
             WHERE s.agent_id = $1 AND s.trigger = 'daily' AND s.day >= $2 AND s.day <= $3 AND s.day > $4
             ORDER BY s.day LIMIT $5`,
            [agentId, fromDay, toDay, page.after ?? "", page.limit],
            scoreFrom,
          ),
    // The daily recompute's bulk path: the same rows, in the same order, as
    // getAgent + hasDailyScore + listDays + countCheckinsAt + proofsForAgentAt + listPenalties per agent.
    async dailyFactRows(agentIds: readonly string[], day: string, at: number): Promise<AgentFactRows[]> {
      const ids = [...agentIds];
      // Each agent found by primary key, with its claim's day aggregates from the window's first day up to `day`
      // and a count of the earlier ones with check-ins (DAYS_OF_AGENT). Whether it
      // already has the day's score is left to the insert (ON CONFLICT on scores_daily_idx): a probe here was
      // planned, with the scores table's statistics of an empty or new day, as a pass over the day's scores per
      // agent, which the recompute is writing (quadratic in the agents). A rerun computes again and stores nothing.
      // The four statements leave together (one round trip): the other three take every agent asked
      // for, and what belongs to an agent not found (or claimed after `at`, or unclaimed) is ignored below.
      const [agentRows, midnight, proofs, penalties] = await Promise.all([
        q.query<AgentRecord & { days: string | null; earlier: number }>(DAILY_AGENT_ROWS_SQL, [ids, at, day, windowDays(at)[0]]),
        q.query<{ agent_id: string; claim_id: number; n: number }>(
          `SELECT agent_id, claim_id, count(*)::int AS n FROM checkins
           WHERE agent_id = ANY($1::text[]) AND arrival = $2${atMidnight(at)}
           GROUP BY agent_id, claim_id`,
          [ids, at],
        ),
        // Only what the facts take of a proof: its kind (V6), in the order of proofsForAgentAt.
        q.query<{ for_agent: string; kind: ProofKind }>(
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
        q.query<PenaltyRecord>("SELECT * FROM penalties WHERE agent_id = ANY($1::text[]) ORDER BY agent_id, added_at, id", [ids]),
      ]);
      if (agentRows.rows.length === 0) return [];
      const byAgent = new Map<string, AgentFactRows>(
        agentRows.rows.map((r) => {
          const row: AgentFactRows = new SqlFactRows(agentFrom(r), r.days, r.earlier);
          return [r.id, row];
        }),
      );
      for (const r of midnight.rows) {
        const a = byAgent.get(r.agent_id);
        if (a && a.agent.claimId === r.claim_id) a.atMidnight = r.n;
      }
      for (const r of proofs.rows) byAgent.get(r.for_agent)?.proofs.push({ kind: r.kind });
      for (const r of penalties.rows) byAgent.get(r.agent_id)?.penalties.push(penaltyFrom(r));
      return ids.flatMap((id) => byAgent.get(id) ?? []);
    },
    scoreBatch: () => new SqlScoreBatch(),
    async insertScores(batch) {
      if (!(batch instanceof SqlScoreBatch))
        throw new BaseError("foreign_score_batch", "insertScores takes a batch of this store's scoreBatch()");
      const given = batch.scores;
      if (given.length === 0) return { stored: 0, moved: [] };
      // One statement, its parameters BATCH_ARRAYS and the bytes: rows get ids in the order given; a daily score of an agent
      // and day that has one already is skipped by the unique index (RETURNING lists the inserted rows, in order). A VALUES
      // list of 16 parameters a score cost PostgreSQL a quarter more to parse and plan at a page of 1,000 (issue #30).
      const { rows } = await q.query<{ id: number; agent_id: string; at: number; trigger: "daily" | "change" }>(
        INSERT_BATCH,
        batch.params(),
      );
      const inserted: Array<{ id: number } & LatestCandidate> = [];
      for (let i = 0, r = 0; i < given.length && r < rows.length; i++) {
        if (rows[r].agent_id === given[i].agentId && Number(rows[r].at) === given[i].at && rows[r].trigger === given[i].trigger)
          inserted.push({ id: rows[r++].id, ...given[i] });
      }
      const moved = inserted.length > 0 ? await setLatestScores(q, inserted) : [];
      wrote(inserted.map((w) => w.agentId));
      return { stored: inserted.length, moved };
    },
    hasDailyScore: async (agentId, day) =>
      (await q.query("SELECT 1 FROM scores WHERE agent_id = $1 AND trigger = 'daily' AND day = $2", [agentId, day])).rows.length > 0,
    scoresAfter: (afterId, limit) =>
      // Not strict: a compact row whose facts changed is returned as rebuilt, for the verification to report.
      many(q, `SELECT ${SCORE_COLUMNS} FROM scores s WHERE s.id > $1 ORDER BY s.id LIMIT $2`, [afterId, limit], scoreOf(false)),

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
        q,
        `UPDATE owner_recomputes SET due_at = $2 WHERE owner_id IN (
           SELECT owner_id FROM owner_recomputes WHERE due_at <= $1 ORDER BY due_at, owner_id LIMIT $3 FOR UPDATE SKIP LOCKED
         ) RETURNING owner_id, generation, attempts`,
        [now, leaseUntil, limit],
        (r: { owner_id: string; generation: number; attempts: number }): OwnerRecomputeJob => ({
          ownerId: r.owner_id,
          generation: Number(r.generation),
          attempts: r.attempts,
        }),
      ),
    async finishOwnerRecompute(job, now) {
      const { rowCount } = await q.query("DELETE FROM owner_recomputes WHERE owner_id = $1 AND generation = $2", [
        job.ownerId,
        job.generation,
      ]);
      if (rowCount === 0)
        await q.query("UPDATE owner_recomputes SET due_at = $2, attempts = 0, last_error = NULL WHERE owner_id = $1", [job.ownerId, now]);
    },
    async failOwnerRecompute(job, dueAt, error) {
      await q.query("UPDATE owner_recomputes SET due_at = $2, attempts = attempts + 1, last_error = $3 WHERE owner_id = $1", [
        job.ownerId,
        dueAt,
        error,
      ]);
    },
  };
}
