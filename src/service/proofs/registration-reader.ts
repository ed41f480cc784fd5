/**
 * Reads an ERC-8004 identity's registration file (issue #27): its agentURI (ERC-721 `tokenURI`) read from the chain,
 * then the file it names. `https://` goes through the proofs' outbound guard (public addresses only, every hop of a
 * redirect checked, at most `MAX_REDIRECTS` of them and never from https to http, the size and time limits of
 * proofs); `data:application/json;base64,` is decoded here, without any connection; `ipfs://` is read through the
 * gateway ERC8004_IPFS_GATEWAY names, and not read at all without one (then only the URI is known). Anything else is
 * refused. A source that does not answer is retried as a proof's is (V6: 3 tries), then refused with the reason.
 * Nothing here throws: every outcome is a reading, stored as it is (src/service/registration-files.ts).
 */
import { BaseError as ViemBaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError } from "viem";
import { BaseError } from "../../errors";
import { retry } from "../../retry";
import { ProofSourceUnreachableError, unreachableRetry } from "./errors";
import { retriedGet } from "./http";
import { type Erc8004Identity, formatErc8004Subject } from "./erc8004-identity";
import { MAX_REGISTRATION_FILE_BYTES, parseRegistrationFile, type RegistrationFile } from "./registration-file";
import type { ResolvedDeps } from "./types";

/** What reading an identity's registration file gave: its fields, why it was refused, or why it was not read. */
export type RegistrationReading =
  | { status: "read"; uri: string; file: RegistrationFile; reason: null }
  /** Read and refused (too big, not JSON, of the wrong type or shape, at an address that is not public, unreachable...). */
  | { status: "refused"; uri: string | null; file: null; reason: string }
  /** Not read: no agentURI, or an `ipfs://` one without a gateway. */
  | { status: "unread"; uri: string | null; file: null; reason: string };

/**
 * Reads the registration file of `identity` now. `submission`: read as part of a proof's submission, so within the time
 * a submission has (PROOF_SUBMISSION_TIMEOUT_MS, tries and waits included); otherwise each try has the HTTP timeout.
 */
export type ReadRegistrationFile = (identity: Erc8004Identity, options?: { submission?: boolean }) => Promise<RegistrationReading>;

/** Redirects followed from an `https://` agentURI, each to a public address. */
export const MAX_REDIRECTS = 3;

/** `tokenURI(uint256)` of ERC-721 metadata, which an ERC-8004 identity registry's agentURI is. */
export const TOKEN_URI_ABI = [
  {
    type: "function",
    name: "tokenURI",
    stateMutability: "view",
    inputs: [{ name: "tokenId", type: "uint256" }],
    outputs: [{ name: "", type: "string" }],
  },
] as const;

/** `data:application/json[;param=value...];base64,<payload>`. */
const DATA_JSON_BASE64 = /^data:application\/json(?:;[^;,=]+=[^;,]*)*;base64,([A-Za-z0-9+/]*={0,2})$/i;

/** A refusal of the whole read, carried to the one place that makes it a reading. */
class Refused extends Error {}

/**
 * The reader of registration files over the proofs' shared dependencies.
 * @param ipfsGateway the URL an `ipfs://<cid>/<path>` is read under (`<gateway>/<cid>/<path>`); none: ipfs:// is not read
 * @example
 * const read = createRegistrationReader(deps, { ipfsGateway: "https://ipfs.io/ipfs/" });
 * const reading = await read({ chainId: 8453, registry, agentId: 42n }); // { status: "read", uri, file, reason: null }
 */
