/**
 * Domain proofs (V6). The owner publishes the challenge token in either place:
 *
 * - DNS: a TXT record at `_vrai.<domain>` whose value (its character-strings joined) is exactly the
 *   token, e.g. `_vrai.example.com. 300 IN TXT "vrai-proof:v1:domain:example.com:3f2a…"`;
 * - HTTPS: `https://<domain>/.well-known/vrai.json`, answered 200 directly (redirects are not
 *   followed) with at most 64 KiB of JSON `{ "vrai": ["<token>", …] }`: an array of token strings,
 *   so several challenges (e.g. of a new owner) can be listed at once. It is read only when every
 *   address of the domain is public (outbound.ts): otherwise `proof_forbidden_address`, unconnected.
 */
import { promises as dns } from 'node:dns';
import { retry } from '../../../retry';
import { proofError, ProofSourceUnreachableError, unreachableRetry } from '../errors';
import { boundedGet, isTransientStatus } from '../http';
import { normalizeDomain } from '../subjects';
import type { DomainEvidence, KindVerifier, ResolvedDeps, VerifiedProof } from '../types';

type DomainProof = Extract<VerifiedProof, { kind: 'domain' }>;

/** Label under which the TXT record lives. */
export const DNS_RECORD_LABEL = '_vrai';
/** Largest well-known file read. */
export const MAX_WELL_KNOWN_BYTES = 64 * 1024;

/** DNS answers that say "no such record" (definitive), as opposed to a server that failed to answer. */
const DNS_NOT_FOUND: ReadonlySet<string> = new Set([dns.NOTFOUND, dns.NODATA]);

/** `https://<domain>/.well-known/vrai.json`. */
export function defaultWellKnownUrl(domain: string): string {
  return `https://${domain}/.well-known/vrai.json`;
}

/** Verifies and re-checks domain proofs through `deps.resolveTxt` and `deps.fetch`. */
export function createDomainVerifier(deps: ResolvedDeps): KindVerifier<DomainEvidence, DomainProof> {
  async function checkDns(domain: string, token: string, deadline?: AbortSignal): Promise<void> {
    const name = `${DNS_RECORD_LABEL}.${domain}`;
    const records = await retry(
      async () => {
        try {
          return await deps.resolveTxt(name);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code && DNS_NOT_FOUND.has(code)) throw proofError('proof_dns_record_not_found', `no TXT record at ${name}`, error);
          throw new ProofSourceUnreachableError(`TXT lookup of ${name} failed (${code ?? String(error)})`, { cause: error });
        }
      },
      unreachableRetry(deps, deadline),
    );
    if (!records.some((chunks) => chunks.join('').trim() === token)) {
      throw proofError('proof_challenge_missing', `no TXT record at ${name} equals ${token}`);
    }
  }

  async function checkWellKnown(domain: string, token: string, deadline?: AbortSignal): Promise<void> {
    const url = deps.wellKnownUrl(domain);
    const response = await retry(
      async () => {
        const answer = await boundedGet(deps.fetch, url, {
          timeoutMs: deps.httpTimeoutMs,
          maxBytes: MAX_WELL_KNOWN_BYTES,
          headers: { accept: 'application/json', 'user-agent': 'vrai-proof-verifier' },
          redirect: 'manual',
          signal: deadline,
        });
        if (isTransientStatus(answer.status)) throw new ProofSourceUnreachableError(`GET ${url} answered ${answer.status}`);
        return answer;
      },
      unreachableRetry(deps, deadline),
    );
    if (response.status !== 200) {
      const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
      throw proofError('proof_well_known_invalid', `GET ${url} answered ${response.status}${redirect}`);
    }
    if (response.cut) throw proofError('proof_well_known_invalid', `${url} is larger than ${MAX_WELL_KNOWN_BYTES} bytes`);
    let json: unknown;
    try {
      json = JSON.parse(response.text);
    } catch (error) {
      throw proofError('proof_well_known_invalid', `${url} is not JSON`, error);
    }
    const tokens = (json as { vrai?: unknown } | null)?.vrai;
    if (!Array.isArray(tokens) || !tokens.every((entry) => typeof entry === 'string')) {
      throw proofError('proof_well_known_invalid', `${url} must be {"vrai": ["<challenge token>", ...]}`);
    }
    if (!tokens.some((entry: string) => entry.trim() === token)) {
      throw proofError('proof_challenge_missing', `${url} does not list ${token}`);
    }
  }

  const check = (via: DomainProof['via'], domain: string, token: string, deadline?: AbortSignal) =>
    via === 'dns' ? checkDns(domain, token, deadline) : checkWellKnown(domain, token, deadline);

  return {
    async verify(challenge, evidence, deadline) {
      const domain = normalizeDomain(evidence.domain);
      if (domain !== challenge.subject) {
        throw proofError('proof_subject_mismatch', `the challenge is for ${challenge.subject}, the evidence names ${domain}`);
      }
      const proven = (via: DomainProof['via']): DomainProof => ({ kind: 'domain', subject: domain, domain, via, token: challenge.token });
      if (evidence.method) {
        await check(evidence.method, domain, challenge.token, deadline);
        return proven(evidence.method);
      }
      try {
        await checkDns(domain, challenge.token, deadline);
        return proven('dns');
      } catch (dnsError) {
        try {
          await checkWellKnown(domain, challenge.token, deadline);
          return proven('well-known');
        } catch (wellKnownError) {
          // Neither publication proves it: report the DNS failure, naming the well-known one too.
          if (dnsError instanceof Error && wellKnownError instanceof Error) {
            dnsError.message += `; and ${wellKnownError.message}`;
          }
          throw dnsError;
        }
      }
    },
    async recheck(proof) {
      // Re-checks read the publication that proved it (V6: "the record/file still contains it").
      await check(proof.via, proof.domain, proof.token);
      return { type: 'ok' };
    },
  };
}
