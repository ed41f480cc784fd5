/**
 * What Vrai gives an ERC-8004 Reputation Registry for a daily score (issue #27), and the off-chain feedback file behind
 * it. Two feedbacks a score, with the tags and units of the standard's own examples:
 *
 * - `vraiScore`: the Vrai total (V8), decimals 0, `tag2` the method version;
 * - `uptime`: Reliability's coverage of the last 30 UTC days (V5: `min(1, S / 2,592,000)` of the credit sum `S`) in
 *   hundredths of a percent, rounded down (never a coverage the agent did not reach), decimals 2, `tag2` `30d`.
 *
 * The file holds the standard's MUST fields (`agentRegistry`, `agentId`, `clientAddress`, `createdAt`, `value`,
 * `valueDecimals`), its optional `tag1`, `tag2` and `endpoint`, and Vrai's own: `scoreType`, the method, the Vrai agent
 * and score ids, the score's day, the SHA-256 of its inputs (V9), the day's Merkle root and its anchor (A6), and for
 * `uptime` the credit sum. Its bytes are its RFC 8785 form, so they are a pure function of its fields; `feedbackHash`
 * is their keccak256 (the standard's rule for a URI that is not content-addressed).
 */
import { getAddress, isAddress, keccak256, type Address, type Hex } from "viem";
import { z } from "zod";
import { InvalidInputError } from "../errors";
import { canonicalJson, RELIABILITY_FULL_S } from "../method";

/** `tag1` of the Vrai total. */
export const VRAI_SCORE_TAG = "vraiScore";
/** `tag1` of Reliability's coverage, the standard's `uptime`. */
export const UPTIME_TAG = "uptime";
/** `tag2` of `uptime`: the window it covers (V1: the 30 complete UTC days before the score's). */
export const UPTIME_WINDOW = "30d";
/** The tags Vrai gives, in the order it gives them. */
export const FEEDBACK_TAGS = [VRAI_SCORE_TAG, UPTIME_TAG] as const;
export type FeedbackTag = (typeof FEEDBACK_TAGS)[number];

/** Hundredths of a percent of the window covered by on-time check-ins, rounded down: 10,000 is every second of it. */
export function uptimeHundredths(creditS: number): number {
  return Math.floor((10_000 * Math.min(Math.max(0, creditS), RELIABILITY_FULL_S)) / RELIABILITY_FULL_S);
}

/** An ERC-8004 identity: a token of an identity registry on a chain. */
export type FeedbackIdentity = { chainId: number; registry: Address; tokenId: bigint };

/** The daily score a feedback is about, and where its day's root is anchored. */
export type FeedbackScore = {
  vraiAgentId: string;
  scoreId: number;
  day: string;
  method: string;
  /** SHA-256 of the score's canonical inputs, lowercase hex. */
  inputsSha256: string;
  total: number;
  /** V5's credit sum of the score's window. */
  creditS: number;
  dayRoot: Hex;
  anchor: { chainId: number; registry: Address; txHash: Hex };
};

/** One feedback as given on chain, with its file's bytes and their keccak256. */
export type FeedbackOf = {
  tag1: FeedbackTag;
  tag2: string;
  value: number;
  valueDecimals: number;
  endpoint: string;
  file: Uint8Array;
  fileHash: Hex;
};

/** The standard's account id of `address` on `chainId` (CAIP-10), as its MUST fields spell it. */
export const caip10 = (chainId: number, address: Address): string => `eip155:${chainId}:${getAddress(address)}`;

/** A token id as JSON: a number while it is exact, its decimal digits beyond. */
const tokenIdJson = (tokenId: bigint): number | string =>
  tokenId <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(tokenId) : tokenId.toString();

/**
 * The value of `tag` for `score`, with its decimals and `tag2`.
 * @example feedbackValue("uptime", { total: 230, method: "0.2", creditS: 2_592_000 }) // { value: 10000, valueDecimals: 2, tag2: "30d" }
 */