export function createRegistrationReader(deps: ResolvedDeps, settings: { ipfsGateway?: string }): ReadRegistrationFile {
  const urlOf = deps.registrationFileUrl ?? ((uri: string) => uri);

  /** The token's agentURI; throws `Refused` when the registry has none for it, unreachable (retried) otherwise. */
  async function agentUriOf(identity: Erc8004Identity, deadline?: AbortSignal): Promise<string> {
    const client = deps.publicClientFor(identity.chainId);
    if (!client) throw new Refused(`chain ${identity.chainId} is not configured: the agentURI cannot be read`);
    const label = formatErc8004Subject(identity);
    return retry(
      async () => {
        try {
          return await client.readContract({
            address: identity.registry,
            abi: TOKEN_URI_ABI,
            functionName: "tokenURI",
            args: [identity.agentId],
          });
        } catch (error) {
          if (
            error instanceof ViemBaseError &&
            error.walk((e) => e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError)
          ) {
            throw new Refused(`tokenURI of ERC-8004 identity ${label} reverted or is not implemented: it has no agentURI to read`);
          }
          throw new ProofSourceUnreachableError(`reading tokenURI of ${label} failed`, { cause: error });
        }
      },
      unreachableRetry(deps, deadline),
    );
  }

  /** The body at `url`, following at most `MAX_REDIRECTS` redirects, none from https to http. */
  async function fetchText(url: string, deadline?: AbortSignal): Promise<string> {
    let current = url;
    for (let hops = 0; ; hops++) {
      const answer = await retriedGet(deps, current, {
        maxBytes: MAX_REGISTRATION_FILE_BYTES,
        userAgent: "vrai-registration-reader",
        deadline,
      });
      if (answer.status >= 300 && answer.status < 400) {
        const location = answer.headers.get("location");
        if (location === null) throw new Refused(`GET ${current} answered ${answer.status} without a Location`);
        if (hops === MAX_REDIRECTS) throw new Refused(`GET ${url} redirected more than ${MAX_REDIRECTS} times`);
        const next = new URL(location, current);
        if (new URL(current).protocol === "https:" && next.protocol !== "https:") {
          throw new Refused(`GET ${current} redirected to ${next.protocol} (only https is followed)`);
        }
        current = next.href;
        continue;
      }
      if (answer.status !== 200) throw new Refused(`GET ${current} answered ${answer.status}`);
      if (answer.cut) throw new Refused(`${url} is larger than ${MAX_REGISTRATION_FILE_BYTES} bytes`);
      return answer.text;
    }
  }

  /** The text of the file `uri` names, or null for an ipfs:// URI without a gateway. */
  async function textOf(uri: string, deadline?: AbortSignal): Promise<string | null> {
    const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(uri)?.[1].toLowerCase();
    if (scheme === "https") return fetchText(urlOf(uri), deadline);
    if (scheme === "data") {
      const payload = DATA_JSON_BASE64.exec(uri)?.[1];
      if (payload === undefined) throw new Refused("the agentURI is a data: URI, but not data:application/json;base64,<JSON in base64>");
      const bytes = Buffer.from(payload, "base64");
      if (bytes.byteLength > MAX_REGISTRATION_FILE_BYTES)
        throw new Refused(`the agentURI's data: JSON is larger than ${MAX_REGISTRATION_FILE_BYTES} bytes`);
      return bytes.toString("utf8");
    }
    if (scheme === "ipfs") {
      if (settings.ipfsGateway === undefined) return null;
      const segments = uri
        .slice("ipfs://".length)
        .replace(/^ipfs\//, "")
        .split("/");
      // No dot segment, in any spelling the URL parser reads as one: the path stays under the gateway's.
      const dots = /^(?:\.|%2e){1,2}$/i;
      if (!/^[A-Za-z0-9]+$/.test(segments[0]) || segments.some((s) => dots.test(s) || /[?#\\]/.test(s))) {
        throw new Refused(`the agentURI ${uri} is not an ipfs://<cid>/<path> URI`);
      }
      const gateway = settings.ipfsGateway.endsWith("/") ? settings.ipfsGateway : `${settings.ipfsGateway}/`;
      return fetchText(`${gateway}${segments.join("/")}`, deadline);
    }
    throw new Refused(`the agentURI ${uri} is not read: only https://, data:application/json;base64, and ipfs:// agentURIs are`);
  }

  return async (identity, options = {}) => {
    const deadline = options.submission ? AbortSignal.timeout(deps.submissionTimeoutMs) : undefined;
    let uri: string | null = null;
    try {
      uri = await agentUriOf(identity, deadline);
      if (uri.trim() === "")
        return { status: "unread", uri: null, file: null, reason: "the identity has no agentURI (its tokenURI is empty)" };
      const text = await textOf(uri, deadline);
      if (text === null) {
        return {
          status: "unread",
          uri,
          file: null,
          reason: "ipfs:// agentURIs are read through an IPFS gateway, and none is configured (ERC8004_IPFS_GATEWAY)",
        };
      }
      const parsed = parseRegistrationFile(text);
      if (parsed.ok) return { status: "read", uri, file: parsed.file, reason: null };
      return {
        status: "refused",
        uri,
        file: null,
        reason: `${uri.startsWith("data:") ? "the agentURI's data: JSON" : uri} ${parsed.reason}`,
      };
    } catch (error) {
      const reason =
        error instanceof Refused || error instanceof BaseError
          ? error.message
          : deadline?.aborted
            ? "it was not read within the time a proof's submission has (PROOF_SUBMISSION_TIMEOUT_MS); it is read again at the weekly re-check"
            : `reading it failed: ${error instanceof Error ? error.message : String(error)}`;
      return { status: "refused", uri, file: null, reason };
    }
  };
}
