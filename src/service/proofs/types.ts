/**
 * Shapes shared by the proof verifiers: their dependencies, one kind's verifier, and the re-check
 * outcome. Each kind's evidence and proof are in its module (`./kinds`).
 */
import type { Address, PublicClient } from "viem";
import type { Challenge } from "./challenge";
import type { Erc8004Identity } from "./erc8004-identity";
import type { Fetch } from "./http";
import type { ResolveAddresses } from "./outbound";
import type { Sleep } from "../../retry";
import type { RetryPolicy } from "./errors";

/**
 * Result of a scheduled re-check. `failed` counts as one failed check (V6) whatever its reason:
 * `unreachable` when the source could not be reached after the retries, `rejected` when it answered
 * and the proof no longer holds (`code` is then the `proof_*` error code).
 */
export type RecheckOutcome =
  | { type: "ok" }
  | { type: "failed"; reason: "unreachable" | "rejected"; code: string; message: string }
  /** erc8004 only: the token is now owned by `newOwner`; V6 removes the proof at once. */
  | { type: "moved"; newOwner: Address };

export type ProofVerifierDeps = {
  /** The clock, in unix seconds. */
  now: () => number;
  /** The configuration's values (environment variables by name): each kind reads and checks its own (`ProofKindModule.settings`). */
  settings?: Readonly<Record<string, unknown>>;
  /**
   * Every address of a host the verifiers connect to over HTTP(S); a connection is made only when all
   * of them are public (outbound.ts). Default: the system resolver (`resolveWithSystemDns`).
   */
  resolveAddresses?: ResolveAddresses;
  /**
   * TESTS ONLY (never set by src/app): also connect to `http://127.0.0.1:<port>`-style URLs, where
   * the tests' servers listen. Names resolving to loopback stay refused. See `OutboundPolicy`.
   */
  allowLoopbackLiteralsForTests?: boolean;
  /** TXT lookup; default `dns.promises.resolveTxt` (each record as its character-strings). */
  resolveTxt?: (hostname: string) => Promise<string[][]>;
  /** URL of a domain's well-known file; default `https://<domain>/.well-known/vrai.json`. */
  wellKnownUrl?: (domain: string) => string;
  /** URL of a domain's ERC-8004 endpoint-domain file; default `https://<domain>/.well-known/agent-registration.json`. */
  agentRegistrationUrl?: (domain: string) => string;
  /** Where an `https://` agentURI (an ERC-8004 registration file) is read; default the URI itself (tests: their server on loopback). */
  registrationFileUrl?: (uri: string) => string;
  /** The viem client of a chain, or undefined when that chain is not configured. */
  publicClientFor?: (chainId: number) => PublicClient | undefined;
  /** Chain on which wallet proofs check ERC-1271 contract wallets; without it only EOAs are accepted. */
  walletChainId?: number;
  /** Default: real timers. */
  sleep?: Sleep;
  /** V6 default: 3 tries, 1 s base delay. */
  retry?: RetryPolicy;
  /** Whole HTTP request (connect, headers, body), per try; default `DEFAULT_HTTP_TIMEOUT_MS`. */
  httpTimeoutMs?: number;
  /**
   * The whole verification of a submitted proof, every try and wait included; default
   * `DEFAULT_SUBMISSION_TIMEOUT_MS`. A source that has not answered by then is unreachable (503).
   * Scheduled re-checks have no such deadline: they run in the background, `httpTimeoutMs` per try.
   */
  submissionTimeoutMs?: number;
};

/** Default `httpTimeoutMs`: 3 s per try. */
export const DEFAULT_HTTP_TIMEOUT_MS = 3_000;
/** Default `submissionTimeoutMs`: 6 s for all tries of a submission (issue #15: a submission cannot hold a request long). */
export const DEFAULT_SUBMISSION_TIMEOUT_MS = 6_000;

/** The dependencies every kind shares. */
type SharedDeps = "now" | "publicClientFor" | "sleep" | "retry" | "httpTimeoutMs" | "submissionTimeoutMs";

/**
 * The dependencies as a kind's verifier sees them: the shared ones with their defaults applied (`fetch`
 * built on the outbound policy), each kind's own as given (its module applies its defaults).
 */
export type ResolvedDeps = Required<Pick<ProofVerifierDeps, SharedDeps>> &
  Omit<ProofVerifierDeps, SharedDeps | "settings" | "resolveAddresses" | "allowLoopbackLiteralsForTests"> & { fetch: Fetch };

/**
 * What the service knows of a proof's agent when a proof is asked for, verified or re-checked: the ERC-8004 identities
 * of its active erc8004 proofs, latest first (none for an owner-level proof). A domain proven by the standard's
 * endpoint-domain verification names one of them.
 */
export type ProofContext = { erc8004: readonly Erc8004Identity[] };

/** The context of a proof whose agent holds no ERC-8004 identity (or of an owner-level proof). */
export const NO_PROOF_CONTEXT: ProofContext = { erc8004: [] };

/** One kind's verification and re-check; errors are thrown (InvalidInputError / ProofSourceUnreachableError). */
export type KindVerifier<Evidence, Proof> = {
  /** `deadline` aborts when the submission's time is up: the reads and the waits between tries stop. */
  verify(challenge: Challenge, evidence: Evidence, deadline: AbortSignal, context: ProofContext): Promise<Proof>;
  /** Resolves when the proof still holds, or to `moved`; throws like `verify` otherwise. */
  recheck(proof: Proof, context: ProofContext): Promise<{ type: "ok" } | { type: "moved"; newOwner: Address }>;
};
