import { expect } from "chai";
import type pg from "pg";
import { createCheckinPartitions } from "./checkin-partitions";
import { createPgClient } from "./db";
import { createMigratedTestDb, createTestPgDb, type TestDb } from "../test-helpers/db";
import { eventually } from "../test-helpers/eventually";

// Two connections at once: PostgreSQL only (PGlite has one).
describe("check-in day partitions on PostgreSQL, beside check-ins being written (migration 012)", () => {
  let testDb: TestDb;
  let writer: pg.Client;
  before(async () => {
    testDb = await createMigratedTestDb(createTestPgDb);
  });
  beforeEach(async () => {
    writer = createPgClient(testDb.url!);
    await writer.connect();
  });
  afterEach(() => writer.end());
  after(() => testDb.drop());

  it("creates a day's partition while a check-in holds `agents` and then reads the default partition: no deadlock", async () => {
    // A check-in's statement locks `agents` (and `checkins`) when it is planned and the partitions it reads when it
    // runs; two statements of one transaction take the same locks in the same order, with the partition's creation
    // starting between them.
    await writer.query("BEGIN");
    await writer.query("UPDATE agents SET last_arrival = last_arrival WHERE id = 'an agent nobody claimed'");
    const creating = createCheckinPartitions(testDb.db).create("2031-01-05");
    creating.catch(() => undefined);
    await eventually(
      async () =>
        (
          await testDb.db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'agents'::regclass AND mode = 'ShareRowExclusiveLock' AND NOT granted",
          )
        ).rows[0].n === 1,
      "the partition's creation waiting for `agents`",
    );
    // Before the fix the creation held the default partition here: this read waited for it, PostgreSQL found the
    // cycle after deadlock_timeout and failed one of the two (40P01).
    const { rows } = await writer.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins_default");
    expect(rows[0].n).to.equal(0);
    await writer.query("COMMIT");
    expect(await creating).to.equal(true);
    expect(await createCheckinPartitions(testDb.db).listDays()).to.include("2031-01-05");
  });
});
