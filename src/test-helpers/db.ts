import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { createPgDb, pgliteDb, type Db } from "../store/db";
import { migrate, migrationsDigest } from "../store/migrate";
import { keptCluster } from "../store/pglite-cluster";

/** The PostgreSQL server tests use (trust auth on this machine and in CI). */
export const TEST_PG_ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

/** A fresh database for one test file, and how to drop it. */
export type TestDb = { kind: "pg" | "pglite"; db: Db; url?: string; drop(): Promise<void> };

/**
 * Creates a new PostgreSQL database with a random name, empty or a copy of `template`; `drop()` closes and removes it.
 */
export async function createTestPgDb(template?: string): Promise<TestDb> {
  const name = `vrai_test_${crypto.randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  await admin.query(template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template}`);
  await admin.end();
  const url = TEST_PG_ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  const db = createPgDb(url);
  return {
    kind: "pg",
    db,
    url,
    async drop() {
      await db.close();
      const a = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

/** The files of a new, empty cluster, read once per process (`src/store/pglite-cluster.ts`: initdb takes 5 s, unpacking 1 s). */
let emptyClusterTar: Promise<Blob> | undefined;
const emptyClusterDump = () => (emptyClusterTar ??= keptCluster().then(({ tar }) => tar));

/**
 * PGlite instances given back (`drop()` or `close()`), emptied, for the next test database of this process: starting
 * one costs about 1.2 s of CPU (the cluster unpacked and PostgreSQL started inside WebAssembly), emptying one a few
 * milliseconds. There are as many as test databases were open at once.
 */
const emptied: PGlite[] = [];

/**
 * Empties `lite` as a new cluster is: the session reset (settings, prepared statements, temporary tables, locks) and the
 * public schema made again, without anything a test or the migrations put in it (the store keeps all of its tables,
 * functions and sequences there). False, and `lite` closed, if that fails (a transaction left open, say).
 */
async function empty(lite: PGlite): Promise<boolean> {
  if (lite.closed) return false;
  try {
    await lite.exec("DISCARD ALL");
    await lite.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    return true;
  } catch {
    await lite.close().catch(() => undefined);
    return false;
  }
}

/**
 * A PGlite database in memory, as empty as `createPgliteDb("memory://")`'s. It may run on an instance an earlier test
 * database of this process gave back, emptied; once given back (`drop()`, or `close()` by the code under test) it
 * refuses every query, as a closed PGlite does, so nothing late of one test reaches the next one's database.
 */
export async function createTestPgliteDb(): Promise<TestDb> {
  const lite = emptied.pop() ?? (await PGlite.create({ loadDataDir: await emptyClusterDump() }));
  const db = pgliteDb(lite);
  let givenBack: Promise<void> | undefined;
  const giveBack = () =>
    (givenBack ??= empty(lite).then((kept) => {
      if (kept) emptied.push(lite);
    }));
  const refused = () => Promise.reject(new Error("the test database was dropped (PGlite is closed)"));
  const lease: Db = {
    kind: "pglite",
    query: (sql, params) => (givenBack ? refused() : db.query(sql, params)),
    transaction: (fn) => (givenBack ? refused() : db.transaction(fn)),
    close: giveBack,
  };
  return { kind: "pglite", db: lease, drop: giveBack };
}

/**
 * Both SQL stores the service supports, for tests that must pass on each; with TEST_STORES set, those it names
 * (comma-separated; `memory` names none: the services' mutation run, whose rules are the same code on every store).
 */
export const TEST_STORES: ReadonlyArray<{ name: "postgresql" | "pglite"; create: () => Promise<TestDb> }> = (
  [
    { name: "postgresql", create: createTestPgDb },
    { name: "pglite", create: createTestPgliteDb },
  ] as const
).filter(({ name }) => process.env.TEST_STORES === undefined || process.env.TEST_STORES.split(",").includes(name));

/**
 * The migrated PostgreSQL database test databases are copied from: `CREATE DATABASE ... TEMPLATE` takes about 0.1 s,
 * as an empty database does, where applying every migration takes 0.35 s more, for some hundred databases a run. Named
 * by a digest of the migrations and of `migrate.ts`, so a change to either makes another; made once on the machine by
 * the first process that needs it, migrated under a name of its own and renamed into place (of two processes making it
 * at once, one keeps its copy, the other drops its own), then marked a template no one may connect to, so that every
 * copy is of the same schema.
 */
let migratedTemplate: Promise<string> | undefined;
export const pgTemplate = (): Promise<string> => (migratedTemplate ??= makeMigratedTemplate());

async function makeMigratedTemplate(): Promise<string> {
  const digest = crypto.createHash("sha256").update(migrationsDigest());
  digest.update(fs.readFileSync(path.join(__dirname, "../store/migrate.ts")));
  const name = `vrai_template_${digest.digest("hex").slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  try {
    if ((await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount === 1) return name;
    const made = await createTestPgDb();
    await migrate(made.db);
    await made.db.close();
    const own = made.url?.split("/").pop() as string;
    try {
      await admin.query(`ALTER DATABASE ${own} RENAME TO ${name}`);
      await admin.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
    } catch (error) {
      await admin.query(`DROP DATABASE IF EXISTS ${own} WITH (FORCE)`);
      // 42P04 duplicate_database: another process renamed its copy into place first.
      if ((error as { code?: string }).code !== "42P04") throw error;
    }
    return name;
  } finally {
    await admin.end();
  }
}

/**
 * `create()` (a new PostgreSQL database by default) with every migration applied: a PostgreSQL one is a copy of the
 * migrated template (`pgTemplate`), on which `migrate` finds nothing left to apply.
 */
export async function createMigratedTestDb(create: () => Promise<TestDb> = createTestPgDb): Promise<TestDb> {
  const testDb = create === createTestPgDb ? await createTestPgDb(await pgTemplate()) : await create();
  await migrate(testDb.db);
  return testDb;
}

/** One kind of object of a schema, as rows to compare. */
type SchemaRows = Array<Record<string, unknown>>;

/**
 * Every column, constraint, index and function of the public schema, and the migrations applied: what a schema is, to
 * compare two databases' (a copy of the template and a new one migrated; a new PGlite store and one migrated in place).
 */
export async function schemaOf(db: Db): Promise<Record<"columns" | "constraints" | "indexes" | "functions" | "migrations", SchemaRows>> {
  const q = async (sql: string) => (await db.query<Record<string, unknown>>(sql)).rows;
  return {
    columns: await q(
      `SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns
       WHERE table_schema = 'public' ORDER BY table_name, column_name`,
    ),
    constraints: await q(
      `SELECT conrelid::regclass::text AS on, conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
       WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2`,
    ),
    indexes: await q("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1, 2"),
    functions: await q(
      `SELECT proname, pg_get_functiondef(oid) AS def FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1, 2`,
    ),
    migrations: await q("SELECT version, name FROM schema_migrations ORDER BY version"),
  };
}
