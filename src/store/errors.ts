/** Store errors (STYLE.md): what a driver's failure means to the rest of the system. */
import { BaseError } from "../errors";

/**
 * How long a client should wait after a 503 for an unavailable database: pg_auto_failover promotes the
 * standby within about 10 s of losing the primary (issue #18), and a restart takes a few seconds.
 */
export const DATABASE_RETRY_AFTER_S = 5;

/**
 * PostgreSQL cannot be reached or cannot take writes now (restarting, failing over, no primary among
 * the hosts): retryable, HTTP 503 with Retry-After. What was being written may or may not have been
 * committed; nothing was acknowledged, and a retry with the same Idempotency-Key finds out (V3.1).
 */
export class DatabaseUnavailableError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("database_unavailable", message, { status: 503, retryable: true, retryAfterS: DATABASE_RETRY_AFTER_S, cause: options.cause });
  }
}

/**
 * PostgreSQL rolled back a statement or transaction because it conflicted with another (a deadlock it broke, or a
 * serializable transaction that could not be ordered): nothing of it was written, and the same request again
 * normally goes through; retryable, HTTP 503 with Retry-After.
 */
export class DatabaseConflictError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("database_conflict", message, { status: 503, retryable: true, retryAfterS: 1, cause: options.cause });
  }
}

/** SQLSTATEs of such a rollback: serialization_failure 40001, deadlock_detected 40P01. */
const CONFLICT_SQLSTATE = new Set(["40001", "40P01"]);

/**
 * SQLSTATEs of a server that is going away or cannot serve this connection now: connection exceptions
 * (class 08), admin_shutdown 57P01 (a fast shutdown, as a demotion does), crash_shutdown 57P02,
 * cannot_connect_now 57P03 (starting up, in recovery), read_only_sql_transaction 25006 (a standby).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|25006)$/;
/** Socket errors of a lost or refused connection. */
const UNAVAILABLE_SOCKET = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
/** node-postgres's own errors for a connection that ended, timed out or broke (they carry no code). */
const UNAVAILABLE_DRIVER_MESSAGE =
  /^(Connection terminated|timeout expired|Client has encountered a connection error and is not queryable)/;

/** Whether `error` says the database is unreachable or cannot write now, rather than that a statement is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (!(error instanceof Error) || error instanceof BaseError) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_SOCKET.has(code))) return true;
  return code === undefined && UNAVAILABLE_DRIVER_MESSAGE.test(error.message);
}

/**
 * `error` as the store's callers should see it: an unavailable database as DatabaseUnavailableError, a write rolled
 * back for a conflict as DatabaseConflictError, anything else unchanged.
 */
export function storeError(error: unknown): unknown {
  if (error instanceof Error && !(error instanceof BaseError) && CONFLICT_SQLSTATE.has((error as { code?: unknown }).code as string))
    return new DatabaseConflictError(`the database rolled back a conflicting write: ${error.message}`, { cause: error });
  if (error instanceof DatabaseUnavailableError || !isDatabaseUnavailable(error)) return error;
  return new DatabaseUnavailableError(`the database is unavailable: ${(error as Error).message}`, { cause: error });
}
