import { expect } from "chai";
import pg from "pg";
import { migrate } from "../store/migrate";
import { createMigratedTestDb, createTestPgDb, pgTemplate, TEST_PG_ADMIN_URL, type TestDb } from "./db";

/** Every column, constraint, index and function of the public schema, and the migrations applied: what a schema is. */
async function schemaOf(testDb: TestDb): Promise<unknown> {
  const q = async (sql: string) => (await testDb.db.query(sql)).rows;
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

describe("test databases: a migrated PostgreSQL one is a copy of the migrated template", () => {
  it("has the schema every migration gives a new database, with nothing left to apply, and its own data", async () => {
    const copies = [await createMigratedTestDb(), await createMigratedTestDb()];
    const fresh = await createTestPgDb();
    const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
    await admin.connect();
    try {
      const { rows } = await admin.query("SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1", [await pgTemplate()]);
      // A template no one may connect to: nothing can change what the copies start from.
      expect(rows).to.deep.equal([{ datistemplate: true, datallowconn: false }]);
      expect(await migrate(fresh.db)).to.have.length.greaterThan(10);
      expect(await migrate(copies[0].db), "nothing left to apply").to.deep.equal([]);
      const expected = await schemaOf(fresh);
      for (const copy of copies) expect(await schemaOf(copy)).to.deep.equal(expected);
      // Two databases, not one: what one stores the other does not see.
      await copies[0].db.query("INSERT INTO schema_migrations (version, name) VALUES (999, 'only_here.sql')");
      expect((await copies[1].db.query("SELECT 1 FROM schema_migrations WHERE version = 999")).rowCount).to.equal(0);
    } finally {
      await admin.end();
      for (const testDb of [...copies, fresh]) await testDb.drop();
    }
  });
});
