/**
 * Archived days of check-ins (CHECKIN_ARCHIVE_DIR): before a day's partition is dropped, its rows
 * are written to `<dir>/checkins-YYYY-MM-DD.ndjson.gz`, one JSON object a line with the columns of
 * `checkins` (migration 012), by agent, claim and arrival, so a verifier can still re-check the
 * day's digests (docs/inputs.md "Day digest"). A file appears under its name only complete: it is
 * written to a temporary name, fsynced, renamed, and the directory fsynced.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { once } from "node:events";
import zlib from "node:zlib";
import type { StoredCheckin } from "../service/ports";

/** One day's archive being written. */
export type CheckinArchiveFile = {
  append(rows: readonly StoredCheckin[]): Promise<void>;
  /** Makes the file durable under its name. @returns its path */
  commit(): Promise<string>;
  /** Removes what was written (the day stays unarchived). */
  abort(): Promise<void>;
};

export type CheckinArchive = {
  /** Starts writing `day`'s archive. */
  open(day: string): Promise<CheckinArchiveFile>;
};

/** The name of `day`'s archive in `dir`. */
export const checkinArchivePath = (dir: string, day: string): string => path.join(dir, `checkins-${day}.ndjson.gz`);

/** A line of the archive: the row as stored, in snake_case as in `checkins`. */
const lineOf = (c: StoredCheckin): string =>
  `${JSON.stringify({
    agent_id: c.agentId,
    claim_id: c.claimId,
    idempotency_key: c.idempotencyKey,
    arrival: c.arrival,
    next_heartbeat_s: c.nextHeartbeatS,
    on_time: c.onTime,
    excused: c.excused,
    credit: c.credit,
  })}\n`;

/** Archives in `dir` (created when missing). */
export function createCheckinArchive(dir: string): CheckinArchive {
  return {
    async open(day) {
      await fs.mkdir(dir, { recursive: true });
      const final = checkinArchivePath(dir, day);
      const temp = path.join(dir, `.${path.basename(final)}.${process.pid}.tmp`);
      const handle = await fs.open(temp, "w");
      const gzip = zlib.createGzip();
      const written = (async () => {
        for await (const chunk of gzip) await handle.write(chunk as Buffer);
      })();
      // Seen by commit or abort, whichever comes; never an unhandled rejection meanwhile.
      written.catch(() => undefined);
      return {
        async append(rows) {
          if (!gzip.write(rows.map(lineOf).join(""))) await Promise.race([once(gzip, "drain"), written]);
        },
        async commit() {
          gzip.end();
          await written;
          await handle.sync();
          await handle.close();
          await fs.rename(temp, final);
          const directory = await fs.open(dir, "r");
          try {
            await directory.sync();
          } finally {
            await directory.close();
          }
          return final;
        },
        async abort() {
          gzip.destroy();
          await written.catch(() => undefined);
          await handle.close().catch(() => undefined);
          await fs.rm(temp, { force: true });
        },
      };
    },
  };
}
