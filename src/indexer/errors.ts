/** Indexer errors (STYLE.md): the run loop retries `retryable` ones with backoff and stops on the others. */
import { BaseError } from "../errors";

/** The node refused a log query for its size ("too many results", "block range too large"): halve the range. */
export class RpcRangeError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("rpc_range_too_large", message, { status: 503, retryable: true, cause: options.cause });
  }
}

/** The node could not be reached or answered with a transient failure (timeout, connection, 5xx, rate limit). */
export class RpcTransportError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("rpc_unavailable", message, { status: 503, retryable: true, cause: options.cause });
  }
}

/** The chain moved under a range while it was being read (a log's block hash is not the block's hash): read again. */
export class ChainMovedError extends BaseError {
  constructor(message: string) {
    super("chain_moved", message, { status: 503, retryable: true });
  }
}

/** The configuration, deployment file or database does not fit this chain: retrying cannot help. */
export class IndexerConfigError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("indexer_config_invalid", message, { status: 500, retryable: false, cause: options.cause });
  }
}

/** The lock connection was lost: another instance may take over, so this one must stop writing. */
export class IndexerLockLostError extends BaseError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("indexer_lock_lost", message, { status: 503, retryable: false, cause: options.cause });
  }
}
