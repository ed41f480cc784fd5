/**
 * The day partitions of `checkins` (migration 012): one per UTC day of arrival (V1), named
 * `checkins_YYYYMMDD`, beside `checkins_default`, which holds check-ins of a day whose partition is
 * not there yet. Which days have one, creating one, reading one's rows in order, dropping one.
 */
import { DAY_S, dayStart } from "../method";
import type { StoredCheckin } from "../service/ports";
import type { Db, Queryable } from "./db";

export type CheckinPartitions = {
  /** Days (`YYYY-MM-DD`) with a partition of their own, oldest first. */
  listDays(): Promise<string[]>;
  /** Days of the check-ins in the default partition (a day that had no partition when they arrived), oldest first. */
  defaultDays(): Promise<string[]>;
  /**
   * Creates `day`'s partition, moving that day's check-ins out of the default partition into it.
   * @returns false when it was there already
   */
  create(day: string): Promise<boolean>;
  /**
   * Hands the check-ins of `day`'s partition to `onBatch`, at most `batchSize` at a time, by agent,
   * claim and arrival (each agent's day in the order its day digest chains them, docs/inputs.md).
   * @returns how many there were
   */
  forEachBatch(day: string, batchSize: number, onBatch: (rows: StoredCheckin[]) => Promise<void>): Promise<number>;
  /** Drops `day`'s partition with its check-ins; a day without one is left as it is. */
  drop(day: string): Promise<void>;
};

// Any constant shared by every instance: two schedulers never create or drop a partition at once.
const PARTITION_LOCK_KEY = 7_264_000_012;
/**
 * Creating or dropping a partition locks `checkins` (and attaching one, its default partition), which
 * stalls check-ins until the maintenance commits; behind a long transaction it would stall them for
 * as long. It gives up instead, and the next tick tries again.
 */
const LOCK_TIMEOUT = "5s";

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const PARTITION = /^checkins_(\d{4})(\d{2})(\d{2})$/;
const CHECKIN_COLUMNS = "arrival, claim_id, credit, next_heartbeat_s, on_time, excused, agent_id, idempotency_key";

/** The partition of `day`: its table's name and its bounds in Unix seconds, [start, start + 1 day). */
function partitionOf(day: string): { table: string; from: number; to: number } {
  // The name is part of SQL text (an identifier cannot be a parameter): only a well-formed day makes one.
  if (!DAY.test(day)) throw new Error(`not a day: ${day}`);
  const from = dayStart(day);
  return { table: `checkins_${day.replaceAll("-", "")}`, from, to: from + DAY_S };
}

const dayOfTable = (table: string): string | null => {
  const m = PARTITION.exec(table);
  return m === null ? null : `${m[1]}-${m[2]}-${m[3]}`;
};

/** A `checkins` row. */
type CheckinRecord = {
  agent_id: string;
  claim_id: number;
  idempotency_key: string;
  arrival: number;
  next_heartbeat_s: number;
  on_time: boolean | null;
  excused: boolean;
  credit: number;
};

const checkinFrom = (r: CheckinRecord): StoredCheckin => ({
  agentId: r.agent_id,
  claimId: Number(r.claim_id),
  idempotencyKey: r.idempotency_key,
  arrival: Number(r.arrival),
  nextHeartbeatS: r.next_heartbeat_s,
  onTime: r.on_time,
  excused: r.excused,
  credit: r.credit,
});

/** The partitions of `checkins` on `db`. */
export function createCheckinPartitions(db: Db): CheckinPartitions {
  /** Runs `fn` in a transaction holding the maintenance lock, under the lock timeout. */
  const maintain = <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
    db.transaction(async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      if (db.kind === "pg") await tx.query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK_KEY]);
      return fn(tx);
    });

  const listDays = async (q: Queryable = db): Promise<string[]> =>
    (
      await q.query<{ table: string }>(
        "SELECT c.relname AS table FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'checkins'::regclass",
      )
    ).rows
      .map((r) => dayOfTable(r.table))
      .filter((day): day is string => day !== null)
      .sort();

  return {
    listDays: () => listDays(),
    async defaultDays() {
      const { rows } = await db.query<{ day: string }>(
        "SELECT DISTINCT to_char(to_timestamp(arrival - arrival % 86400) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM checkins_default ORDER BY day",
      );
      return rows.map((r) => r.day);
    },
    create: (day) =>
      maintain(async (tx) => {
        if ((await listDays(tx)).includes(day)) return false;
        const { table, from, to } = partitionOf(day);
        // Built detached and attached after: attaching locks `checkins` less than CREATE ... PARTITION OF
        // (check-ins go on being written meanwhile); the default partition is locked before the move, so no
        // check-in of the day lands there between the move and the attach.
        // `agents` is locked before it, in the mode the attach takes (its foreign key's triggers go on `agents`):
        // a check-in's statement locks `agents` and `checkins` when it is planned and the partitions it reads when
        // it runs, so taking the default partition first and `agents` at the attach waited on a check-in that
        // waited on this, a deadlock PostgreSQL broke by failing the check-in (a 500 in a 20-minute soak).
        await tx.query("LOCK TABLE agents IN SHARE ROW EXCLUSIVE MODE");
        await tx.query("LOCK TABLE checkins_default IN ACCESS EXCLUSIVE MODE");
        await tx.query(`CREATE TABLE ${table} (LIKE checkins INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
        await tx.query(
          `WITH moved AS (DELETE FROM checkins_default WHERE arrival >= $1 AND arrival < $2 RETURNING ${CHECKIN_COLUMNS})
         INSERT INTO ${table} (${CHECKIN_COLUMNS}) SELECT ${CHECKIN_COLUMNS} FROM moved`,
          [from, to],
        );
        await tx.query(`ALTER TABLE checkins ATTACH PARTITION ${table} FOR VALUES FROM (${from}) TO (${to})`);
        return true;
      }),
    async forEachBatch(day, batchSize, onBatch) {
      const { table } = partitionOf(day);
      if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new Error(`not a batch size: ${batchSize}`);
      // A cursor: a day of a million agents is 24 million rows, read a batch at a time.
      return db.transaction(async (tx) => {
        await tx.query(
          `DECLARE checkins_of_day NO SCROLL CURSOR FOR SELECT ${CHECKIN_COLUMNS} FROM ${table} ORDER BY agent_id, claim_id, arrival`,
        );
        let n = 0;
        for (;;) {
          const { rows } = await tx.query<CheckinRecord>(`FETCH ${batchSize} FROM checkins_of_day`);
          if (rows.length === 0) return n;
          n += rows.length;
          await onBatch(rows.map(checkinFrom));
        }
      });
    },
    drop: (day) =>
      maintain(async (tx) => {
        if ((await listDays(tx)).includes(day)) await tx.query(`DROP TABLE ${partitionOf(day).table}`);
      }),
  };
}
