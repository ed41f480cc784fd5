/**
 * The check-in path of the SQL store (`checkinState`, `commitCheckin`), batched: the requests in
 * flight together are read in one statement and written in one statement (src/store/batch.ts), so
 * under load a round trip to PostgreSQL, and its commit, serve many check-ins instead of one. Each
 * check-in is still decided and written on its own terms: the write locks its agent's row and
 * stores it only if the agent is still as it was read (V3.2), and a batch holding two requests of
 * one agent stores at most one of them, the other deciding again. An agent this server last read or
 * wrote is remembered (`createCheckinWrites`): its check-in is decided without the read, and its write
 * checks what the decision took from memory.
 */
import { DAY_S, type DayDelta, type OutageWindow } from "../method";
import type { AgentRow, CheckinExpectation, CheckinState, CheckinWrites, NewEvent, StoredCheckin } from "../service/ports";
import { AGENT_COLUMNS_OF_A, agentAfterCheckin, agentFrom, type AgentRecord } from "./agent-rows";
import { createBatcher } from "./batch";
import type { Db, Queryable } from "./db";
import { DatabaseUnavailableError } from "./errors";
import { recordEventsCtes } from "./events";

/** A row of STATE_SQL: the agent, its duplicate check-in (the `dup_` columns, null without one), the windows as JSON. */
type StateRecord = AgentRecord & {
  ord: number;
  dup_arrival: number | null;
  dup_next_heartbeat_s: number;
  dup_on_time: boolean | null;
  dup_excused: boolean;
  dup_credit: number;
  dup_claim_id: number;
  windows_revision: number;
};

/**
 * Every declared window (V4.3) and their revision, read together: the windows a check-in is decided with, all of them
 * (the rules ignore those that cannot excuse it; CheckinState.windows), kept in memory until the revision changes.
 */
const WINDOWS_SQL = `SELECT (SELECT n FROM outage_revision) AS revision,
  coalesce(json_agg(json_build_array(o.id, o.start_at, o.end_at, o.declared_at, o.closed_at) ORDER BY o.id), '[]'::json) AS windows
FROM outages o`;

type WindowsRecord = {
  revision: number;
  windows: Array<[id: string, start: number, end: number | null, declaredAt: number, closedAt: number | null]>;
};

/** The declared windows at one revision. */
type Windows = { revision: number; windows: readonly OutageWindow[] };

/** The most check-ins in one statement. */
const MAX_BATCH = 64;
/**
 * Statements of each kind on their way at once; requests made meanwhile wait for the next, so batches fill under load.
 * One of each kind: a state read and a write still overlap, and each send wakes a PostgreSQL backend that takes the
 * server's core from it for as long as the statement runs (a fifth of its time in `writev` in a profile). With two of
 * each, batches of 5-6 check-ins; with one, 4-7, and `bench:service` counted 2,106-2,194 check-ins/s against
 * 1,448-1,603 in runs alternating with two (PostgreSQL's CPU 0.35 ms a check-in against 0.46-0.56; issue #30).
 */
const MAX_IN_FLIGHT = 1;

/**
 * One statement for a batch of states: each agent, the duplicate of its request's key in its latest
 * claim (V3.1: keys are per agent and claim), and the revision of the declared windows (migration 024;
 * the windows themselves are held in memory, `WINDOWS_SQL`). An unknown agent has no row. The
 * duplicate is looked up in each day partition kept (migration 012), except those ending before the
 * claim (a check-in of the claim arrived at or after it), through the index of agent and key, spelt
 * as the index's expression; a lateral probe, so the planner
 * cannot join on a part of the key only (a plain join to the B-tree of migration 006 was planned on
 * agent and claim alone, which read every check-in of the agent). Planned at each execution
 * (`planEach`): a day partition starts empty, and a generic plan made then scanned it whole for
 * every lookup as it grew.
 */
