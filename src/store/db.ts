import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";

/** Anything that runs one parameterised SQL statement. */
export type Queryable = {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<{ rows: Row[]; rowCount: number }>;
};

/** A database: PostgreSQL through `pg`, or the embedded PGlite; the same SQL serves both. */
export type Db = Queryable & {
  readonly kind: "pg" | "pglite";
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
};

// int8 (OID 20) and numeric (OID 1700) as JS numbers: every bigint column here holds Unix seconds or counts
// well inside Number.MAX_SAFE_INTEGER. PGlite already returns numbers.
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/** Opens a PostgreSQL pool on `connectionString`. */
export function createPgDb(connectionString: string, options: { max?: number } = {}): Db {
  const pool = new pg.Pool({ connectionString, max: options.max ?? 20, types: pgTypes as pg.CustomTypesConfig });
  pool.on("error", () => {
    // An idle client lost its connection; the pool replaces it. Queries in flight get their own error.
  });
  const run = async (q: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]) => {
    const result = await q.query(sql, params as unknown[]);
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  };
  return {
    kind: "pg",
    query: (sql, params) => run(pool, sql, params) as never,
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn({ query: (sql, params) => run(client, sql, params) as never });
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** Opens the embedded PGlite store; `dataDir` of `memory://` keeps everything in memory. */
export async function createPgliteDb(dataDir: string): Promise<Db> {
  if (!dataDir.startsWith("memory://")) fs.mkdirSync(path.resolve(dataDir), { recursive: true });
  const lite = await PGlite.create(dataDir.startsWith("memory://") ? undefined : path.resolve(dataDir));
  const wrap = (q: Pick<PGlite, "query">): Queryable => ({
    async query(sql, params) {
      const result = await q.query(sql, params as unknown[]);
      return { rows: result.rows as never[], rowCount: result.affectedRows ?? result.rows.length };
    },
  });
  return {
    kind: "pglite",
    ...wrap(lite),
    // PGlite has one connection and runs one transaction at a time, which serialises agents trivially.
    transaction: (fn) => lite.transaction((tx) => fn(wrap(tx))),
    close: () => lite.close(),
  };
}

/** Opens PostgreSQL when `databaseUrl` is set, else PGlite in `dataDir`. */
export async function openDb(options: { databaseUrl?: string; dataDir: string }): Promise<Db> {
  return options.databaseUrl ? createPgDb(options.databaseUrl) : createPgliteDb(options.dataDir);
}
