/**
 * Domain proofs (V6). The owner publishes the challenge token in either place:
 *
 * - DNS: a TXT record at `_vrai.<domain>` whose value (its character-strings joined) is exactly the
 *   token, e.g. `_vrai.example.com. 300 IN TXT "vrai-proof:v1:domain:example.com:3f2a…"`;
 * - HTTPS: `https://<domain>/.well-known/vrai.json`, answered 200 directly (redirects are not
 *   followed) with at most 64 KiB of JSON `{ "vrai": ["<token>", …] }`: an array of token strings,
 *   so several challenges (e.g. of a new owner) can be listed at once. It is read only when every
 *   address of the domain is public (outbound.ts): otherwise `proof_forbidden_address`, unconnected.
 *
 * Or, for an agent holding an active ERC-8004 proof, by the standard's endpoint-domain verification (issue #27):
 * `https://<domain>/.well-known/agent-registration.json`, read the same way, holds a `registrations` entry whose
 * `agentRegistry` (`eip155:<chainId>:<registry>`) and `agentId` are the identity of that proof. No token is published:
 * the domain vouches for the identity, whose owner proved it. Such a proof rests on that ERC-8004 proof (`reliesOn`):
 * it goes with it, and is otherwise checked again every week like any domain proof (V6, same points).
 */
import { promises as dns } from "node:dns";
import { isIP } from "node:net";
import { z } from "zod";
import { retry } from "../../../retry";
import { proofError, ProofSourceUnreachableError, unreachableRetry } from "../errors";
import { retriedGet } from "../http";
import { agentRegistryOf, endpointDomainMatch, MAX_REGISTRATION_FILE_BYTES } from "../registration-file";
import type { KindVerifier, ProofContext, ResolvedDeps } from "../types";
import { type Erc8004Identity, erc8004Binding, formatErc8004Subject, parseErc8004Subject } from "../erc8004-identity";
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
  method: z
    .enum(["dns", "well-known", "agent-registration"])
    .optional()
    .describe(
      "Which publication to read: dns (the TXT record), well-known (/.well-known/vrai.json), or agent-registration (ERC-8004 " +
        "endpoint-domain verification: /.well-known/agent-registration.json lists the agent's ERC-8004 identity). " +
        "Absent: DNS first, then vrai.json, then agent-registration.json when the agent holds an ERC-8004 proof.",
    ),
});
export type DomainEvidence = z.infer<typeof evidence>;

/** The publications a domain is proven by. */
type Via = "dns" | "well-known" | "agent-registration";

/**
 * What a domain proof holds: the publication that proved it, read again at each re-check, and for the endpoint-domain
 * verification (`agent-registration`) the subject of the ERC-8004 identity its file listed (`<chainId>:<registry>:<id>`).
 */
export type DomainProof = { kind: "domain"; subject: string; domain: string; via: Via; token: string; erc8004?: string };