const STATE_SQL = `SELECT q.ord::integer AS ord, ${AGENT_COLUMNS_OF_A},
       c.arrival AS dup_arrival, c.next_heartbeat_s AS dup_next_heartbeat_s, c.on_time AS dup_on_time,
       c.excused AS dup_excused, c.credit AS dup_credit, c.claim_id AS dup_claim_id,
       (SELECT n FROM outage_revision) AS windows_revision
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q (agent_id, idempotency_key, ord)
JOIN agents a ON a.id = q.agent_id
LEFT JOIN LATERAL (
  SELECT c.arrival, c.next_heartbeat_s, c.on_time, c.excused, c.credit, c.claim_id FROM checkins c
  WHERE c.agent_id || '/' || c.idempotency_key = a.id || '/' || q.idempotency_key
    AND c.agent_id = a.id AND c.claim_id = a.claim_id AND c.idempotency_key = q.idempotency_key AND c.arrival >= a.claimed_at LIMIT 1
) c ON true`;

/**
 * One statement, committed on its own, for a batch of counted check-ins. `locked` locks the agents'
 * rows in id order (two batches never wait for each other in a circle) and reads each as committed
 * (a writer that waited for the lock sees the row its predecessor wrote); `won` keeps, per agent,
 * the first check-in whose claim, previous counted check-in and key are still the locked row's, of an agent not unclaimed
 * meanwhile (its key stopped, issue #29), decided with the windows as they are (their revision, migration 024), whose
 * key the claim has not counted yet (V3.1: the lookup of STATE_SQL, under the agent's lock, for a check-in decided on
 * a remembered state, whose duplicate was not looked up); only those are written: the agent's new previous check-in,
 * the check-in, and its day deltas. An agent that had an
 * agent.late (its late mark, compared as the claim and previous check-in are) is no longer late, and its
 * agent.back (`back_*`, null for the others) is recorded with its deliveries (src/store/events.ts).
 * @returns the ordinals (1-based) of the check-ins written
 */
const COMMIT_SQL = `WITH q AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::integer[], $6::boolean[], $7::boolean[], $8::integer[],
                       $9::text[], $10::bigint[], $11::bigint[], $19::bigint[], $20::text[], $21::text[], $22::text[],
                       $23::text[], $24::bigint[])
    WITH ORDINALITY AS q (agent_id, claim_id, idempotency_key, arrival, next_heartbeat_s, on_time, excused, credit,
                          day_digest, expected_last, expected_claim, expected_late, back_owner, back_type, back_data,
                          expected_key_hash, windows_revision, ord)
), locked AS MATERIALIZED (
  SELECT a.id, a.claim_id, a.claimed_at, a.key_hash, a.last_arrival, a.late_deadline, a.released_at FROM agents a
  WHERE a.id IN (SELECT agent_id FROM q)
  ORDER BY a.id FOR UPDATE
), won AS MATERIALIZED (
  SELECT DISTINCT ON (q.agent_id) q.* FROM q JOIN locked l ON l.id = q.agent_id
  WHERE l.claim_id = q.expected_claim AND l.last_arrival IS NOT DISTINCT FROM q.expected_last
    AND l.late_deadline IS NOT DISTINCT FROM q.expected_late AND l.released_at IS NULL AND l.key_hash = q.expected_key_hash
    AND q.windows_revision = (SELECT n FROM outage_revision)
    AND NOT EXISTS (
      SELECT 1 FROM checkins c
      WHERE c.agent_id || '/' || c.idempotency_key = l.id || '/' || q.idempotency_key
        AND c.agent_id = l.id AND c.claim_id = l.claim_id AND c.idempotency_key = q.idempotency_key AND c.arrival >= l.claimed_at
    )
  ORDER BY q.agent_id, q.ord
), agent AS (
  UPDATE agents a SET last_arrival = w.arrival, last_next_heartbeat_s = w.next_heartbeat_s, last_day_digest = w.day_digest,
    late_deadline = NULL
  FROM won w WHERE a.id = w.agent_id
  RETURNING w.ord
), back AS (
  SELECT back_owner AS owner_id, back_type AS type, arrival AS at, back_data AS data FROM won WHERE back_type IS NOT NULL
), ${recordEventsCtes("back")}, checkin AS (
  INSERT INTO checkins (agent_id, claim_id, idempotency_key, arrival, next_heartbeat_s, on_time, excused, credit)
  SELECT agent_id, claim_id, idempotency_key, arrival, next_heartbeat_s, on_time, excused, credit FROM won
), days AS (
  INSERT INTO agent_days (agent_id, claim_id, day, checkins, on_time, credit_s, coverage_s, digest)
  SELECT w.agent_id, w.claim_id, d.day, d.checkins, d.on_time, d.credit_s, d.coverage_s, d.digest
  FROM unnest($12::integer[], $13::text[], $14::integer[], $15::integer[], $16::bigint[], $17::integer[], $18::text[])
    AS d (ord, day, checkins, on_time, credit_s, coverage_s, digest)
  JOIN won w ON w.ord = d.ord
  ON CONFLICT (agent_id, claim_id, day) DO UPDATE SET checkins = agent_days.checkins + EXCLUDED.checkins,
    on_time = agent_days.on_time + EXCLUDED.on_time, credit_s = agent_days.credit_s + EXCLUDED.credit_s,
    coverage_s = agent_days.coverage_s + EXCLUDED.coverage_s,
    digest = CASE WHEN EXCLUDED.digest = '' THEN agent_days.digest ELSE EXCLUDED.digest END
)
SELECT ord::integer AS ord FROM agent`;

