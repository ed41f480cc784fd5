/**
 * What each proof kind proves control of (its subject), in one canonical spelling so that
 * challenges, evidence and bindings compare as plain strings.
 */
import { isIP } from 'node:net';
import { getAddress, isAddress, type Address } from 'viem';
import { proofError } from './errors';

/** The V6 proof kinds verified here (the claim itself is not a proof of this module). */
export const PROOF_KINDS = ['wallet', 'github', 'domain', 'erc8004'] as const;
export type ProofKind = (typeof PROOF_KINDS)[number];

/** Longest DNS name (RFC 1035 §2.3.4), without the trailing dot. */
const MAX_DOMAIN_LENGTH = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/**
 * A top-level label: letters only, or an internationalised TLD in punycode (`xn--p1ai`). The WHATWG
 * URL parser reads a host as IPv4 when its last label is a number (decimal, `0x` hex, octal), so a
 * host ending in such a label can never be a number.
 */
const TOP_LEVEL_LABEL = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
/** GitHub logins: 1–39 letters, digits and hyphens, not starting with a hyphen. */
const GITHUB_LOGIN = /^[a-z0-9][a-z0-9-]{0,38}$/i;
const UINT256_MAX = 2n ** 256n - 1n;

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
  const domain = trimmed.replace(/\.$/, '');
  const labels = domain.split('.');
  const address = ipAddressOf(trimmed);
  const reason =
    address !== undefined ? `IP addresses are not domains (it reads as ${address})`
    : domain.length === 0 || domain.length > MAX_DOMAIN_LENGTH ? 'length must be 1–253 characters'
    : labels.length < 2 ? 'a domain needs at least two labels'
    : !labels.every((label) => LABEL.test(label)) ? 'labels are 1–63 letters, digits or inner hyphens (no ports, paths or IP literals)'
    : labels[labels.length - 1] === 'localhost' ? 'localhost is not a public domain'
    : !TOP_LEVEL_LABEL.test(labels[labels.length - 1]) ? 'the last label must be a top-level domain: letters, or xn-- punycode'
    : undefined;
  if (reason) throw proofError('proof_domain_invalid', `invalid domain ${JSON.stringify(input)}: ${reason}`);
  return domain;
}

/**
 * The IP address `host` denotes, as a socket (`net.isIP`: bare or bracketed IPv6, with a zone, raw
 * or URL-escaped as `%25`) or the WHATWG URL parser (every IPv4 spelling it accepts) reads it;
 * undefined for anything else.
 */
function ipAddressOf(host: string): string | undefined {
  const unbracketed = (text: string) => text.replace(/^\[(.*)\]$/, '$1');
  const bare = unbracketed(host);
  const literal = [bare, bare.replace(/%25/g, '%')].find((candidate) => isIP(candidate) !== 0);
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

/** Lowercases a GitHub login after checking its syntax. @throws `proof_subject_invalid` */
export function normalizeGithubLogin(input: string): string {
  if (!GITHUB_LOGIN.test(input)) throw proofError('proof_subject_invalid', `invalid GitHub username ${JSON.stringify(input)}`);
  return input.toLowerCase();
}

/** Lowercases a 20-byte hex address after checking it (any checksum case is accepted). @throws `proof_subject_invalid` */
export function normalizeAddress(input: string): Address {
  if (!isAddress(input, { strict: false })) throw proofError('proof_subject_invalid', `invalid address ${JSON.stringify(input)}`);
  return getAddress(input).toLowerCase() as Address;
}

/** An ERC-8004 identity: a token of an ERC-721 identity registry on one chain. */
export type Erc8004Identity = { chainId: number; registry: Address; agentId: bigint };

/** `<chainId>:<registry lowercased>:<agentId decimal>`, e.g. `8453:0xabc…:42`. */
export function formatErc8004Subject(identity: Erc8004Identity): string {
  return `${identity.chainId}:${identity.registry.toLowerCase()}:${identity.agentId.toString(10)}`;
}

/** Parses `formatErc8004Subject` output (the registry in any case). @throws `proof_subject_invalid` */
export function parseErc8004Subject(subject: string): Erc8004Identity {
  const match = /^([1-9][0-9]{0,15}):(0x[0-9a-fA-F]{40}):(0|[1-9][0-9]{0,77})$/.exec(subject);
  const agentId = match ? BigInt(match[3]) : undefined;
  const chainId = match ? Number(match[1]) : undefined;
  if (!match || agentId === undefined || agentId > UINT256_MAX || !Number.isSafeInteger(chainId)) {
    throw proofError('proof_subject_invalid', `invalid ERC-8004 subject ${JSON.stringify(subject)}: expected <chainId>:<registry>:<agentId>`);
  }
  return { chainId: chainId as number, registry: normalizeAddress(match[2]), agentId };
}

/** The canonical subject of `kind`. @throws InvalidInputError when `subject` is not valid for `kind` */
export function normalizeSubject(kind: ProofKind, subject: string): string {
  switch (kind) {
    case 'wallet':
      return normalizeAddress(subject);
    case 'github':
      return normalizeGithubLogin(subject);
    case 'domain':
      return normalizeDomain(subject);
    case 'erc8004':
      return formatErc8004Subject(parseErc8004Subject(subject));
  }
}
