import { expect } from "chai";
import { listMigrations, splitStatements } from "./migrate";

describe("migration statements", () => {
  it("splits at semicolons that end a line, leaving out comment lines", () => {
    expect(splitStatements("-- a table\nCREATE TABLE a (x int);\n\nINSERT INTO a VALUES (1);\n-- the end\n")).to.deep.equal([
      "CREATE TABLE a (x int)", "INSERT INTO a VALUES (1)",
    ]);
  });

  it("keeps a dollar-quoted function body, with its own semicolons and comment lines, in one statement", () => {
    const sql = "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  -- why\n  PERFORM 1;\n  RETURN NULL;\nEND\n$$;\nCREATE TRIGGER t AFTER INSERT ON a\n  FOR EACH STATEMENT EXECUTE FUNCTION f();\n";
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