/**
 * For `confirmDurable`, in one transaction on one connection: whether this server has the check-in (the
 * lookup of STATE_SQL, with its arrival, so one day partition is read), and a transaction id, so the
 * commit writes a record that synchronous_commit makes wait for this server's synchronous standbys.
 * On a server that streams to standbys (`replicated`: it keeps physical replication slots, as each node of
 * a pg_auto_failover formation does for the others, or names synchronous standbys), also its WAL position
 * now (`lsn`), which the check-in's commit record precedes.
 */
const KEPT_SQL = `SELECT txid_current() AS xid, EXISTS (
  SELECT 1 FROM checkins c
  WHERE c.agent_id || '/' || c.idempotency_key = $1::text || '/' || $2::text
    AND c.agent_id = $1 AND c.idempotency_key = $2 AND c.claim_id = $3 AND c.arrival = $4
) AS kept,
  (SELECT count(*) FROM pg_replication_slots WHERE slot_type = 'physical') > 0
    OR current_setting('synchronous_standby_names') <> '' AS replicated,
  CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_lsn()::text END AS lsn`;

/** Whether a standby streaming from this server has flushed its WAL up to $1. */
const HELD_SQL = "SELECT coalesce(bool_or(flush_lsn >= $1::pg_lsn), false) AS held FROM pg_stat_replication";

/**
 * How long `confirmDurable` waits for a standby to hold a check-in before it gives up with a 503: a
 * standby streaming from this server is milliseconds behind; none is there while a formation fails over.
 */
const HELD_WAIT = { tries: 20, pauseMs: 100 };

/**
 * `confirmDurable` of the SQL store. The commit's wait for synchronous standbys is not enough alone: a
 * primary that crashed and restarted before it learnt of a failover, or runs without synchronous
 * replication while its standby catches up (pg_auto_failover's wait_primary), commits at once, and can
 * hold a check-in its standby never had, lost when that standby is promoted and the old primary rewound.
 * So on a server that streams to standbys, a replay is answered only once a standby has flushed the WAL
 * past the check-in, read on the same connection before the commit; none within HELD_WAIT is a 503. (A
 * physical slot that no standby streams from makes every replay a 503: drop a stale slot, which also keeps
 * the server's WAL forever.)
 */
async function confirmKept(db: Db, duplicate: StoredCheckin): Promise<boolean> {
  return db.transaction(async (q) => {
    const {
      rows: [found],
    } = await q.query<{ kept: boolean; replicated: boolean; lsn: string | null }>(
      KEPT_SQL,
      [duplicate.agentId, duplicate.idempotencyKey, duplicate.claimId, duplicate.arrival],
      { planEach: true },
    );
    if (!found.kept || !found.replicated) return found.kept;
    for (let attempt = 1; attempt <= HELD_WAIT.tries; attempt++) {
      const { rows } = await q.query<{ held: boolean }>(HELD_SQL, [found.lsn]);
      if (rows[0].held) return true;
      await new Promise((resolve) => setTimeout(resolve, HELD_WAIT.pauseMs));
    }
    throw new DatabaseUnavailableError("no standby holds the check-in this request repeats yet (a failover is under way)");
  });
}

