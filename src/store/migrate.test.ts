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

describe("a score's agent, checked a statement at a time (migration 023, issue #30)", () => {
  const SCORE = `INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total)
    SELECT id, '0.2', 86400, 'daily', '1970-01-02', '{}', repeat('0', 64), '{}', 0 FROM unnest($1::text[]) AS u (id)`;
  for (const store of TEST_STORES) {
    const refusals = "refuses a score of an agent not in agents, a score's agent changed, and an agent with scores deleted";
    it(`${refusals}; each changes nothing (${store.name})`, async () => {
      const testDb = await createMigratedTestDb(store.create);
      const db = testDb.db;
      const failure = (sql: string, params: unknown[] = []) =>
        db.query(sql, params).then(
          () => expect.fail(`${sql} succeeded`),
          (error: { code?: string; message: string }) => error,
        );
      const count = async (table: string) => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
      try {
        expect(
          (await db.query("SELECT 1 FROM pg_constraint WHERE contype = 'f' AND conrelid = 'scores'::regclass")).rows,
          "no row-by-row foreign key left on scores",
        ).to.deep.equal([]);
        await db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('ow_1', 'h', 0)");
        await db.query(
          `INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at)
           VALUES ('agt_a', 'ow_1', 1, 0, 'k', 0), ('agt_b', 'ow_1', 2, 0, 'k', 0)`,
        );
        await db.query(SCORE, [["agt_a", "agt_b"]]);
        expect(await count("scores")).to.equal(2);

        // One unknown agent among known ones: the whole statement fails, as the foreign key failed it.
        const unknown = await failure(SCORE.replace("'1970-01-02'", "'1970-01-03'"), [["agt_a", "agt_nope", "agt_b"]]);
        expect(unknown.code).to.equal("23503");
        expect(unknown.message).to.include('agent "agt_nope" is not in table "agents"');
        expect(await count("scores")).to.equal(2);

        const moved = await failure("UPDATE scores SET agent_id = 'agt_b' WHERE agent_id = 'agt_a'");
        expect(moved.code).to.equal("23503");
        expect((await db.query("SELECT agent_id FROM scores ORDER BY id")).rows).to.deep.equal([
          { agent_id: "agt_a" },
          { agent_id: "agt_b" },
        ]);
        // An update that leaves agent_id as it is, or does not set it, is a score's ordinary change.
        await db.query("UPDATE scores SET agent_id = agent_id, total = 5 WHERE agent_id = 'agt_a'");
        expect((await db.query("SELECT total FROM scores WHERE agent_id = 'agt_a'")).rows).to.deep.equal([{ total: 5 }]);

        for (const sql of ["DELETE FROM agents WHERE id = 'agt_b'", "TRUNCATE agents CASCADE"]) {
          const refused = await failure(sql);
          expect(refused.code, sql).to.equal("23503");
          expect(refused.message, sql).to.match(/agent "agt_[ab]" has scores/);
        }
        // An agent without scores may go, as the key let it.
        await db.query(
          "INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at) VALUES ('agt_c', 'ow_1', 3, 0, 'k', 0)",
        );
        await db.query("DELETE FROM agents WHERE id = 'agt_c'");
        expect(await count("agents")).to.equal(2);
        expect(await count("scores")).to.equal(2);
      } finally {
        await testDb.drop();
      }
    });
  }
});
