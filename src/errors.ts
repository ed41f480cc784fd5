/**
 * One error tree for the whole project (STYLE.md): every error has a stable `code`,
 * the HTTP `status` the API answers with, and an optional `cause` chain.
 */
export class BaseError extends Error {
  /** Stable machine-readable code, e.g. `checkin_refused`. */
  readonly code: string;
  /** HTTP status the API maps this error to. */
  readonly status: number;
  /** Whether retrying the same operation later may succeed (used by the indexer and schedulers). */
  readonly retryable: boolean;
  /** Seconds after which a retry may succeed, when known: the API sends it as `Retry-After`. */
  readonly retryAfterS: number | undefined;

  constructor(
    code: string,
    message: string,
    options: { status?: number; cause?: unknown; retryable?: boolean; retryAfterS?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = options.status ?? 500;
    this.retryable = options.retryable ?? false;
    this.retryAfterS = options.retryAfterS;
  }
}

/** Input that breaks a documented shape or rule: HTTP 400, CLI exit 2. */
export class InvalidInputError extends BaseError {
  constructor(code: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(code, message, { status: options.status ?? 400, cause: options.cause });
  }
}