/**
 * A condition for a query of check-ins arriving exactly at `at`: when `at` is a midnight, as the daily
 * score's is (V9), the condition of the index of check-ins arriving at one (migration 012), spelt as
 * the index's so the planner uses it instead of reading the agent's whole day.
 */
export const atMidnight = (at: number): string => (at % DAY_S === 0 ? " AND arrival % 86400 = 0" : "");

type StateAsk = { agentId: string; key: string };
type CommitAsk = { expected: CheckinExpectation; checkin: StoredCheckin; deltas: readonly DayDelta[]; back: NewEvent | undefined };

/** A state as STATE_SQL reads it: the windows' revision, not yet the windows. */
type ReadState = { agent: AgentRow | null; duplicate: StoredCheckin | null; revision: number | null };

function stateFrom(ask: StateAsk, r: StateRecord | undefined): ReadState {
  if (r === undefined) return { agent: null, duplicate: null, revision: null };
  const duplicate: StoredCheckin | null =
    r.dup_arrival === null
      ? null
      : {
          agentId: ask.agentId,
          claimId: r.dup_claim_id,
          idempotencyKey: ask.key,
          arrival: r.dup_arrival,
          nextHeartbeatS: r.dup_next_heartbeat_s,
          onTime: r.dup_on_time,
          excused: r.dup_excused,
          credit: r.dup_credit,
        };
  return { agent: agentFrom(r), duplicate, revision: Number(r.windows_revision) };
}

async function readStates(db: Queryable, asks: readonly StateAsk[]): Promise<ReadState[]> {
  const { rows } = await db.query<StateRecord>(STATE_SQL, [asks.map((a) => a.agentId), asks.map((a) => a.key)], { planEach: true });
  const byOrd = new Map<number, StateRecord>();
  for (const r of rows) byOrd.set(r.ord, r);
  return asks.map((ask, i) => stateFrom(ask, byOrd.get(i + 1)));
}

async function readWindows(db: Queryable): Promise<Windows> {
  const {
    rows: [r],
  } = await db.query<WindowsRecord>(WINDOWS_SQL);
  const windows: OutageWindow[] = r.windows.map(([id, start, end, declaredAt, closedAt]) => ({
    id,
    start: Number(start),
    end: end === null ? null : Number(end),
    declaredAt: Number(declaredAt),
    closedAt: closedAt === null ? null : Number(closedAt),
  }));
  return { revision: Number(r.revision), windows };
}

async function writeCheckins(db: Queryable, asks: readonly CommitAsk[]): Promise<boolean[]> {
  const c = asks.map((a) => a.checkin);
  const deltas = asks.flatMap((a, i) => a.deltas.map((d) => ({ ord: i + 1, d })));
  const { rows } = await db.query<{ ord: number }>(COMMIT_SQL, [
    c.map((x) => x.agentId),
    c.map((x) => x.claimId),
    c.map((x) => x.idempotencyKey),
    c.map((x) => x.arrival),
    c.map((x) => x.nextHeartbeatS),
    c.map((x) => x.onTime),
    c.map((x) => x.excused),
    c.map((x) => x.credit),
    asks.map((a) => a.deltas[a.deltas.length - 1].digest ?? null),
    asks.map((a) => a.expected.lastArrival),
    asks.map((a) => a.expected.claimId),
    deltas.map((x) => x.ord),
    deltas.map((x) => x.d.day),
    deltas.map((x) => x.d.checkins),
    deltas.map((x) => x.d.onTime),
    deltas.map((x) => x.d.creditS),
    deltas.map((x) => x.d.coverageS),
    deltas.map((x) => x.d.digest ?? ""),
    asks.map((a) => a.expected.lateDeadline ?? null),
    asks.map((a) => a.back?.ownerId ?? null),
    asks.map((a) => a.back?.type ?? null),
    asks.map((a) => a.back?.data ?? null),
    asks.map((a) => a.expected.keyHash),
    asks.map((a) => a.expected.windowsRevision),
  ]);
  const written = new Set<number>(rows.map((r) => r.ord));
  return asks.map((_, i) => written.has(i + 1));
}

