/**
 * The retention rule of check-ins (migration 012, README "Configuration"): the day partitions of
 * `checkins` are created ahead, and a day older than CHECKIN_RETENTION_DAYS is dropped whole, after
 * its rows were archived when CHECKIN_ARCHIVE_DIR is set. Scores never read check-ins (they read the
 * day aggregates, never dropped, and keep their inputs: V9), so dropping changes no stored score and
 * no agent's state (V3.4). V3.1 remembers a key as long as its check-in's day is kept: at least
 * CHECKIN_RETENTION_DAYS × 24 h after the check-in.
 */
import type { Logger } from "pino";
import { DAY_S, dayStart, utcDay } from "../method";
import type { CheckinArchive } from "../store/checkin-archive";
import type { CheckinPartitions } from "../store/checkin-partitions";
import type { Clock } from "./clock";

/**
 * CHECKIN_RETENTION_DAYS when not configured. Three days are hours past the longest a heartbeat
 * client retries a key (minutes; the SDK uses a fresh key per attempt), and cover a client whose
 * queue stalls over a weekend; with today's partition that keeps at most four days of check-ins,
 * about 4/30 of what keeping them all would cost an agent over 30 days.
 */
export const DEFAULT_CHECKIN_RETENTION_DAYS = 3;
/** Days whose partition exists before their first check-in: today and the next two (a pass that fails has two days to succeed). */
const DAYS_AHEAD = 2;
/** Rows read from a partition and written to its archive at a time. */
const ARCHIVE_BATCH = 10_000;

/** What one pass did, by day. */
export type CheckinRetentionPass = { created: string[]; archived: string[]; dropped: string[]; kept: string[] };

export type CheckinRetention = {
  /**
   * Creates the partitions due and drops those past the window. A day is dropped only once its
   * daily score was computed (`scoredThrough`, the last day the daily recompute completed): that
   * score counts the check-ins arriving at its midnight (V9, src/service/scoring.ts).
   * @returns what it did; a day whose archive failed is `kept` (logged, tried again at the next pass)
   */
  run(scoredThrough: string | null): Promise<CheckinRetentionPass>;
};

/** The retention of check-ins over `partitions`, archived to `archive` when given. */
export function createCheckinRetention(deps: {
  partitions: CheckinPartitions;
  clock: Clock;
  logger: Logger;
  /** CHECKIN_RETENTION_DAYS: days kept before today. */
  retentionDays: number;
  archive?: CheckinArchive;
}): CheckinRetention {
  const { partitions, logger } = deps;

  /** Archives `day` when there is an archive; false (logged) when that failed. */
  async function archived(day: string): Promise<boolean> {
    if (!deps.archive) return true;
    let file: Awaited<ReturnType<CheckinArchive["open"]>> | undefined;
    try {
      const opened = await deps.archive.open(day);
      file = opened;
      const rows = await partitions.forEachBatch(day, ARCHIVE_BATCH, (batch) => opened.append(batch));
      logger.info({ day, rows, path: await file.commit() }, "check-ins archived");
      return true;
    } catch (error) {
      await file?.abort().catch(() => undefined);
      logger.error({ err: error, day }, "check-ins not archived; their partition is kept");
      return false;
    }
  }

  return {
    async run(scoredThrough) {
      const today = utcDay(deps.clock.now());
      const pass: CheckinRetentionPass = { created: [], archived: [], dropped: [], kept: [] };
      const ahead = Array.from({ length: DAYS_AHEAD + 1 }, (_, i) => utcDay(dayStart(today) + i * DAY_S));
      // Days stored in the default partition (no partition of their own when they arrived) get theirs too, so the rule reaches them.
      for (const day of [...new Set([...(await partitions.defaultDays()), ...ahead])]) {
        if (await partitions.create(day)) pass.created.push(day);
      }
      const firstKept = utcDay(dayStart(today) - deps.retentionDays * DAY_S);
      for (const day of await partitions.listDays()) {
        if (day >= firstKept || scoredThrough === null || day > scoredThrough) continue;
        if (!(await archived(day))) {
          pass.kept.push(day);
          continue;
        }
        if (deps.archive) pass.archived.push(day);
        await partitions.drop(day);
        pass.dropped.push(day);
      }
      return pass;
    },
  };
}
