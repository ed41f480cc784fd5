/**
 * Errors of the identity-proof verifiers (V6). Bad evidence is an `InvalidInputError` with a stable
 * `proof_*` code: 400 when the evidence breaks its documented shape, 422 when it is well formed but
 * does not prove what it claims. A source that cannot be reached is not the user's fault: it is a
 * retryable `ProofSourceUnreachableError` (503).
 */
import { BaseError, InvalidInputError } from "../../errors";
import type { RetryOptions, Sleep } from "../../retry";

/** Stable codes of the proof errors, with the HTTP status each one maps to. */
export const PROOF_ERROR_STATUS = {
  /** The evidence does not have the shape of its kind (zod). */
  proof_evidence_invalid: 400,
  /** The subject given to `createChallenge` is not a valid address / username / domain / token. */
  proof_subject_invalid: 400,
  /** A domain or ERC-8004 challenge was asked for without an agent (they bind to one agent, V6). */
  proof_agent_required: 400,
  /** The domain name is not a public DNS hostname (IPs, ports, localhost, bad syntax). */
  proof_domain_invalid: 400,
  /** The challenge expired before the evidence arrived. */
  proof_challenge_expired: 422,
  /** The evidence names another subject than the one the challenge was issued for. */
  proof_subject_mismatch: 422,
  /** The signature is not a valid signature of the challenge by the claimed address. */
  proof_signature_invalid: 422,
  /** The gist does not exist (404). */
  proof_gist_not_found: 422,
  /** The gist is secret: only public gists count. */
  proof_gist_not_public: 422,
  /** The gist belongs to another GitHub user. */
  proof_gist_owner_mismatch: 422,
  /** The source (gist, TXT record, well-known file) was read but does not contain the challenge. */
  proof_challenge_missing: 422,
  /** No TXT record exists at `_vrai.<domain>` (NXDOMAIN / no data). */
  proof_dns_record_not_found: 422,
  /** `/.well-known/vrai.json` (or `agent-registration.json`) is missing, not JSON of the documented shape, or too large. */
  proof_well_known_invalid: 422,
  /** The domain's `/.well-known/agent-registration.json` lists no registrations entry of the agent's ERC-8004 identity. */
  proof_registration_missing: 422,
  /** The endpoint-domain verification was asked for an agent without an active ERC-8004 proof (or no longer with the one it named). */
  proof_erc8004_required: 422,
  /**
   * The source's host is, or resolves to, an address that is not public (loopback, private,
   * link-local, CGNAT, ...): nothing was connected to (outbound.ts).
   */
  proof_forbidden_address: 422,
  /** A response of a source broke the shape or host rules (e.g. a `raw_url` off the raw host). */
  proof_source_invalid: 422,
  /** No chain client is configured for the chain id of the evidence. */
  proof_chain_unsupported: 422,
  /** The registry address holds no contract, or it does not answer `ownerOf`. */
  proof_registry_invalid: 422,
  /** `ownerOf(agentId)` reverts: the token does not exist (never minted or burned). */
  proof_token_not_found: 422,
  /** The signature is not by the wallet that owns the token. */
  proof_token_not_owned: 422,
} as const;

/** A stable code of a proof `InvalidInputError`. */
export type ProofErrorCode = keyof typeof PROOF_ERROR_STATUS;

/** The `InvalidInputError` for `code`, with its documented status. */
export function proofError(code: ProofErrorCode, message: string, cause?: unknown): InvalidInputError {
  return new InvalidInputError(code, message, { status: PROOF_ERROR_STATUS[code], cause });
}

/** A proof source (GitHub, DNS, a web server, an RPC node) could not be reached or answered 5xx / timed out. */
export class ProofSourceUnreachableError extends BaseError {
  /** How many attempts were made before giving up (set by `unreachableRetry`). */
  readonly attempts: number;

  constructor(message: string, options: { cause?: unknown; attempts?: number } = {}) {
    super("proof_source_unreachable", message, { status: 503, retryable: true, cause: options.cause });
    this.attempts = options.attempts ?? 1;
  }
}

/** How an unreachable source is retried (V6). */
export type RetryPolicy = {
  /** Total attempts, the first included. V6: 3. */
  tries: number;
  /** Delay before the second attempt; each later delay doubles (base, 2·base, 4·base, ...). */
  baseDelayMs: number;
};

/** V6: 3 tries; 1 s then 2 s between them. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { tries: 3, baseDelayMs: 1_000 };

/**
 * The `retry` options of a proof check. V6: "A check that cannot reach its source is retried (3 tries,
 * backing off); if all fail, it counts as a failed check." Only `ProofSourceUnreachableError` is retried:
 * a definitive answer (404, content missing, bad signature) is final at the first try. After the last try
 * the unreachable error is thrown again with `attempts` set. `signal` (a submission's deadline) ends the retries.
 * @example
 * const gist = await retry(() => fetchGist(id), unreachableRetry({ retry: DEFAULT_RETRY_POLICY, sleep: realSleep }));
 */
export function unreachableRetry(deps: { retry: RetryPolicy; sleep: Sleep }, signal?: AbortSignal): RetryOptions {
  return {
    signal,
    attempts: Math.floor(deps.retry.tries),
    baseDelayMs: deps.retry.baseDelayMs,
    retryable: (error) => error instanceof ProofSourceUnreachableError,
    giveUp: (error, attempts) =>
      error instanceof ProofSourceUnreachableError
        ? new ProofSourceUnreachableError(`${error.message} (gave up after ${attempts} attempts)`, { cause: error, attempts })
        : error,
    sleep: deps.sleep,
  };
}
