/** The two shapes of read every repository makes: one row or none, and every row, each mapped from its record. */
import type { Queryable } from "./db";

/** The first row of `sql`, mapped, or null when there is none. */
export async function one<R, T>(q: Queryable, sql: string, params: unknown[], map: (record: R) => T): Promise<T | null> {
  const { rows } = await q.query<R>(sql, params);
  return rows.length === 0 ? null : map(rows[0]);
}

/** Every row of `sql`, mapped. */
export async function many<R, T>(q: Queryable, sql: string, params: unknown[], map: (record: R) => T): Promise<T[]> {
  return (await q.query<R>(sql, params)).rows.map(map);
}

/** A `count(*)::int AS n` query's count. */
export async function count(q: Queryable, sql: string, params: unknown[]): Promise<number> {
  return (await q.query<{ n: number }>(sql, params)).rows[0].n;
}
