import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../project-root";
import type { Db } from "./db";

const MIGRATIONS_DIR = path.join(PROJECT_ROOT, "src", "store", "migrations");
// Any constant shared by every instance: concurrent starts apply migrations one at a time.
const MIGRATION_LOCK_KEY = 7_264_000_001;

/** Migration files, `NNN_name.sql`, in order. Append-only: an applied file is never edited. */
export function listMigrations(dir = MIGRATIONS_DIR): Array<{ version: number; name: string; sql: string }> {
  return fs
    .readdirSync(dir)
    .filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: Number(file.slice(0, 3)), name: file, sql: fs.readFileSync(path.join(dir, file), "utf8") }));
}

/** SHA-256 (hex) of the migrations, their names and SQL in order: what names a cluster or database they were applied to. */
export function migrationsDigest(dir = MIGRATIONS_DIR): string {
  const digest = crypto.createHash("sha256");
  for (const { name, sql } of listMigrations(dir)) digest.update(`${name}\0${sql}\0`);
  return digest.digest("hex");
}

/**
 * Applies the migrations not applied yet, in one transaction; returns the names applied.
 * @param options.upTo the last version to apply (tests of a migration start from the schema before it)
 */
export async function migrate(db: Db, options: { upTo?: number } = {}): Promise<string[]> {
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    if (db.kind === "pg") await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY]);
    await tx.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const done = new Set((await tx.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version));
    for (const migration of listMigrations()) {
      if (done.has(migration.version) || migration.version > (options.upTo ?? Infinity)) continue;
      for (const statement of splitStatements(migration.sql)) await tx.query(statement);
      await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [migration.version, migration.name]);
      applied.push(migration.name);
    }
  });
  return applied;
}

/**
 * A migration's statements: split at each `;` that ends a line, except inside a dollar-quoted
 * body (`$$ ... $$`, as in a function), whose own statements end lines too.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  let inBody = false;
  for (const line of sql.split("\n")) {
    if (!inBody && /^\s*--/.test(line)) continue;
    current.push(line);
    if ((line.match(/\$\$/g)?.length ?? 0) % 2 === 1) inBody = !inBody;
    if (!inBody && /;\s*$/.test(line)) {
      statements.push(current.join("\n").replace(/;\s*$/, "").trim());
      current = [];
    }
  }
  statements.push(current.join("\n").trim());
  return statements.filter((s) => s.length > 0);
}