/** The domain kind (V6: agent-level). */
export const domain: ProofKindModule<"domain", DomainEvidence, DomainProof> = {
  kind: "domain",
  title: "Domain",
  noun: "a domain",
  summary:
    `a domain: the challenge token in a DNS TXT record at ${"`_vrai.<domain>`"}, or listed in https://<domain>/.well-known/vrai.json; ` +
    "or, for an agent with an ERC-8004 proof, the standard's endpoint-domain verification (https://<domain>/.well-known/agent-registration.json " +
    "lists that identity in its registrations)",
  normalizeSubject: normalizeDomain,
  subjectExample: "Agent.Example.ORG.",
  purpose: (subject) => `I control the domain ${subject}.`,
  signed: false,
  instructions: (challenge, context) => {
    const identity = context.erc8004[0];
    const endpointDomain = identity
      ? [
          `Or, since the agent holds ERC-8004 identity ${formatErc8004Subject(identity)}, serve ${agentRegistrationUrlOf(challenge.subject)} ` +
            `directly (no redirect) as JSON with a registrations entry of that identity (the standard's endpoint-domain verification; it ` +
            `may be the agent's whole registration file), and send method "agent-registration": no token is needed, and the proof ` +
            "goes with the agent's ERC-8004 proof.",
        ]
      : [];
    return {
      steps: [
        `Publish the challenge token in one of the two places below: a TXT record at ${DNS_RECORD_LABEL}.${challenge.subject}, ` +
          `or the file ${defaultWellKnownUrl(challenge.subject)} served directly (no redirect) as JSON.`,
        ...endpointDomain,
        "Send the domain as the evidence (and which of them you used, or leave it out to have DNS tried first), before the challenge expires.",
        "Keep it published: the proof is read again every week, and removed when it fails two checks in a row.",
      ],
      publish: [
        { type: "dns-txt", name: `${DNS_RECORD_LABEL}.${challenge.subject}`, value: challenge.token },
        { type: "https-file", name: defaultWellKnownUrl(challenge.subject), value: JSON.stringify({ vrai: [challenge.token] }) },
        ...(identity
          ? [{ type: "https-file" as const, name: agentRegistrationUrlOf(challenge.subject), value: endpointDomainFile(identity) }]
          : []),
      ],
      sign: null,
      evidence: { domain: challenge.subject },
    };
  },
  evidence,
  evidenceExample: { domain: "agent.example.org", method: "dns" },
  settings: {},
  verifier: createDomainVerifier,
  binding: (proof) => `domain:${proof.domain.toLowerCase()}`,
  reliesOn: (proof) =>
    proof.via === "agent-registration" && typeof proof.erc8004 === "string" ? erc8004Binding(parseErc8004Subject(proof.erc8004)) : null,
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

/** `https://<domain>/.well-known/agent-registration.json`: the standard's endpoint-domain file (ERC-8004). */
export function agentRegistrationUrlOf(domain: string): string {
  return `https://${domain}/.well-known/agent-registration.json`;
}

/** The least an endpoint-domain file holds for `identity`: its one registrations entry (the agent id a number when it is safe as one). */
export function endpointDomainFile(identity: Erc8004Identity): string {
  const agentId = identity.agentId <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(identity.agentId) : identity.agentId.toString(10);
  return JSON.stringify({ registrations: [{ agentRegistry: agentRegistryOf(identity), agentId }] });
}

/** Verifies and re-checks domain proofs through `deps.resolveTxt` and `deps.fetch`. */
export function createDomainVerifier(deps: ResolvedDeps): KindVerifier<DomainEvidence, DomainProof> {
  const resolveTxt = deps.resolveTxt ?? ((hostname: string) => dns.resolveTxt(hostname));
  const wellKnownUrl = deps.wellKnownUrl ?? defaultWellKnownUrl;
  const agentRegistrationUrl = deps.agentRegistrationUrl ?? agentRegistrationUrlOf;
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

  /** The text of a file of the domain's /.well-known/, answered 200 directly and at most `maxBytes` long. */
  async function readWellKnown(url: string, maxBytes: number, deadline?: AbortSignal): Promise<string> {
    const response = await retriedGet(deps, url, { maxBytes, userAgent: "vrai-proof-verifier", deadline });
    if (response.status !== 200) {
      const redirect = response.status >= 300 && response.status < 400 ? " (redirects are not followed)" : "";
      throw proofError("proof_well_known_invalid", `GET ${url} answered ${response.status}${redirect}`);
    }
    if (response.cut) throw proofError("proof_well_known_invalid", `${url} is larger than ${maxBytes} bytes`);
    return response.text;
  }

  async function checkWellKnown(domain: string, token: string, deadline?: AbortSignal): Promise<void> {
    const url = wellKnownUrl(domain);
    const text = await readWellKnown(url, MAX_WELL_KNOWN_BYTES, deadline);
    let json: unknown;
    try {
      json = JSON.parse(text);
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

  /**
   * The standard's endpoint-domain verification: the domain's agent-registration.json lists one of the agent's ERC-8004
   * identities (`identities`, those of its active erc8004 proofs). @returns the identity it lists
   */
  async function checkAgentRegistration(
    domain: string,
    identities: readonly Erc8004Identity[],
    deadline?: AbortSignal,
  ): Promise<Erc8004Identity> {
    if (identities.length === 0) {
      throw proofError(
        "proof_erc8004_required",
        `the standard's endpoint-domain verification (method agent-registration) proves a domain for the ERC-8004 identity of the ` +
          "agent's active erc8004 proof, and the agent holds none: prove the identity first (kind erc8004)",
      );
    }
    const url = agentRegistrationUrl(domain);
    const match = endpointDomainMatch(await readWellKnown(url, MAX_REGISTRATION_FILE_BYTES, deadline), identities);
    if (match.ok) return match.identity;
    throw proofError(match.reason === "missing" ? "proof_registration_missing" : "proof_well_known_invalid", `${url} ${match.message}`);
  }

  const proven = (domain: string, token: string, via: Via, identity?: Erc8004Identity): DomainProof => ({
    kind: "domain",
    subject: domain,
    domain,
    via,
    token,
    ...(identity ? { erc8004: formatErc8004Subject(identity) } : {}),
  });

  /** Proves `domain` by the publication `via`, or throws why it does not. */
  async function proveBy(via: Via, domain: string, token: string, context: ProofContext, deadline?: AbortSignal): Promise<DomainProof> {
    if (via === "dns") await checkDns(domain, token, deadline);
    else if (via === "well-known") await checkWellKnown(domain, token, deadline);
    else return proven(domain, token, via, await checkAgentRegistration(domain, context.erc8004, deadline));
    return proven(domain, token, via);
  }

  return {
    async verify(challenge, evidence, deadline, context) {
      const domain = normalizeDomain(evidence.domain);
      if (domain !== challenge.subject) {
        throw proofError("proof_subject_mismatch", `the challenge is for ${challenge.subject}, the evidence names ${domain}`);
      }
      if (evidence.method) return proveBy(evidence.method, domain, challenge.token, context, deadline);
      // None named: each publication in turn (the endpoint-domain file only for an agent with an ERC-8004 identity).
      const order: Via[] = context.erc8004.length > 0 ? ["dns", "well-known", "agent-registration"] : ["dns", "well-known"];
      const failures: Error[] = [];
      for (const via of order) {
        try {
          return await proveBy(via, domain, challenge.token, context, deadline);
        } catch (error) {
          if (!(error instanceof Error)) throw error;
          failures.push(error);
        }
      }
      // None proves it: report the DNS failure, naming the others too.
      const [first, ...others] = failures;
      first.message += others.map((other) => `; and ${other.message}`).join("");
      throw first;
    },
    async recheck(proof, context) {
      // Re-checks read the publication that proved it (V6: "the record/file still contains it").
      if (proof.via !== "agent-registration") {
        await proveBy(proof.via, proof.domain, proof.token, context);
        return { type: "ok" };
      }
      // The identity its file listed, while the agent still holds it: the file must list it still.
      const held = context.erc8004.filter((identity) => formatErc8004Subject(identity) === proof.erc8004);
      if (held.length === 0) {
        throw proofError(
          "proof_erc8004_required",
          `${proof.domain} was proven for ERC-8004 identity ${proof.erc8004 ?? "(none)"}, which the agent no longer holds an active erc8004 proof of`,
        );
      }
      await checkAgentRegistration(proof.domain, held);
      return { type: "ok" };
    },
  };
}
