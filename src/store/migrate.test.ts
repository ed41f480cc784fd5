import { expect } from "chai";
import { createMigratedTestDb, TEST_STORES } from "../test-helpers/db";
import { listMigrations, splitStatements } from "./migrate";

describe("migration statements", () => {
  it("splits at semicolons that end a line, leaving out comment lines", () => {
    expect(splitStatements("-- a table\nCREATE TABLE a (x int);\n\nINSERT INTO a VALUES (1);\n-- the end\n")).to.deep.equal([
      "CREATE TABLE a (x int)",
      "INSERT INTO a VALUES (1)",
    ]);
  });

  it("keeps a dollar-quoted function body, with its own semicolons and comment lines, in one statement", () => {
    const sql =
      "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  -- why\n  PERFORM 1;\n  RETURN NULL;\nEND\n$$;\n" +
      "CREATE TRIGGER t AFTER INSERT ON a\n  FOR EACH STATEMENT EXECUTE FUNCTION f();\n";
    expect(splitStatements(sql)).to.deep.equal([
      "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  -- why\n  PERFORM 1;\n  RETURN NULL;\nEND\n$$",
      "CREATE TRIGGER t AFTER INSERT ON a\n  FOR EACH STATEMENT EXECUTE FUNCTION f()",
    ]);
  });

  it("finds the score notification function of migration 005 as one statement", () => {
    const statements = splitStatements(listMigrations().find((m) => m.version === 5)!.sql);
    expect(statements.filter((s) => s.startsWith("CREATE FUNCTION vrai_notify_scores()"))).to.have.length(1);
    expect(statements.filter((s) => s.startsWith("CREATE TRIGGER"))).to.have.length(4);
    expect(statements.every((s) => !s.endsWith(";"))).to.equal(true);
  });
});

describe("the database and the proof kinds (migration 015, issue #25)", () => {
  for (const store of TEST_STORES) {
    it(`keeps no list of kinds of its own: a challenge and a proof of a kind it never heard of are stored (${store.name})`, async () => {
      const testDb = await createMigratedTestDb(store.create);
      try {
        const { rows } = await testDb.db.query<{ name: string }>(
          "SELECT conname AS name FROM pg_constraint WHERE contype = 'c' AND conrelid IN ('proofs'::regclass, 'proof_challenges'::regclass)",
        );
        expect(rows).to.deep.equal([]);
        await testDb.db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('ow_1', 'h', 0)");
        await testDb.db.query(
          `INSERT INTO proof_challenges (id, kind, owner_id, subject, nonce, token, message, issued_at, expires_at)
           VALUES ('ch_1', 'x-account', 'ow_1', 'someone', 'n', 't', 'm', 0, 1)`,
        );
        await testDb.db.query(
          `INSERT INTO proofs (id, kind, owner_id, subject, binding, evidence, verified_at, last_checked_at)
           VALUES ('pr_1', 'x-account', 'ow_1', 'someone', 'x-account:someone', '{}'::jsonb, 0, 0)`,
        );
        expect((await testDb.db.query<{ kind: string }>("SELECT kind FROM proofs")).rows).to.deep.equal([{ kind: "x-account" }]);
      } finally {
        await testDb.drop();
      }
    });
  }
});
