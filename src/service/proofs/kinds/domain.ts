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
import { promises as dns } from "node:dns";
import { isIP } from "node:net";
import { z } from "zod";
import { retry } from "../../../retry";
import { proofError, ProofSourceUnreachableError, unreachableRetry } from "../errors";
import { boundedGet, isTransientStatus } from "../http";
import type { KindVerifier, ResolvedDeps } from "../types";
import type { ProofKindModule } from "./kind";

/** Longest DNS name (RFC 1035 §2.3.4), without the trailing dot. */
const MAX_DOMAIN_LENGTH = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/**
 * A top-level label: letters only, or an internationalised TLD in punycode (`xn--p1ai`). The WHATWG
 * URL parser reads a host as IPv4 when its last label is a number (decimal, `0x` hex, octal), so a
 * host ending in such a label can never be a number.
 */
const TOP_LEVEL_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/**
 * Validates and lowercases a public DNS hostname: letters, digits and hyphens in labels of 1–63
 * characters, at least two labels, an alphabetic (or punycode) top-level label, no port, no
 * `localhost`, and nothing a URL or a socket reads as an IP address, in any spelling
 * (`127.0.0.0x1`, `0177.0.0.1`, `2130706433`, `[::1]`, `::ffff:127.0.0.1`, `fe80::1%eth0`, ...).
 * One trailing dot is accepted and dropped. Internationalised names must be given in their ASCII
 * (punycode `xn--`) form. Issue #15: the host is then never an IP literal; where a name resolves is
 * checked at connect time (outbound.ts).
 * @throws InvalidInputError `proof_domain_invalid`
 */
export function normalizeDomain(input: string): string {
  const trimmed = input.trim().toLowerCase();
  const domain = trimmed.replace(/\.$/, "");
  const labels = domain.split(".");
  const address = ipAddressOf(trimmed);
  const reason =
    address !== undefined
      ? `IP addresses are not domains (it reads as ${address})`
      : domain.length === 0 || domain.length > MAX_DOMAIN_LENGTH
        ? "length must be 1–253 characters"
        : labels.length < 2
          ? "a domain needs at least two labels"
          : !labels.every((label) => LABEL.test(label))
            ? "labels are 1–63 letters, digits or inner hyphens (no ports, paths or IP literals)"
            : labels[labels.length - 1] === "localhost"
              ? "localhost is not a public domain"
              : !TOP_LEVEL_LABEL.test(labels[labels.length - 1])
                ? "the last label must be a top-level domain: letters, or xn-- punycode"
                : undefined;
  if (reason) throw proofError("proof_domain_invalid", `invalid domain ${JSON.stringify(input)}: ${reason}`);
  return domain;
}

/**
 * The IP address `host` denotes, as a socket (`net.isIP`: bare or bracketed IPv6, with a zone, raw
 * or URL-escaped as `%25`) or the WHATWG URL parser (every IPv4 spelling it accepts) reads it;
 * undefined for anything else.
 */
function ipAddressOf(host: string): string | undefined {
  const unbracketed = (text: string) => text.replace(/^\[(.*)\]$/, "$1");
  const bare = unbracketed(host);
  const literal = [bare, bare.replace(/%25/g, "%")].find((candidate) => isIP(candidate) !== 0);
  if (literal !== undefined) return literal;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
  const parsed = unbracketed(hostname);
  return isIP(parsed) !== 0 ? parsed : undefined;
}

const evidence = z.strictObject({
  domain: z.string().min(1).max(260),
  /** Which publication to read; when absent the DNS record is tried first, then the well-known file. */
  method: z.enum(["dns", "well-known"]).optional(),
});
export type DomainEvidence = z.infer<typeof evidence>;

/** What a domain proof holds: the publication that proved it, read again at each re-check. */
export type DomainProof = { kind: "domain"; subject: string; domain: string; via: "dns" | "well-known"; token: string };

