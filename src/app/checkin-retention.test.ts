import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import pino from "pino";
import { startApiServer, type ApiServer } from "./server";
import { memoryIo } from "../cli/io";
import { runCli } from "../cli/main";
import { nextDayDigest, utcDay } from "../method";
import { checkinArchivePath, createCheckinArchive } from "../store/checkin-archive";
import { createCheckinPartitions } from "../store/checkin-partitions";
import type { Db } from "../store/db";
import { listMigrations, migrate, splitStatements } from "../store/migrate";
import { createSqlStore } from "../store/sql-store";
import { createMigratedTestDb, createTestPgDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { capturedLogger } from "../test-helpers/logs";
import { createVraiService } from "../service";
import { createCheckinRetention } from "../service/checkin-retention";
import { createManualClock } from "../service/clock";
import type { AgentRow, StoredCheckin } from "../service/ports";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z
const H = 3600;
const known = (agent: AgentRow | null): asserts agent is AgentRow => {
  if (!agent) throw new Error("no such agent");
};

type Row = {
  agent_id: string;
  claim_id: number;
  idempotency_key: string;
  arrival: number;
  next_heartbeat_s: number;
  on_time: boolean | null;
  excused: boolean;
  credit: number;
};
const ROW_SQL = "SELECT agent_id, claim_id, idempotency_key, arrival, next_heartbeat_s, on_time, excused, credit FROM";
const rowsOf = async (db: Db, table: string, where = ""): Promise<Row[]> =>
  (await db.query<Row>(`${ROW_SQL} ${table} ${where} ORDER BY agent_id, claim_id, arrival`)).rows;
const partitionDays = (db: Db) => createCheckinPartitions(db).listDays();
/** Rows by agent, claim and arrival, as the archive writes them. */
const byAgentAndArrival = (rows: readonly Row[]): Row[] =>
  [...rows].sort((a, b) => (a.agent_id < b.agent_id ? -1 : a.agent_id > b.agent_id ? 1 : a.claim_id - b.claim_id || a.arrival - b.arrival));
const DAYS_SQL = "SELECT * FROM agent_days ORDER BY agent_id, claim_id, day";
// The agent's check-in state (V2, V3.4); its latest score moves on with the daily recompute.
const AGENT_STATE_SQL = "SELECT id, claim_id, claimed_at, last_arrival, last_next_heartbeat_s, last_day_digest FROM agents ORDER BY id";

// Migration 012 and the default partition on both SQL stores (PGlite is the embedded default).
for (const { name, create } of TEST_STORES) {
  describe(`check-in day partitions on ${name} (migration 012)`, () => {
    let testDb: TestDb;
    before(async () => {
      testDb = await createMigratedTestDb(create);
    });
    after(() => testDb.drop());

    it(
      "stores a check-in arriving on a day with no partition yet, answers it as a duplicate, " +
        "and moves it into its day's partition once created (V3.1)",
      async () => {
        const clock = createManualClock(T0);
        const store = createSqlStore(testDb.db);
        const service = createVraiService({ store, clock, busy: () => false });
        const { ownerId } = await service.accounts.createOwner();
        const { agentId } = await service.accounts.claimNewAgent(ownerId);
        expect(await partitionDays(testDb.db)).to.deep.equal([]);
        expect((await service.checkins.checkIn(agentId, "k0", known)).type).to.equal("counted");
        expect(await rowsOf(testDb.db, "checkins_default")).to.have.length(1);

        const retention = createCheckinRetention({
          partitions: createCheckinPartitions(testDb.db),
          clock,
          logger: pino({ level: "silent" }),
          retentionDays: 3,
        });
        const pass = await retention.run(null);
        expect(pass.created).to.deep.equal(["2026-11-02", "2026-11-03", "2026-11-04"]);
        expect(await partitionDays(testDb.db)).to.deep.equal(["2026-11-02", "2026-11-03", "2026-11-04"]);
        expect(await rowsOf(testDb.db, "checkins_default")).to.deep.equal([]);
        expect((await rowsOf(testDb.db, "checkins_20261102")).map((r) => r.idempotency_key)).to.deep.equal(["k0"]);
        expect((await service.checkins.checkIn(agentId, "k0", known)).type).to.equal("duplicate");
        // A second pass finds everything in place.
        expect(await retention.run(null)).to.deep.equal({ created: [], archived: [], dropped: [], kept: [] });
      },
    );

    it("drops a day past the window once it is scored, and forgets its keys (V3.1)", async () => {
      const clock = createManualClock(Date.UTC(2026, 10, 6, 12) / 1000);
      const retention = createCheckinRetention({
        partitions: createCheckinPartitions(testDb.db),
        clock,
        logger: pino({ level: "silent" }),
        retentionDays: 3,
      });
      expect(await retention.run("2026-11-06")).to.deep.equal({
        created: ["2026-11-06", "2026-11-07", "2026-11-08"],
        archived: [],
        dropped: ["2026-11-02"],
        kept: [],
      });
      expect(await partitionDays(testDb.db)).to.deep.equal(["2026-11-03", "2026-11-04", "2026-11-06", "2026-11-07", "2026-11-08"]);
      expect(await rowsOf(testDb.db, "checkins")).to.deep.equal([]);
      const store = createSqlStore(testDb.db);
      const [agent] = (await testDb.db.query<{ id: string }>("SELECT id FROM agents")).rows;
      expect((await store.checkinState(agent.id, "k0", true)).duplicate).to.equal(null);
    });
  });
}

describe("check-in retention on PostgreSQL (CHECKIN_RETENTION_DAYS, CHECKIN_ARCHIVE_DIR)", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let archiveDir: string;
  const clock = createManualClock(T0);
  const { logger, entries } = capturedLogger();
  const agents: string[] = [];
  /** Every check-in counted, as the service answered it, and those of the days retention drops. */
  const counted: Row[] = [];
  let dropped: Row[];
  let daysBefore: unknown[];
  let agentsBefore: unknown[];

  before(async () => {
    testDb = await createTestPgDb();
    archiveDir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-checkins-"));
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "op-token-retention-test-0000",
      clock,
      logger,
      scoreCacheBytes: 0,
      checkinRetention: { days: 3, archiveDir },
    });
    const { ownerId } = await server.service.accounts.createOwner();
    for (let a = 0; a < 3; a++) agents.push((await server.service.accounts.claimNewAgent(ownerId)).agentId);
    const claims = await Promise.all(agents.map(async (id) => (await server.service.store.read.getAgent(id))!.claimId));
    await server.scheduler.tick();
    // Five days of hourly check-ins (2026-11-02 10:00 to 2026-11-07 09:00), the scheduler run as each day begins.
    for (let h = 0; h < 5 * 24; h++) {
      clock.set(T0 + h * H);
      if (utcDay(T0 + h * H) !== utcDay(T0 + (h - 1) * H)) await server.scheduler.tick();
      for (const [a, agentId] of agents.entries()) {
        clock.set(T0 + h * H + a);
        const outcome = await server.service.checkins.checkIn(agentId, `k${h}`, known);
        if (outcome.type !== "counted") throw new Error(`not counted: ${outcome.type}`);
        counted.push({
          agent_id: agentId,
          claim_id: claims[a],
          idempotency_key: `k${h}`,
          arrival: outcome.arrival,
          next_heartbeat_s: outcome.nextHeartbeatS,
          on_time: outcome.onTime,
          excused: outcome.excused,
          credit: outcome.credit,
        });
      }
    }
    dropped = byAgentAndArrival(counted.filter((c) => c.arrival < Date.UTC(2026, 10, 5) / 1000));
    daysBefore = (await testDb.db.query(DAYS_SQL)).rows;
    agentsBefore = (await testDb.db.query(AGENT_STATE_SQL)).rows;
    clock.set(Date.UTC(2026, 10, 8, 0, 5) / 1000);
    await server.scheduler.tick();
  });
  after(async () => {
    await server.close();
    await testDb.drop();
    fs.rmSync(archiveDir, { recursive: true, force: true });
  });

  it("drops the days older than the window once scored, keeps the window and creates the days ahead", async () => {
    // Today is 2026-11-08: the three days before it are kept, with today and the two after it.
    expect(await partitionDays(testDb.db)).to.deep.equal([
      "2026-11-05",
      "2026-11-06",
      "2026-11-07",
      "2026-11-08",
      "2026-11-09",
      "2026-11-10",
    ]);
    expect(dropped).to.have.length(3 * (14 + 24 + 24));
    expect(await rowsOf(testDb.db, "checkins", `WHERE arrival < ${Date.UTC(2026, 10, 5) / 1000}`)).to.deep.equal([]);
    expect(byAgentAndArrival(await rowsOf(testDb.db, "checkins"))).to.deep.equal(
      byAgentAndArrival(counted.filter((c) => c.arrival >= Date.UTC(2026, 10, 5) / 1000)),
    );
    // Each day dropped at the first pass of the day it left the window, after its archive.
    const passes = entries()
      .filter((l) => l.msg === "check-in partitions maintained" && l.dropped.length > 0)
      .map((l) => ({ archived: l.archived, dropped: l.dropped }));
    expect(passes).to.deep.equal([
      { archived: ["2026-11-02"], dropped: ["2026-11-02"] },
      { archived: ["2026-11-03"], dropped: ["2026-11-03"] },
      { archived: ["2026-11-04"], dropped: ["2026-11-04"] },
    ]);
  });

  it("leaves every day aggregate and each agent's state as they were (V3.4, V5, V10)", async () => {
    expect(daysBefore).to.have.length(3 * 6);
    expect((await testDb.db.query(DAYS_SQL)).rows).to.deep.equal(daysBefore);
    expect((await testDb.db.query(AGENT_STATE_SQL)).rows).to.deep.equal(agentsBefore);
  });

  it("keeps every stored score recomputable from its inputs: vrai recompute --verify passes (V9)", async () => {
    const stored = (await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM scores WHERE trigger = 'daily'")).rows[0].n;
    expect(stored).to.equal(3 * 6); // 2026-11-03 to 2026-11-08, for each agent
    const io = memoryIo();
    expect(await runCli(["recompute", "--verify", "--database-url", testDb.url!], io), io.out + io.err).to.equal(0);
    expect(JSON.parse(io.out.trim().split("\n").pop()!)).to.deep.include({ mismatches: 0 });
  });

  it("archives every dropped row, by agent, claim and arrival, from which each day's digest is re-checked (docs/inputs.md)", async () => {
    const archived: Row[] = [];
    for (const day of ["2026-11-02", "2026-11-03", "2026-11-04"]) {
      const file = checkinArchivePath(archiveDir, day);
      const dayRows: Row[] = zlib
        .gunzipSync(fs.readFileSync(file))
        .toString("utf8")
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(dayRows.every((r) => utcDay(r.arrival) === day)).to.equal(true);
      // In the file's order: each agent's rows together, in arrival order.
      expect(dayRows).to.deep.equal(byAgentAndArrival(dayRows));
      // Each agent's day chained in arrival order gives the digest of its day aggregate.
      for (const agentId of agents) {
        let digest = "";
        for (const r of dayRows.filter((x) => x.agent_id === agentId)) {
          digest = nextDayDigest(digest, {
            arrival: r.arrival,
            nextHeartbeatS: r.next_heartbeat_s,
            onTime: r.on_time,
            excused: r.excused,
            credit: r.credit,
          });
        }
        const { rows } = await testDb.db.query<{ digest: string }>("SELECT digest FROM agent_days WHERE agent_id = $1 AND day = $2", [
          agentId,
          day,
        ]);
        expect(digest).to.equal(rows[0].digest).and.to.have.length(64);
      }
      archived.push(...dayRows);
    }
    expect(byAgentAndArrival(archived)).to.deep.equal(dropped);
    expect(fs.readdirSync(archiveDir).sort()).to.deep.equal([
      "checkins-2026-11-02.ndjson.gz",
      "checkins-2026-11-03.ndjson.gz",
      "checkins-2026-11-04.ndjson.gz",
    ]);
  });

  it("judges afresh a key whose day was dropped, and answers a key of a kept day as its duplicate (V3.1's one change)", async () => {
    const [agentId] = agents;
    const before = (await server.service.store.read.getAgent(agentId))!.last!.arrival;
    clock.set(Date.UTC(2026, 10, 8, 1) / 1000);
    // k0 was counted on 2026-11-02, a dropped day: now counted again (it passes V3.2).
    const resent = await server.service.checkins.checkIn(agentId, "k0", known);
    expect(resent).to.include({ type: "counted", arrival: Date.UTC(2026, 10, 8, 1) / 1000 });
    expect(before).to.be.lessThan(Date.UTC(2026, 10, 8, 1) / 1000);
    // k100 was counted on 2026-11-06 14:00, a kept day: its original again, nothing stored.
    const kept = await server.service.checkins.checkIn(agentId, "k100", known);
    if (kept.type !== "duplicate") throw new Error(`not a duplicate: ${kept.type}`);
    expect(kept.original).to.include({ arrival: T0 + 100 * H, nextHeartbeatS: 3600, onTime: true, excused: false, credit: H });
    expect(await rowsOf(testDb.db, "checkins", `WHERE agent_id = '${agentId}' AND idempotency_key = 'k100'`)).to.have.length(1);
  });

  it("never counts one key twice among parallel requests, without a unique index across partitions (V3.1)", async () => {
    const agentId = agents[1];
    clock.set(Date.UTC(2026, 10, 8, 2) / 1000);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 24 }, () => server.service.checkins.checkIn(agentId, "parallel", known)),
    );
    const answers = outcomes.map((o) => (o.status === "fulfilled" ? o.value.type : (o.reason as { code?: string }).code));
    expect(answers.filter((t) => t === "counted")).to.have.length(1);
    expect(answers.every((t) => t === "counted" || t === "duplicate" || t === "checkin_contended")).to.equal(true, answers.join());
    expect(await rowsOf(testDb.db, "checkins", `WHERE agent_id = '${agentId}' AND idempotency_key = 'parallel'`)).to.have.length(1);
  });

  it("keeps a day whose archive cannot be written, logs why, and leaves no partial file", async () => {
    const notADirectory = path.join(archiveDir, "checkins-2026-11-05.ndjson.gz");
    fs.writeFileSync(notADirectory, "");
    const failing = capturedLogger();
    const retention = createCheckinRetention({
      partitions: createCheckinPartitions(testDb.db),
      clock: createManualClock(Date.UTC(2026, 10, 9, 0, 5) / 1000),
      logger: failing.logger,
      retentionDays: 3,
      archive: createCheckinArchive(notADirectory),
    });
    const before = await rowsOf(testDb.db, "checkins_20261105");
    const pass = await retention.run("2026-11-09");
    expect(pass).to.deep.include({ archived: [], dropped: [], kept: ["2026-11-05"] });
    expect(await partitionDays(testDb.db)).to.include("2026-11-05");
    expect(await rowsOf(testDb.db, "checkins_20261105"))
      .to.deep.equal(before)
      .and.to.have.length(3 * 24);
    expect(failing.entries().find((l) => l.level === 50)).to.deep.include({
      day: "2026-11-05",
      msg: "check-ins not archived; their partition is kept",
    });
    expect(fs.readdirSync(archiveDir).filter((f) => f.endsWith(".tmp"))).to.deep.equal([]);
  });

  it("keeps a day past the window whose daily score is not stored yet (its midnight's check-ins count in it, V9)", async () => {
    const retention = createCheckinRetention({
      partitions: createCheckinPartitions(testDb.db),
      clock: createManualClock(Date.UTC(2026, 10, 10, 0, 5) / 1000),
      logger: pino({ level: "silent" }),
      retentionDays: 3,
    });
    // 2026-11-05 and -06 are past the window, but the daily recompute has done only 2026-11-05.
    expect(await retention.run("2026-11-05")).to.deep.include({ dropped: ["2026-11-05"] });
    expect((await partitionDays(testDb.db))[0]).to.equal("2026-11-06");
  });
});

