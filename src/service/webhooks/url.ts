/**
 * Which URLs an endpoint may have (issue #28): `https://` only, except `http://` to a loopback name
 * under `vrai dev` (a receiver on the developer's machine); a host that is, or resolves to, an address
 * that is not public is refused, as proof sources are (src/service/proofs/outbound.ts). The same check
 * runs again at every delivery, inside the connection, since a name may resolve elsewhere later.
 */
import { isIP } from "node:net";
import { InvalidInputError } from "../../errors";
import { addressRange, isPublicAddress, type ResolveAddresses } from "../proofs/outbound";

/** Where endpoints may point. */
export type UrlPolicy = {
  /** Every address of a host (production: the system's resolver). */
  resolve: ResolveAddresses;
  /** `vrai dev`: loopback receivers too, over http or https. */
  allowLoopback: boolean;
};

/** The refusal of a host that is, or resolves to, an address that is not public: it names the host, not what it resolved to. */
export function forbiddenWebhookAddress(host: string): InvalidInputError {
  return new InvalidInputError(
    "webhook_forbidden_address",
    `${host} is not reachable for webhooks: it is, or resolves to, an address that is not public (webhooks are sent to public addresses only)`,
    { status: 422 },
  );
}

const invalid = (message: string) => new InvalidInputError("webhook_url_invalid", message);

/**
 * Checks an endpoint's URL against `policy`; returns it as the WHATWG parser spells it.
 * A name that does not resolve (yet) is accepted: its deliveries fail, and are retried, until it does.
 * @throws InvalidInputError `webhook_url_invalid` (400) or `webhook_forbidden_address` (422)
 */
export async function checkEndpointUrl(given: string, policy: UrlPolicy): Promise<string> {
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw invalid(`url: ${JSON.stringify(given.slice(0, 100))} is not an absolute URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw invalid(`url: webhooks are sent over https://, not ${url.protocol}//`);
  if (url.hash !== "") throw invalid("url: a webhook URL has no #fragment");
  // undici and the URL parser write IPv6 literals in brackets.
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const addresses =
    isIP(host) !== 0
      ? [host]
      : await policy.resolve(host).then(
          (found) => found.map((a) => a.address),
          () => null,
        );
  const loopback = addresses !== null && addresses.length > 0 && addresses.every((a) => addressRange(a) === "loopback");
  if (url.protocol === "http:" && !(policy.allowLoopback && loopback)) {
    throw invalid(
      policy.allowLoopback
        ? "url: http:// is taken only to a loopback name (localhost, 127.0.0.1, ::1) under vrai dev; use https://"
        : "url: webhooks are sent over https:// only",
    );
  }
  if (addresses !== null && !addresses.every((a) => isPublicAddress(a) || (policy.allowLoopback && addressRange(a) === "loopback"))) {
    throw forbiddenWebhookAddress(url.hostname);
  }
  return url.href;
}
