import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { InvalidInputError } from "../errors";
import { createTestPgDb, createTestPgliteDb, schemaOf, type TestDb } from "../test-helpers/db";
import { freePort } from "../test-helpers/node";
import { createPgClient, createPgDb, createPgliteDb, parseMultiHostUrl } from "./db";
import { listMigrations, migrate, migrationsDigest } from "./migrate";
import { CLUSTER_CACHE_DIR } from "./pglite-cluster";
import { DatabaseConflictError, DatabaseUnavailableError } from "./errors";

describe("multi-host PostgreSQL URLs", () => {
  it("reads the hosts of a URL as pg_autoctl show uri prints it, keeping the user, database and other parameters", () => {
    const parsed = parseMultiHostUrl(
      "postgres://vrai@127.0.0.1:6001,[::1]:6002,db.local/scores?target_session_attrs=read-write&sslmode=require",
    );
    expect(parsed).to.deep.equal({
      hosts: [
        { host: "127.0.0.1", port: 6001 },
        { host: "::1", port: 6002 },
        { host: "db.local", port: 5432 },
      ],
      url: "postgres://vrai@127.0.0.1:6001/scores?sslmode=require",
    });
  });

  it("leaves a URL of one host to node-postgres as it is", () => {
    expect(parseMultiHostUrl("postgresql://postgres@127.0.0.1:5432/postgres?sslmode=disable")).to.equal(null);
  });

  it("refuses a target_session_attrs that would send the service's writes to a standby", () => {
    expect(() => parseMultiHostUrl("postgres://127.0.0.1:6001,127.0.0.1:6002/db?target_session_attrs=standby")).to.throw(
      InvalidInputError,
      "target_session_attrs=standby",
    );
  });
});