describe("migration 012 on check-ins stored before it", () => {
  let testDb: TestDb;
  before(async () => {
    testDb = await createTestPgDb();
  });
  after(() => testDb.drop());

  it("moves every check-in into its day's partition, drops the id, and answers their keys as duplicates (V3.1)", async () => {
    await migrate(testDb.db, { upTo: 11 });
    // Today's service stores each score with its packed result (migration 016): that column is added ahead.
    await testDb.db.query("ALTER TABLE scores ADD COLUMN packed bytea");
    // Today's check-in reads whether the agent was unclaimed (migration 022): that column ahead too.
    await testDb.db.query("ALTER TABLE agents ADD COLUMN released_at bigint");
    // Today's check-in records an agent.back in its write (migration 019): the agents' late mark and the events' tables ahead.
    const events = listMigrations().find((m) => m.version === 19);
    for (const statement of splitStatements(events?.sql ?? "")) await testDb.db.query(statement);
    // Today's check-in decides with the windows' revision (migration 024): that table ahead too.
    const revision = listMigrations().find((m) => m.version === 24);
    for (const statement of splitStatements(revision?.sql ?? "")) await testDb.db.query(statement);
    const clock = createManualClock(T0);
    const store = createSqlStore(testDb.db);
    const service = createVraiService({ store, clock, busy: () => false });
    const { ownerId } = await service.accounts.createOwner();
    // Claimed in SQL: a claim stores a score, and today's store writes columns this schema has not yet (migration 014).
    const agentId = "agt_before012";
    await testDb.db.query("INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at) VALUES ($1, $2, 0, $3, 'x', $3)", [
      agentId,
      ownerId,
      T0 - 60,
    ]);
    const claim = await testDb.db.query<{ id: number }>(
      "INSERT INTO claims (agent_id, owner_id, kind, claimed_at) VALUES ($1, $2, 'claim', $3) RETURNING id",
      [agentId, ownerId, T0 - 60],
    );
    await testDb.db.query("UPDATE agents SET claim_id = $2 WHERE id = $1", [agentId, claim.rows[0].id]);
    for (let h = 0; h < 30; h++) {
      clock.set(T0 + h * H);
      await service.checkins.checkIn(agentId, `old${h}`, known);
    }
    const before = await rowsOf(testDb.db, "checkins");
    expect(before).to.have.length(30);
    expect((await testDb.db.query("SELECT id FROM checkins")).rows).to.have.length(30);

    expect(await migrate(testDb.db)).to.include("012_checkins_by_day.sql");
    expect(await rowsOf(testDb.db, "checkins")).to.deep.equal(before);
    expect(await partitionDays(testDb.db)).to.deep.equal(["2026-11-02", "2026-11-03"]);
    expect(await rowsOf(testDb.db, "checkins_default")).to.deep.equal([]);
    const columns = (
      await testDb.db.query<{ column_name: string }>("SELECT column_name FROM information_schema.columns WHERE table_name = 'checkins'")
    ).rows;
    expect(columns.map((c) => c.column_name)).to.not.include("id");
    const state = await store.checkinState(agentId, "old3", true);
    expect(state.duplicate).to.deep.equal({
      agentId,
      claimId: state.agent!.claimId,
      idempotencyKey: "old3",
      arrival: T0 + 3 * H,
      nextHeartbeatS: 3600,
      onTime: true,
      excused: false,
      credit: H,
    } satisfies StoredCheckin);
    clock.set(T0 + 30 * H);
    expect((await service.checkins.checkIn(agentId, "old29", known)).type).to.equal("duplicate");
    expect((await service.checkins.checkIn(agentId, "new30", known)).type).to.equal("counted");
    expect((await rowsOf(testDb.db, "checkins_20261103")).map((r) => r.idempotency_key)).to.include("new30");
  });
});
