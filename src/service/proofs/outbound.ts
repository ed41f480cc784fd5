/**
 * The only way proof verifiers reach the network over HTTP(S): a `fetch` whose connections go to
 * public addresses only (issue #15, finding 2). A domain proof fetches a URL built from user input,
 * so without this a name whose A record is 127.0.0.1 or 10.0.0.5 would make the server read its own
 * network.
 *
 * The check runs inside the connection, not before it: the undici dispatcher connects through a
 * `lookup` that resolves the name, refuses it unless every address it has (all A and AAAA records)
 * is public, and hands exactly those checked addresses to the socket. There is no second resolution
 * between check and connect for DNS rebinding to slip into. A URL whose host is an IP literal gets
 * no lookup from node, so the connector checks the literal itself. Redirects reach new hosts
 * through the same dispatcher, so every hop is checked the same way.
 *
 * "Public" is `ipaddr.js`'s range classification: IPv4 `unicast` only (not loopback, private
 * RFC 1918, link-local, CGNAT 100.64/10, multicast, unspecified, broadcast, reserved, documentation
 * or benchmarking ranges); IPv4-mapped IPv6 as its IPv4 address; NAT64 (64:ff9b::/96) as the IPv4
 * address it embeds; other IPv6 only `unicast` inside the global unicast block 2000::/3 (so not ::1,
 * fc00::/7, fe80::/10, 2001:db8::/32, 6to4, Teredo, ...).
 */
import { promises as dns, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import type { BaseError } from "../../errors";
import { proofError } from "./errors";
import type { Fetch } from "./http";

/** One address of a name, as `dns.lookup(name, { all: true })` gives it. */
export type ResolvedAddress = { address: string; family: 4 | 6 };

/** Every address (A and AAAA) of `hostname`; rejects like `dns.lookup` when it has none. */
export type ResolveAddresses = (hostname: string) => Promise<ResolvedAddress[]>;

export type OutboundPolicy = {
  /** Production: `resolveWithSystemDns`. Tests make public-looking names resolve where they need. */
  resolve: ResolveAddresses;
  /** Connect (TCP and TLS) timeout in ms. */
  connectTimeoutMs: number;
  /**
   * TESTS ONLY: also connect to URLs whose host is a loopback IP literal (`http://127.0.0.1:port`),
   * where the tests' own servers listen. Names are still never allowed to resolve to loopback, and
   * every other non-public address stays refused. The production wiring (src/app) never sets it;
   * `outbound.test.ts` checks that.
   */
  allowLoopbackLiteralsForTests?: boolean;
  /**
   * Loopback addresses are allowed too, by name or literal (a name whose every address is public or
   * loopback): `vrai dev`'s webhooks, delivered to a receiver on the same machine (issue #28). Private,
   * link-local and every other non-public address stay refused. Proofs never set it.
   */
  allowLoopback?: boolean;
  /** The error of a refused host (default: the proofs' `proof_forbidden_address`); it names the host and nothing it resolved to. */
  refuse?: (host: string) => BaseError;
};

/** The production resolver: the system's (getaddrinfo: hosts file, then DNS), every address in its order. */
export const resolveWithSystemDns: ResolveAddresses = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");

/**
 * The `ipaddr.js` range of `address` as far as reachability goes: `unicast` means public. IPv4-mapped
 * and NAT64 addresses are classified as the IPv4 address they carry; IPv6 outside 2000::/3 that
 * ipaddr.js calls `unicast` is `reserved`. Only what `net.isIP` accepts is an address (ipaddr.js
 * alone would also read `1.2.3` or `0x7f.1`): anything else is `invalid`.
 * @example
 * addressRange('::ffff:10.0.0.1'); // 'private'
 * addressRange('64:ff9b::7f00:1'); // 'loopback'
 */
export function addressRange(address: string): string {
  if (isIP(address) === 0) return "invalid";
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.range();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.match(NAT64_WELL_KNOWN)) return addressRange(ipaddr.fromByteArray(v6.toByteArray().slice(12)).toString());
  const range = v6.range();
  return range === "unicast" && !v6.match(GLOBAL_UNICAST_V6) ? "reserved" : range;
}

/** True when `address` is a public unicast address (see `addressRange`). */
export function isPublicAddress(address: string): boolean {
  return addressRange(address) === "unicast";
}

/** Whether `policy` lets a connection go to `address`: a public one, or a loopback one where loopback is allowed. */
function allowedAddress(address: string, policy: Pick<OutboundPolicy, "allowLoopback">): boolean {
  return isPublicAddress(address) || (policy.allowLoopback === true && addressRange(address) === "loopback");
}

/**
 * The refusal. It names the host the user gave but not the address or range it resolved to, so a
 * submission learns nothing about the server's network; nothing was connected to.
 */
function forbiddenAddress(host: string): BaseError {
  return proofError(
    "proof_forbidden_address",
    `${host} is not reachable for proofs: it is, or resolves to, an address that is not public (proofs are read from public addresses only)`,
  );
}

/**
 * A `lookup` for `net.connect`/`tls.connect` that resolves `hostname` with `resolve` and answers only
 * if every address is public (or loopback, where `policy` allows it), handing the socket exactly the addresses it checked.
 */
export function checkedLookup(resolve: ResolveAddresses, policy: Pick<OutboundPolicy, "allowLoopback" | "refuse"> = {}): LookupFunction {
  const refuse = policy.refuse ?? forbiddenAddress;
  return (hostname, options, callback) => {
    const checked = resolve(hostname).then((addresses) => {
      if (!addresses.every(({ address }) => allowedAddress(address, policy))) throw refuse(hostname);
      const usable = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      if (usable.length === 0) throw Object.assign(new Error(`no address for ${hostname}`), { code: dns.NOTFOUND, hostname });
      return usable;
    });
    checked.then(
      (usable: LookupAddress[]) => (options.all ? callback(null, usable) : callback(null, usable[0].address, usable[0].family)),
      (error: NodeJS.ErrnoException) => callback(error, "", 0),
    );
  };
}

/**
 * The `fetch` of the proof verifiers and of webhook deliveries: undici's, through a dispatcher whose every
 * connection is checked (see the module comment). A refused connection rejects with the policy's refusal
 * itself (the proofs' `proof_forbidden_address`, 422: the answer to the proof, not a transient failure to retry).
 * @example
 * const fetchPublic = createOutboundFetch({ resolve: resolveWithSystemDns, connectTimeoutMs: 5_000 });
 * const response = await fetchPublic('https://example.com/.well-known/vrai.json', { method: 'GET', redirect: 'manual', signal });
 */
export function createOutboundFetch(policy: OutboundPolicy): Fetch {
  const refusals = new WeakSet<object>();
  const refuse = (host: string) => {
    const error = (policy.refuse ?? forbiddenAddress)(host);
    refusals.add(error);
    return error;
  };
  const connectChecked = buildConnector({ lookup: checkedLookup(policy.resolve, { ...policy, refuse }), timeout: policy.connectTimeoutMs });
  const allowedLiteral = (address: string) =>
    allowedAddress(address, policy) || (policy.allowLoopbackLiteralsForTests === true && addressRange(address) === "loopback");
  const dispatcher = new Agent({
    connect(options, callback) {
      // undici hands IPv6 literals without their brackets.
      if (isIP(options.hostname) !== 0 && !allowedLiteral(options.hostname)) return callback(refuse(options.hostname), null);
      connectChecked(options, callback);
    },
  });
  return async (url, init) => {
    try {
      return await undiciFetch(url, { ...init, dispatcher });
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      throw typeof cause === "object" && cause !== null && refusals.has(cause) ? cause : error;
    }
  };
}
