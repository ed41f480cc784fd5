/**
 * The identity-proof verifier (V6), pure of storage: `verify` checks a user's evidence against the
 * challenge the server issued; `recheck` is what the scheduler runs on a stored proof. Sources are
 * read for real (GitHub API, DNS, HTTPS, chain RPC); those that cannot be reached are retried
 * (3 tries, backing off) before counting as a failed check. HTTP(S) goes to public addresses only
 * (outbound.ts, issue #15), and a submission's checks end at `submissionTimeoutMs`.
 */
import { z } from "zod";
import { BaseError, InvalidInputError } from "../../errors";
import { toRfc3339 } from "../../method";
import { realSleep } from "../../retry";
import { isExpired, type Challenge } from "./challenge";
import { DEFAULT_RETRY_POLICY, proofError, ProofSourceUnreachableError } from "./errors";
import { createOutboundFetch, resolveWithSystemDns } from "./outbound";
import { PROOF_KIND_MODULES, proofKindModule, settingsOf, type VerifiedProof } from "./kinds";
import { createRegistrationReader, type ReadRegistrationFile } from "./registration-reader";
import {
  DEFAULT_HTTP_TIMEOUT_MS,
  DEFAULT_SUBMISSION_TIMEOUT_MS,
  NO_PROOF_CONTEXT,
  type KindVerifier,
  type ProofContext,
  type ProofVerifierDeps,
  type RecheckOutcome,
  type ResolvedDeps,
} from "./types";
import type { ProofKind } from "../../method";

export type { VerifiedProof } from "./kinds";

/** A successful initial verification. */
export type Verified = {
  type: "verified";
  kind: ProofKind;
  /** The key the store keeps unique among active proofs (each kind's `binding`: V6, one agent or one owner at a time). */
  binding: string;
  proof: VerifiedProof;
};

export type ProofVerifier = {
  /**
   * Verifies `evidence` (unknown JSON, validated here) for `challenge`. The caller consumes the
   * challenge (single use) and keeps `binding` unique.
   * @param context what the service knows of the challenge's agent (its ERC-8004 identities); none by default
   * @throws InvalidInputError with a `proof_*` code when the evidence does not prove the subject
   * @throws ProofSourceUnreachableError (503, retryable) when the source could not be reached
   */
  verify(challenge: Challenge, evidence: unknown, context?: ProofContext): Promise<Verified>;
  /** Re-checks a stored proof (V6 scheduler) in its agent's `context` now; never throws for a failing proof, only reports it. */
  recheck(proof: VerifiedProof, context?: ProofContext): Promise<RecheckOutcome>;
  /** Reads an ERC-8004 identity's registration file (issue #27) from the sources proofs are read from, under the same guard. */
  readRegistrationFile: ReadRegistrationFile;
};

/**
 * Creates the verifier of all proof kinds.
 * @example
 * const verifier = createProofVerifier({ now: () => Math.floor(Date.now() / 1000), publicClientFor });
 * const { binding, proof } = await verifier.verify(challenge, { domain: 'example.com' });
 */
export function createProofVerifier(deps: ProofVerifierDeps): ProofVerifier {
  const httpTimeoutMs = deps.httpTimeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const { resolveAddresses, allowLoopbackLiteralsForTests, settings, ...given } = deps;
  const resolved: ResolvedDeps = {
    ...given,
    fetch: createOutboundFetch({
      resolve: resolveAddresses ?? resolveWithSystemDns,
      connectTimeoutMs: httpTimeoutMs,
      allowLoopbackLiteralsForTests,
    }),
    publicClientFor: deps.publicClientFor ?? (() => undefined),
    sleep: deps.sleep ?? realSleep,
    retry: deps.retry ?? DEFAULT_RETRY_POLICY,
    httpTimeoutMs,
    submissionTimeoutMs: deps.submissionTimeoutMs ?? DEFAULT_SUBMISSION_TIMEOUT_MS,
  };
  // Each kind's verifier, built once; the dispatch below pairs each with the evidence and proofs of its own kind.
  const kinds = new Map<ProofKind, KindVerifier<unknown, VerifiedProof>>();
  for (const kind of Object.keys(PROOF_KIND_MODULES) as ProofKind[]) {
    const module = proofKindModule(kind);
    kinds.set(kind, module.verifier(resolved, settingsOf(module, settings ?? {})) as KindVerifier<unknown, VerifiedProof>);
  }
  const verifierOf = (kind: ProofKind) => kinds.get(kind) as KindVerifier<unknown, VerifiedProof>;
  const { ERC8004_IPFS_GATEWAY } = z.object(PROOF_KIND_MODULES.erc8004.settings).parse(settings ?? {});

  return {
    readRegistrationFile: createRegistrationReader(resolved, { ipfsGateway: ERC8004_IPFS_GATEWAY }),
    async verify(challenge, evidence, context = NO_PROOF_CONTEXT) {
      if (isExpired(challenge, resolved.now())) {
        throw proofError("proof_challenge_expired", `challenge ${challenge.id} expired at ${toRfc3339(challenge.expiresAt)}`);
      }
      const parsed = proofKindModule(challenge.kind).evidence.safeParse(evidence);
      if (!parsed.success) {
        throw proofError(
          "proof_evidence_invalid",
          `invalid ${challenge.kind} evidence: ${parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ")}`,
          parsed.error,
        );
      }
      const deadline = AbortSignal.timeout(resolved.submissionTimeoutMs);
      let proof: VerifiedProof;
      try {
        proof = await verifierOf(challenge.kind).verify(challenge, parsed.data, deadline, context);
      } catch (error) {
        // The deadline ended a wait between tries: the source was unreachable in the time a submission has.
        if (deadline.aborted && !(error instanceof BaseError)) {
          throw new ProofSourceUnreachableError(
            `the ${challenge.kind} proof's source did not answer within ${resolved.submissionTimeoutMs} ms`,
            { cause: error },
          );
        }
        throw error;
      }
      return { type: "verified", kind: proof.kind, binding: bindingOf(proof), proof };
    },
    async recheck(proof, context = NO_PROOF_CONTEXT) {
      try {
        return await verifierOf(proof.kind).recheck(proof, context);
      } catch (error) {
        if (error instanceof ProofSourceUnreachableError) {
          return { type: "failed", reason: "unreachable", code: error.code, message: error.message };
        }
        if (error instanceof InvalidInputError) return { type: "failed", reason: "rejected", code: error.code, message: error.message };
        // A bug or an unexpected answer: still one failed check, never a crash of the scheduler.
        const code = error instanceof BaseError ? error.code : "proof_recheck_error";
        return { type: "failed", reason: "rejected", code, message: error instanceof Error ? error.message : String(error) };
      }
    },
  };
}

/** The uniqueness key of a proof (see `Verified.binding`). */
export function bindingOf(proof: VerifiedProof): string {
  return proofKindModule(proof.kind).binding(proof);
}
