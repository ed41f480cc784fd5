/**
 * ERC-8004 registration files (issue #27): the JSON an identity's agentURI (its ERC-721 tokenURI) resolves to, type
 * `https://eips.ethereum.org/EIPS/eip-8004#registration-v1`. What the agent says of itself there is self-declared:
 * shown apart from what Vrai verified, and never part of any score. The schema checks the types of the fields the
 * standard names and keeps every other field as it came; a file of the wrong shape is refused with the reason.
 * The endpoint-domain file (`https://{domain}/.well-known/agent-registration.json`) is read with the same
 * `registrations` entries.
 */
import { z } from "zod";
import type { Erc8004Identity } from "./erc8004-identity";

/** The `type` of a registration file of the standard's first version. */
export const REGISTRATION_V1_TYPE = "https://eips.ethereum.org/EIPS/eip-8004#registration-v1";

/** Largest registration or endpoint-domain file read: larger ones are refused (as the domain kind's well-known file). */
export const MAX_REGISTRATION_FILE_BYTES = 64 * 1024;

/** One `registrations` entry: an identity registry as `eip155:{chainId}:{address}` and a token id of it. */
const registrationEntry = z.looseObject({
  agentRegistry: z.string(),
  agentId: z.union([z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER), z.string().regex(/^(0|[1-9][0-9]{0,77})$/)]),
});

/** The `registrations` list, of a registration file and of an endpoint-domain file. */
const registrations = z.array(registrationEntry);

/** One service of the agent (`web`, `A2A`, `MCP`, `ENS`, ... or its own name) and where it answers. */
const service = z.looseObject({ name: z.string(), endpoint: z.string(), version: z.string().optional() });

/** registration-v1: `type` and `name` are required; the other fields the standard names are checked when present. */
export const registrationFileSchema = z.looseObject({
  type: z.literal(REGISTRATION_V1_TYPE),
  name: z.string(),
  description: z.string().optional(),
  image: z.string().optional(),
  services: z.array(service).optional(),
  registrations: registrations.optional(),
  active: z.boolean().optional(),
  supportedTrust: z.array(z.string()).optional(),
  x402Support: z.boolean().optional(),
});

/** A registration file as read and checked, every field kept. */
export type RegistrationFile = z.infer<typeof registrationFileSchema>;

/** What an endpoint-domain file must hold: a `registrations` list (it may be the whole registration file). */
const endpointDomainFileSchema = z.looseObject({ registrations });

/** `eip155:{chainId}:{registry}`: how the standard names an identity registry (CAIP-10 style). */
export const agentRegistryOf = (identity: Erc8004Identity): string => `eip155:${identity.chainId}:${identity.registry}`;

/** Whether `entry` names `identity`: its registry (any case) on its chain, and its token id. */
function namesIdentity(entry: z.infer<typeof registrationEntry>, identity: Erc8004Identity): boolean {
  return entry.agentRegistry.toLowerCase() === agentRegistryOf(identity).toLowerCase() && BigInt(entry.agentId) === identity.agentId;
}

/** The issues of a failed parse in one line, each with its field: `services.0.endpoint: Invalid input: expected string`. */
export function issuesInWords(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.map(String).join(".") || "(the whole file)"}: ${issue.message}`).join("; ");
}

/** JSON text parsed, or why it is not JSON. */
function parseJson(text: string): { ok: true; json: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, json: JSON.parse(text) };
  } catch (error) {
    return { ok: false, reason: `is not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
}

/**
 * A registration file from its text: checked against registration-v1, or refused with the reason (said after what
 * was read, e.g. `<uri> is not JSON (...)`).
 * @example parseRegistrationFile('{"type":"https://eips.ethereum.org/EIPS/eip-8004#registration-v1","name":"a"}') // { ok: true, file }
 */
export function parseRegistrationFile(text: string): { ok: true; file: RegistrationFile } | { ok: false; reason: string } {
  const parsed = parseJson(text);
  if (!parsed.ok) return parsed;
  const json = parsed.json;
  if (typeof json !== "object" || json === null || Array.isArray(json)) return { ok: false, reason: "is not a JSON object" };
  const type = (json as { type?: unknown }).type;
  if (type !== REGISTRATION_V1_TYPE) {
    return {
      ok: false,
      reason: `is not a registration-v1 file: its type is ${JSON.stringify(type) ?? "missing"}, not "${REGISTRATION_V1_TYPE}"`,
    };
  }
  const checked = registrationFileSchema.safeParse(json);
  return checked.success
    ? { ok: true, file: checked.data }
    : { ok: false, reason: `is not a valid registration-v1 file: ${issuesInWords(checked.error)}` };
}

/**
 * Which of `identities` an endpoint-domain file's `registrations` names (the first of them it names), or why none:
 * not JSON, no list of the standard's shape, or no entry naming any.
 */
export function endpointDomainMatch(
  text: string,
  identities: readonly Erc8004Identity[],
): { ok: true; identity: Erc8004Identity } | { ok: false; reason: "invalid" | "missing"; message: string } {
  const parsed = parseJson(text);
  if (!parsed.ok) return { ok: false, reason: "invalid", message: parsed.reason };
  const checked = endpointDomainFileSchema.safeParse(parsed.json);
  if (!checked.success) {
    return {
      ok: false,
      reason: "invalid",
      message: `must hold "registrations": [{"agentRegistry": "eip155:<chainId>:<registry>", "agentId": <id>}, ...] (${issuesInWords(checked.error)})`,
    };
  }
  const identity = identities.find((candidate) => checked.data.registrations.some((entry) => namesIdentity(entry, candidate)));
  if (identity) return { ok: true, identity };
  const wanted = identities.map((i) => `agentRegistry ${agentRegistryOf(i)} with agentId ${i.agentId}`).join(", or ");
  return { ok: false, reason: "missing", message: `lists no registrations entry of ${wanted}` };
}

/** What the pages and the API show of a registration file: the four fields of the standard they show, and nothing else. */
export type ShownFields = {
  name: string | null;
  description: string | null;
  /** The image's URL, only when it is `https://`: what is shown is at least fetched over TLS. */
  image: string | null;
  /** An image was declared that is not `https://` (not shown). */
  imageNotHttps: boolean;
  services: Array<{ name: string; endpoint: string; version: string | null }>;
};

/**
 * The fields of `file` that are shown (none of a file that was not read), its image only when it is an https URL.
 * @example shownFields({ type, name: "a", image: "http://example.com/a.png" }) // { name: "a", image: null, imageNotHttps: true, ... }
 */
export function shownFields(file: RegistrationFile | null): ShownFields {
  const image = file?.image === undefined ? null : isHttpsUrl(file.image) ? file.image : null;
  return {
    name: file?.name ?? null,
    description: file?.description ?? null,
    image,
    imageNotHttps: file?.image !== undefined && image === null,
    services: (file?.services ?? []).map((s) => ({ name: s.name, endpoint: s.endpoint, version: s.version ?? null })),
  };
}

function isHttpsUrl(text: string): boolean {
  try {
    return new URL(text).protocol === "https:";
  } catch {
    return false;
  }
}