/** Agents a server remembers for its check-ins by default (`createCheckinWrites`): about 50 MB of heap. */
export const REMEMBERED_AGENTS = 100_000;

/**
 * `checkinState` and `commitCheckin` of the SQL store on `db`, batched, with the agents last read or written and the
 * declared windows kept in memory: a check-in of an agent remembered is decided without a read and costs one round
 * trip, its write (COMMIT_SQL), which checks everything the decision took from memory (the agent's claim, previous
 * check-in, late mark, key and release; the windows' revision; the absence of its key among the claim's check-ins).
 * Another server's write, an operator's change or a new claim makes that write fail, and the check-in is decided
 * again on a state read now (CheckinState.cached), so what is remembered is a guess that costs a retry when wrong,
 * never a wrong answer. Behind a balancer, sending an agent's check-ins to one server (hashing on the path) keeps
 * them remembered.
 * @param options.rememberedAgents the most agents remembered (the least recently written or read go first); 0: none
 */
export function createCheckinWrites(db: Db, options: { rememberedAgents?: number } = {}): CheckinWrites {
  const capacity = options.rememberedAgents ?? REMEMBERED_AGENTS;
  const remembered = new Map<string, AgentRow>();
  const remember = (agent: AgentRow): void => {
    if (capacity === 0) return;
    // Deleted first so the agent moves to the end of the map's order, the most recently used.
    remembered.delete(agent.id);
    remembered.set(agent.id, agent);
    if (remembered.size > capacity) remembered.delete(remembered.keys().next().value as string);
  };
  let windows: Windows | undefined;
  let windowsRead: Promise<Windows> | undefined;
  /**
   * The windows as held when they are at `revision` (a state's), else as read now, one read for the callers meanwhile.
   * Whatever revision that read finds, the write checks it: a revision that went back (a database restored) is taken too.
   */
  const windowsOf = async (revision: number): Promise<Windows> => {
    if (windows !== undefined && windows.revision === revision) return windows;
    windowsRead ??= readWindows(db)
      .then((read) => (windows = read))
      .finally(() => {
        windowsRead = undefined;
      });
    return windowsRead;
  };

  const state = createBatcher<StateAsk, ReadState>({
    maxBatch: MAX_BATCH,
    maxInFlight: MAX_IN_FLIGHT,
    run: (asks) => readStates(db, asks),
  });
  const commit = createBatcher<CommitAsk, boolean>({
    maxBatch: MAX_BATCH,
    maxInFlight: MAX_IN_FLIGHT,
    // A batch that fails is tried again one check-in at a time: a fault of one (or a lock timeout
    // among many) fails only the check-ins it belongs to.
    run: (asks) =>
      asks.length === 1
        ? writeCheckins(db, asks)
        : writeCheckins(db, asks).catch(() => asks.map(async (ask) => (await writeCheckins(db, [ask]))[0])),
  });

  return {
    async checkinState(agentId, key, fresh = false): Promise<CheckinState> {
      const agent = fresh ? undefined : remembered.get(agentId);
      if (agent !== undefined && windows !== undefined)
        return { agent, duplicate: null, windows: windows.windows, windowsRevision: windows.revision, cached: true };
      const read = await state({ agentId, key });
      if (read.agent === null) {
        remembered.delete(agentId);
        return { agent: null, duplicate: null, windows: [], windowsRevision: 0, cached: false };
      }
      remember(read.agent);
      const held = await windowsOf(read.revision as number);
      return { agent: read.agent, duplicate: read.duplicate, windows: held.windows, windowsRevision: held.revision, cached: false };
    },
    async commitCheckin(expected, checkin, deltas, back) {
      const written = await commit({ expected, checkin, deltas, back });
      const agent = remembered.get(checkin.agentId);
      const dayDigest = deltas[deltas.length - 1].digest;
      if (written && agent !== undefined && agent.claimId === checkin.claimId && dayDigest !== null) {
        // The row as COMMIT_SQL left it, with the key it checked.
        remember(agentAfterCheckin(agent, checkin, dayDigest, expected.keyHash));
      } else remembered.delete(checkin.agentId);
      return written;
    },
    confirmDurable: (duplicate) => confirmKept(db, duplicate),
  };
}
