import { expect } from "chai";
import pg from "pg";
import { migrate } from "../store/migrate";
import { createMigratedTestDb, createTestPgDb, pgTemplate, schemaOf, TEST_PG_ADMIN_URL } from "./db";

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
      const expected = await schemaOf(fresh.db);
      for (const copy of copies) expect(await schemaOf(copy.db)).to.deep.equal(expected);
      // Two databases, not one: what one stores the other does not see.
      await copies[0].db.query("INSERT INTO schema_migrations (version, name) VALUES (999, 'only_here.sql')");
      expect((await copies[1].db.query("SELECT 1 FROM schema_migrations WHERE version = 999")).rowCount).to.equal(0);
    } finally {
      await admin.end();
      for (const testDb of [...copies, fresh]) await testDb.drop();
    }
  });
});