describe("a PostgreSQL Db on several hosts", function () {
  this.timeout(60_000);
  let testDb: TestDb;
  let closedPort: number;
  /** The test database's URL with `hosts` in place of its one host. */
  const withHosts = (hosts: string) => testDb.url!.replace("127.0.0.1:5432", hosts);
  before(async () => {
    testDb = await createTestPgDb();
    // Nothing listens there: a host that is down refuses at once on loopback.
    closedPort = await freePort();
  });
  after(() => testDb.drop());

  it("connects to the host that answers when the first is down, for queries, transactions and single clients", async () => {
    const db = createPgDb(`${withHosts(`127.0.0.1:${closedPort},127.0.0.1:5432`)}?target_session_attrs=read-write`, { max: 2 });
    try {
      const { rows } = await db.query<{ port: number }>("SELECT inet_server_port() AS port");
      expect(rows).to.deep.equal([{ port: 5432 }]);
      const inTransaction = await db.transaction(async (tx) => (await tx.query<{ n: number }>("SELECT $1::int + 1 AS n", [41])).rows[0].n);
      expect(inTransaction).to.equal(42);
    } finally {
      await db.close();
    }
    const client = createPgClient(withHosts(`127.0.0.1:${closedPort},127.0.0.1:5432`));
    await client.connect();
    try {
      expect((await client.query("SELECT pg_is_in_recovery() AS standby")).rows).to.deep.equal([{ standby: false }]);
    } finally {
      await client.end();
    }
  });

  it("fails with DatabaseUnavailableError (503, retryable, Retry-After) naming each host while none answers", async () => {
    const other = await freePort();
    const db = createPgDb(withHosts(`127.0.0.1:${closedPort},127.0.0.1:${other}`));
    try {
      const error = await db.query("SELECT 1").then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(DatabaseUnavailableError);
      const unavailable = error as DatabaseUnavailableError;
      expect([unavailable.status, unavailable.code, unavailable.retryable, unavailable.retryAfterS]).to.deep.equal([
        503,
        "database_unavailable",
        true,
        5,
      ]);
      expect(unavailable.message).to.contain(`127.0.0.1:${closedPort}`).and.to.contain(`127.0.0.1:${other}`);
      const inTransaction = await db
        .transaction(async () => 1)
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(inTransaction).to.be.instanceOf(DatabaseUnavailableError);
    } finally {
      await db.close();
    }
  });

  it("reports a server that ends the session (57P01) or refuses a write (25006) as unavailable, and a wrong statement as it is", async () => {
    const db = createPgDb(testDb.url!, { max: 1 });
    try {
      const terminated = await db.query("SELECT pg_terminate_backend(pg_backend_pid())").then(
        () => null,
        (e: unknown) => e,
      );
      expect(terminated).to.be.instanceOf(DatabaseUnavailableError);
      expect(((terminated as DatabaseUnavailableError).cause as { code?: string }).code).to.equal("57P01");
      // The pool replaced the terminated connection.
      expect((await db.query<{ one: number }>("SELECT 1 AS one")).rows).to.deep.equal([{ one: 1 }]);
      const readOnly = await db
        .transaction(async (tx) => {
          await tx.query("SET TRANSACTION READ ONLY");
          await tx.query("CREATE TABLE never_made (x int)");
        })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(readOnly).to.be.instanceOf(DatabaseUnavailableError);
      expect(((readOnly as DatabaseUnavailableError).cause as { code?: string }).code).to.equal("25006");
      const wrong = await db.query("SELECT FROM WHERE").then(
        () => null,
        (e: unknown) => e,
      );
      expect(wrong).to.not.be.instanceOf(DatabaseUnavailableError);
      expect((wrong as { code?: string }).code).to.equal("42601");
    } finally {
      await db.close();
    }
  });

  it("reports a write rolled back for a deadlock (40P01) or serialization failure (40001) as a conflict (503, Retry-After 1), none of it kept", async () => {
    const db = createPgDb(testDb.url!, { max: 2 });
    try {
      await db.query("CREATE TABLE pair (id int PRIMARY KEY, v int NOT NULL)");
      await db.query("INSERT INTO pair VALUES (1, 0), (2, 0)");
      // Two transactions each lock one row, then ask for the other's: PostgreSQL fails one of them.
      let aLocked = () => {};
      let bLocked = () => {};
      const aHolds = new Promise<void>((resolve) => (aLocked = resolve));
      const bHolds = new Promise<void>((resolve) => (bLocked = resolve));
      const crossed = (first: number, second: number, add: number, locked: () => void, other: Promise<void>) =>
        db.transaction(async (tx) => {
          await tx.query("UPDATE pair SET v = v + $1 WHERE id = $2", [add, first]);
          locked();
          await other;
          await tx.query("UPDATE pair SET v = v + $1 WHERE id = $2", [add, second]);
          return add;
        });
      const outcomes = await Promise.allSettled([crossed(1, 2, 1, aLocked, bHolds), crossed(2, 1, 10, bLocked, aHolds)]);
      const failed = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as unknown] : []));
      const committed = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
      expect([failed.length, committed.length]).to.deep.equal([1, 1]);
      expect(failed[0]).to.be.instanceOf(DatabaseConflictError);
      const conflict = failed[0] as DatabaseConflictError;
      expect([conflict.status, conflict.code, conflict.retryable, conflict.retryAfterS]).to.deep.equal([503, "database_conflict", true, 1]);
      expect((conflict.cause as { code?: string }).code).to.equal("40P01");
      const { rows } = await db.query<{ v: number }>("SELECT v FROM pair ORDER BY id");
      expect(rows.map((r) => r.v)).to.deep.equal([committed[0], committed[0]]);
      const serialization = await db
        .query("DO $$ BEGIN RAISE EXCEPTION 'could not serialize' USING ERRCODE = 'serialization_failure'; END $$")
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(serialization).to.be.instanceOf(DatabaseConflictError);
      expect(((serialization as DatabaseConflictError).cause as { code?: string }).code).to.equal("40001");
    } finally {
      await db.close();
    }
  });
});

describe("a new PGlite store (issue #30)", function () {
  this.timeout(120_000);
  it("opens in memory and in a new data directory with every migration applied, as migrating an empty cluster does (two stores opened: 3-10 s)", async () => {
    const migrated = await createTestPgliteDb();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-new-store-"));
    const stores = [await createPgliteDb("memory://"), await createPgliteDb(path.join(dir, "data"))];
    try {
      expect(await migrate(migrated.db)).to.have.length(listMigrations().length);
      const expected = await schemaOf(migrated.db);
      expect(expected.columns.length + expected.indexes.length + expected.functions.length).to.be.above(100);
      for (const [i, db] of stores.entries()) {
        expect(await migrate(db), `store ${i}: nothing left to apply`).to.deep.equal([]);
        const versions = (await db.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).rows;
        expect(versions.map((r) => r.version)).to.deep.equal(listMigrations().map((m) => m.version));
        expect(await schemaOf(db), `store ${i}`).to.deep.equal(expected);
      }
      // Kept under the migrations' digest: another set of migrations makes another.
      const kept = fs
        .readdirSync(CLUSTER_CACHE_DIR)
        .filter((name) => name.startsWith(`new-store-${migrationsDigest().slice(0, 16)}-pglite-`));
      expect(kept).to.have.length(1);
    } finally {
      for (const db of stores) await db.close();
      await migrated.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
