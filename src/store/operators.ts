/**
 * The operator repository: the named operators of migration 007, on PostgreSQL or PGlite. SQL only:
 * the operators service (`service/operators.ts`) makes and checks their tokens.
 */
import type { AuditEntry } from "../service/ports";
import type { Db } from "./db";
import { insertAuditEntry } from "./sql-store";

/** A named operator; `tokenHash` is the SHA-256 of its token (the token itself is never kept). */
export type OperatorRow = { name: string; tokenHash: string; createdAt: number; revokedAt: number | null };

/** The `operators` table. */
export type OperatorRepository = {
  /** The operator of that name, revoked or not; `null` when there is none. */
  get(name: string): Promise<OperatorRow | null>;
  /**
   * Stores a new operator and its audit entry in one transaction; false, storing nothing, when the
   * name is taken (by a revoked operator too).
   */
  insert(operator: OperatorRow, entry: AuditEntry): Promise<boolean>;
  /**
   * Marks the operator revoked at `at` and writes its audit entry in one transaction; false,
   * changing nothing, when it was already revoked.
   */
  revoke(name: string, at: number, entry: AuditEntry): Promise<boolean>;
};

type OperatorDbRow = { name: string; token_hash: string; created_at: number; revoked_at: number | null };

/** The operator repository on `db`. */
export function createOperatorRepository(db: Db): OperatorRepository {
  return {
    async get(name) {
      const { rows } = await db.query<OperatorDbRow>("SELECT name, token_hash, created_at, revoked_at FROM operators WHERE name = $1", [
        name,
      ]);
      const r = rows[0];
      return r === undefined ? null : { name: r.name, tokenHash: r.token_hash, createdAt: r.created_at, revokedAt: r.revoked_at };
    },
    insert: (operator, entry) =>
      db.transaction(async (tx) => {
        const inserted = await tx.query(
          "INSERT INTO operators (name, token_hash, created_at, revoked_at) VALUES ($1, $2, $3, NULL) ON CONFLICT (name) DO NOTHING",
          [operator.name, operator.tokenHash, operator.createdAt],
        );
        if (inserted.rowCount === 0) return false;
        await insertAuditEntry(tx, entry);
        return true;
      }),
    revoke: (name, at, entry) =>
      db.transaction(async (tx) => {
        const revoked = await tx.query("UPDATE operators SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL", [name, at]);
        if (revoked.rowCount === 0) return false;
        await insertAuditEntry(tx, entry);
        return true;
      }),
  };
}
