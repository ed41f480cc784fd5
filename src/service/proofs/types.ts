/**
 * Shapes shared by the proof verifiers: the evidence a user submits (zod schemas, reusable by the
 * route handler), the verified proof the store keeps for re-checks, and the re-check outcome.
 */
import { z } from 'zod';
import type { Address, PublicClient } from 'viem';
import type { Challenge } from './challenge';
import type { Fetch } from './http';
import type { ResolveAddresses } from './outbound';
import type { Sleep } from '../../retry';
import type { RetryPolicy } from './errors';
import type { ProofKind } from './subjects';

const hexSignature = z.string().regex(/^0x(?:[0-9a-fA-F]{2})+$/, 'a 0x-prefixed hex signature');
const signatureType = z.enum(['eip191', 'eip712']);

/** Evidence of each kind. Extra fields are refused so a typo is not silently ignored. */
export const EVIDENCE_SCHEMAS = {
  wallet: z.strictObject({
    address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 20-byte hex address'),
    signature: hexSignature,
    signatureType,
  }),
  github: z.strictObject({
    username: z.string().min(1).max(39),
    /** Gist ids are hex (older ones decimal). */
    gistId: z.string().regex(/^[0-9a-fA-F]{1,64}$/, 'a gist id (hex digits)'),
  }),
  domain: z.strictObject({
    domain: z.string().min(1).max(260),
    /** Which publication to read; when absent the DNS record is tried first, then the well-known file. */
    method: z.enum(['dns', 'well-known']).optional(),
  }),
  erc8004: z.strictObject({
    chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    registry: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 20-byte hex address'),
    /** uint256 as a decimal string (or a safe integer). */
    agentId: z.union([z.string().regex(/^(0|[1-9][0-9]{0,77})$/), z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)]),
    signature: hexSignature,
    signatureType,
  }),
} as const;

export type WalletEvidence = z.infer<typeof EVIDENCE_SCHEMAS.wallet>;
export type GithubEvidence = z.infer<typeof EVIDENCE_SCHEMAS.github>;
export type DomainEvidence = z.infer<typeof EVIDENCE_SCHEMAS.domain>;
export type Erc8004Evidence = z.infer<typeof EVIDENCE_SCHEMAS.erc8004>;

/**
 * What a verification proved, JSON-serialisable: the store keeps it and hands it back to `recheck`.
 * `subject` is the canonical subject of the challenge.
 */
export type VerifiedProof =
  | { kind: 'wallet'; subject: Address; address: Address }
  | { kind: 'github'; subject: string; username: string; gistId: string; token: string }
  | { kind: 'domain'; subject: string; domain: string; via: 'dns' | 'well-known'; token: string }
  | { kind: 'erc8004'; subject: string; chainId: number; registry: Address; agentId: string; owner: Address };

/** A successful initial verification. */
export type Verified = {
  type: 'verified';
  kind: ProofKind;
  /**
   * The key the store keeps unique: across agents for domain and erc8004 (V6: bound to one agent),
   * per owner for github and wallet. `domain:<name>`, `erc8004:<chainId>:<registry>:<agentId>`,
   * `github:<login>`, `wallet:<address>`, all lowercase.
   */
  binding: string;
  proof: VerifiedProof;
};

/**
 * Result of a scheduled re-check. `failed` counts as one failed check (V6) whatever its reason:
 * `unreachable` when the source could not be reached after the retries, `rejected` when it answered
 * and the proof no longer holds (`code` is then the `proof_*` error code).
 */
export type RecheckOutcome =
  | { type: 'ok' }
  | { type: 'failed'; reason: 'unreachable' | 'rejected'; code: string; message: string }
  /** erc8004 only: the token is now owned by `newOwner`; V6 removes the proof at once. */
  | { type: 'moved'; newOwner: Address };

export type ProofVerifierDeps = {
  /** The clock, in unix seconds. */
  now: () => number;
  /** GitHub REST API base; default `https://api.github.com`. */
  githubApiBaseUrl?: string;
  /** Where a truncated gist file's `raw_url` must point; default `https://gist.githubusercontent.com/`. */
  githubRawBaseUrl?: string;
  /** Optional GitHub token (raises the API rate limit from 60 to 5,000 requests an hour). */
  githubToken?: string;
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

/** The dependencies with their defaults applied, as the kind verifiers see them (`fetch` built on the outbound policy). */
export type ResolvedDeps = Required<Omit<ProofVerifierDeps, 'githubToken' | 'walletChainId' | 'resolveAddresses' | 'allowLoopbackLiteralsForTests'>> &
  Pick<ProofVerifierDeps, 'githubToken' | 'walletChainId'> & { fetch: Fetch };

/** One kind's verification and re-check; errors are thrown (InvalidInputError / ProofSourceUnreachableError). */
export type KindVerifier<Evidence, Proof extends VerifiedProof> = {
  /** `deadline` aborts when the submission's time is up: the reads and the waits between tries stop. */
  verify(challenge: Challenge, evidence: Evidence, deadline: AbortSignal): Promise<Proof>;
  /** Resolves when the proof still holds, or to `moved`; throws like `verify` otherwise. */
  recheck(proof: Proof): Promise<{ type: 'ok' } | { type: 'moved'; newOwner: Address }>;
};