/** The domain kind (V6: agent-level). */
export const domain: ProofKindModule<"domain", DomainEvidence, DomainProof> = {
  kind: "domain",
  title: "Domain",
  noun: "a domain",
  summary: `a domain: the challenge token in a DNS TXT record at ${"`_vrai.<domain>`"}, or listed in https://<domain>/.well-known/vrai.json`,
  normalizeSubject: normalizeDomain,
  subjectExample: "Agent.Example.ORG.",
  purpose: (subject) => `I control the domain ${subject}.`,
  signed: false,
  instructions: (challenge) => ({
    steps: [
      `Publish the challenge token in one of the two places below: a TXT record at ${DNS_RECORD_LABEL}.${challenge.subject}, ` +
        `or the file ${defaultWellKnownUrl(challenge.subject)} served directly (no redirect) as JSON.`,
      "Send the domain as the evidence (and which of the two you used, or leave it out to have DNS tried first), before the challenge expires.",
      "Keep it published: the proof is read again every week, and removed when it fails two checks in a row.",
    ],
    publish: [
      { type: "dns-txt", name: `${DNS_RECORD_LABEL}.${challenge.subject}`, value: challenge.token },
      { type: "https-file", name: defaultWellKnownUrl(challenge.subject), value: JSON.stringify({ vrai: [challenge.token] }) },
    ],
    sign: null,
    evidence: { domain: challenge.subject },
  }),
  evidence,
  evidenceExample: { domain: "agent.example.org", method: "dns" },
  settings: {},
  verifier: createDomainVerifier,
  binding: (proof) => `domain:${proof.domain.toLowerCase()}`,
};

/** Label under which the TXT record lives. */
export const DNS_RECORD_LABEL = "_vrai";
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
  const resolveTxt = deps.resolveTxt ?? ((hostname: string) => dns.resolveTxt(hostname));
  const wellKnownUrl = deps.wellKnownUrl ?? defaultWellKnownUrl;
  async function checkDns(domain: string, token: string, deadline?: AbortSignal): Promise<void> {
    const name = `${DNS_RECORD_LABEL}.${domain}`;
    const records = await retry(
      async () => {
        try {
          return await resolveTxt(name);
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code && DNS_NOT_FOUND.has(code)) throw proofError("proof_dns_record_not_found", `no TXT record at ${name}`, error);
          throw new ProofSourceUnreachableError(`TXT lookup of ${name} failed (${code ?? String(error)})`, { cause: error });
        }
      },
      unreachableRetry(deps, deadline),
    );
    if (!records.some((chunks) => chunks.join("").trim() === token)) {
      throw proofError("proof_challenge_missing", `no TXT record at ${name} equals ${token}`);
    }
  }

  async function checkWellKnown(domain: string, token: string, deadline?: AbortSignal): Promise<void> {
    const url = wellKnownUrl(domain);
    const response = await retry(
      async () => {
        const answer = await boundedGet(deps.fetch, url, {
          timeoutMs: deps.httpTimeoutMs,
          maxBytes: MAX_WELL_KNOWN_BYTES,
          headers: { accept: "application/json", "user-agent": "vrai-proof-verifier" },
          redirect: "manual",
          signal: deadline,
        });
        if (isTransientStatus(answer.status)) throw new ProofSourceUnreachableError(`GET ${url} answered ${answer.status}`);
        return answer;
      },
      unreachableRetry(deps, deadline),
    );
    if (response.status !== 200) {
      const redirect = response.status >= 300 && response.status < 400 ? " (redirects are not followed)" : "";
      throw proofError("proof_well_known_invalid", `GET ${url} answered ${response.status}${redirect}`);
    }
    if (response.cut) throw proofError("proof_well_known_invalid", `${url} is larger than ${MAX_WELL_KNOWN_BYTES} bytes`);
    let json: unknown;
    try {
      json = JSON.parse(response.text);
    } catch (error) {
      throw proofError("proof_well_known_invalid", `${url} is not JSON`, error);
    }
    const tokens = (json as { vrai?: unknown } | null)?.vrai;
    if (!Array.isArray(tokens) || !tokens.every((entry) => typeof entry === "string")) {
      throw proofError("proof_well_known_invalid", `${url} must be {"vrai": ["<challenge token>", ...]}`);
    }
    if (!tokens.some((entry: string) => entry.trim() === token)) {
      throw proofError("proof_challenge_missing", `${url} does not list ${token}`);
    }
  }

  const check = (via: DomainProof["via"], domain: string, token: string, deadline?: AbortSignal) =>
    via === "dns" ? checkDns(domain, token, deadline) : checkWellKnown(domain, token, deadline);

  return {
    async verify(challenge, evidence, deadline) {
      const domain = normalizeDomain(evidence.domain);
      if (domain !== challenge.subject) {
        throw proofError("proof_subject_mismatch", `the challenge is for ${challenge.subject}, the evidence names ${domain}`);
      }
      const proven = (via: DomainProof["via"]): DomainProof => ({ kind: "domain", subject: domain, domain, via, token: challenge.token });
      if (evidence.method) {
        await check(evidence.method, domain, challenge.token, deadline);
        return proven(evidence.method);
      }
      try {
        await checkDns(domain, challenge.token, deadline);
        return proven("dns");
      } catch (dnsError) {
        try {
          await checkWellKnown(domain, challenge.token, deadline);
          return proven("well-known");
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
      return { type: "ok" };
    },
  };
}
