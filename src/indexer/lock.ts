/**
 * One active indexer per chain: a session-level PostgreSQL advisory lock held on a dedicated connection. A second
 * instance polls until it gets the lock (a standby); when the first dies, its connection closes, PostgreSQL frees
 * the lock and the standby takes over.
 */
import type { Logger } from "pino";
import { createPgClient } from "../store/db";
import { IndexerLockLostError } from "./errors";

// Lock class of the two-key advisory lock; the second key is the chain id. Distinct from the migration lock.
const INDEXER_LOCK_CLASS = 72_640_002;

export type HeldLock = {
  /** Settles when the lock's connection is lost: this instance must stop writing. */
  lost: Promise<IndexerLockLostError>;
  release(): Promise<void>;
};

/**
 * Waits (polling every `pollMs`) until this process holds the indexer lock of `chainId`, or `signal` aborts (null).
 * @example const lock = await acquireIndexerLock({ databaseUrl, chainId: 31337, logger, signal });
 */
export async function acquireIndexerLock(options: {
  databaseUrl: string;
  chainId: number;
  logger: Logger;
  signal: AbortSignal;
  pollMs?: number;
}): Promise<HeldLock | null> {
  // With a multi-host URL, on the primary: a lock taken on a standby would lock nothing.
  const client = createPgClient(options.databaseUrl, { application_name: `vrai-indexer-${options.chainId}` });
  let onLost: (error: IndexerLockLostError) => void = () => {};
  const lost = new Promise<IndexerLockLostError>((resolve) => (onLost = resolve));
  let released = false;
  client.on("error", (error) => onLost(new IndexerLockLostError(`indexer lock connection failed: ${error.message}`, { cause: error })));
  client.on("end", () => {
    if (!released) onLost(new IndexerLockLostError("indexer lock connection closed"));
  });
  await client.connect();
  let waiting = false;
  while (!options.signal.aborted) {
    const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1, $2) AS locked", [
      INDEXER_LOCK_CLASS,
      options.chainId,
    ]);
    if (rows[0].locked) {
      options.logger.info({ chainId: options.chainId }, "indexer lock acquired: this instance is active");
      return {
        lost,
        async release() {
          released = true;
          await client.end().catch(() => undefined);
        },
      };
    }
    if (!waiting) options.logger.info({ chainId: options.chainId }, "another indexer holds the lock: standing by");
    waiting = true;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 1_000));
  }
  released = true;
  await client.end().catch(() => undefined);
  return null;
}