export function feedbackValue(
  tag: FeedbackTag,
  score: Pick<FeedbackScore, "total" | "method" | "creditS">,
): { value: number; valueDecimals: number; tag2: string } {
  return tag === VRAI_SCORE_TAG
    ? { value: score.total, valueDecimals: 0, tag2: score.method }
    : { value: uptimeHundredths(score.creditS), valueDecimals: 2, tag2: UPTIME_WINDOW };
}

/**
 * The feedback of `tag` a client gives `identity` for `score` at `createdAt` (Unix seconds), `endpoint` the agent's page.
 * @example const { file, fileHash } = vraiFeedback("vraiScore", { identity, client, createdAt, endpoint, score });
 */
export function vraiFeedback(
  tag: FeedbackTag,
  given: { identity: FeedbackIdentity; client: Address; createdAt: number; endpoint: string; score: FeedbackScore },
): FeedbackOf {
  const { identity, score } = given;
  const { value, valueDecimals, tag2 } = feedbackValue(tag, score);
  const json = {
    agentRegistry: caip10(identity.chainId, identity.registry),
    agentId: tokenIdJson(identity.tokenId),
    clientAddress: caip10(identity.chainId, given.client),
    createdAt: new Date(given.createdAt * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    value,
    valueDecimals,
    tag1: tag,
    tag2,
    endpoint: given.endpoint,
    scoreType: "vrai",
    method: score.method,
    vraiAgentId: score.vraiAgentId,
    scoreId: score.scoreId,
    day: score.day,
    inputsSha256: score.inputsSha256,
    dayRoot: score.dayRoot,
    anchor: { chainId: score.anchor.chainId, registry: getAddress(score.anchor.registry), txHash: score.anchor.txHash },
    ...(tag === UPTIME_TAG ? { creditS: score.creditS } : {}),
  } satisfies z.input<typeof feedbackFileSchema>;
  const file = new TextEncoder().encode(canonicalJson(json));
  return { tag1: tag, tag2, value, valueDecimals, endpoint: given.endpoint, file, fileHash: keccak256(file) };
}

const caip10Schema = z.string().regex(/^eip155:[1-9][0-9]*:0x[0-9a-fA-F]{40}$/, "an eip155:<chainId>:<address> account");
const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/, "32 bytes of lowercase hex");
const addressSchema = z.string().refine((value) => isAddress(value), "an address");

/** A Vrai feedback file: the standard's fields Vrai writes and its own; other fields are kept. */
export const feedbackFileSchema = z.looseObject({
  agentRegistry: caip10Schema,
  agentId: z.union([z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER), z.string().regex(/^(0|[1-9][0-9]{0,77})$/)]),
  clientAddress: caip10Schema,
  createdAt: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, "an RFC 3339 time in UTC"),
  value: z.number().int(),
  valueDecimals: z.number().int().min(0).max(18),
  tag1: z.enum(FEEDBACK_TAGS),
  tag2: z.string(),
  endpoint: z.string(),
  scoreType: z.literal("vrai"),
  method: z.string(),
  vraiAgentId: z.string(),
  scoreId: z.number().int().positive(),
  day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a day, YYYY-MM-DD"),
  inputsSha256: z.string().regex(/^[0-9a-f]{64}$/, "a SHA-256, 64 lowercase hex digits"),
  dayRoot: hex32,
  anchor: z.object({ chainId: z.number().int().positive(), registry: addressSchema, txHash: hex32 }),
  creditS: z.number().int().nonnegative().optional(),
});

/** A feedback file as read. */
export type FeedbackFile = z.output<typeof feedbackFileSchema>;

/**
 * Reads a feedback file's bytes: UTF-8 JSON of a Vrai feedback.
 * @throws InvalidInputError `feedback_file_invalid` naming what is wrong
 * @example const file = parseFeedbackFile(new Uint8Array(await response.arrayBuffer()));
 */
export function parseFeedbackFile(bytes: Uint8Array): FeedbackFile {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    throw new InvalidInputError("feedback_file_invalid", `not UTF-8 JSON: ${(error as Error).message}`, { cause: error });
  }
  const parsed = feedbackFileSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".") || "(file)"}: ${i.message}`);
    throw new InvalidInputError("feedback_file_invalid", `not a Vrai feedback file: ${problems.join("; ")}`, { cause: parsed.error });
  }
  return parsed.data;
}
