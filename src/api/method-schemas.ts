/**
 * The method engine's documents as zod schemas, for the API's response declarations (and so the
 * OpenAPI document): a Vrai score's result (F2 `score`, V5–V10) and inputs document (V9), an SDK
 * Derived Score (F1) and its A1 records. Each `satisfies` the method's own type, and the handlers
 * hand the method's values to them, so a change to the engine's types that the schema does not
 * follow fails the type check.
 */
import { z } from "zod";
import {
  BANDS,
  FLAGS,
  METHOD_VERSIONS,
  PENALTY_CODES,
  PROOF_KINDS,
  RECORD_SOURCES,
  RISK_LEVELS,
  type DerivedResult,
  type MethodVersion,
  type ProofRecord,
  type ScoreInputs,
  type ScoreResult,
} from "../method";

const methodVersion = z.enum(METHOD_VERSIONS) satisfies z.ZodType<MethodVersion, MethodVersion>;
const day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/)
  .describe("a UTC day, YYYY-MM-DD");
const instant = z.string().describe("RFC 3339 UTC, to the second");
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/** V10: one day of the 30-day window, oldest first. */
export const windowDaySchema = z.object({
  day,
  checkins: z.number().int(),
  on_time: z.number().int(),
  coverage_s: z.number().int(),
  before_claim: z.boolean().describe("V2: the day ended at or before the latest claim: shown, never counted"),
});

/** F2 `score`: the result of a Vrai score (V5–V10), as the method engine computes it from its inputs. */
export const scoreResultSchema = z.object({
  scoreType: z.literal("vrai"),
  method: methodVersion,
  agent: z.string(),
  at: instant,
  total: z.number().int().describe("V8: the sum of the active components"),
  band: z.enum(BANDS),
  state: z.enum(["provisional", "established"]),
  components: z.object({
    identity: z.object({ value: z.number().int(), proofs: z.array(z.enum(PROOF_KINDS)) }).describe("V6"),
    reliability: z.object({ value: z.number(), creditS: z.number() }).describe("V5"),
    integrity: z
      .object({
        value: z.number().int(),
        penalties: z.array(
          z.object({ id: z.string(), code: z.enum(PENALTY_CODES), points: z.number().int(), addedAt: instant, expiresAt: instant }),
        ),
        shield: z.object({ active: z.literal(false) }),
      })
      .describe("V7"),
  }),
  window: z.array(windowDaySchema),
  sha256: hex64.describe("SHA-256 of the canonical inputs (V9)"),
}) satisfies z.ZodType<ScoreResult, ScoreResult>;

/** V9: the inputs document of a Vrai score, whose RFC 8785 bytes `GET /v1/scores/{id}/inputs` serves (fields: docs/inputs.md). */
export const scoreInputsSchema = z.object({
  scoreType: z.literal("vrai"),
  method: methodVersion,
  agent: z.string(),
  at: instant,
  claimed_at: instant,
  proofs: z.array(z.enum(PROOF_KINDS)),
  penalties: z.array(
    z.object({ id: z.string(), code: z.enum(PENALTY_CODES), points: z.number().int(), days: z.number().int(), added_at: instant }),
  ),
  days: z.array(
    z.object({
      day,
      checkins: z.number().int(),
      on_time: z.number().int(),
      credit_s: z.number(),
      coverage_s: z.number().int(),
      digest: hex64,
    }),
  ),
  other_checkin_days: z.number().int(),
}) satisfies z.ZodType<ScoreInputs, ScoreInputs>;

/** F1: an executor's SDK Derived Score (A3–A5). */
export const derivedResultSchema = z.object({
  scoreType: z.literal("sdk-derived"),
  score: z.number(),
  raw: z.number(),
  multiplier: z.number(),
  cap: z.number(),
  total: z.number(),
  verifiedCount: z.number().int(),
  components: z.object({ base: z.number(), volume: z.number(), riskBonus: z.number(), consistency: z.number() }),
  flags: z.array(z.enum(FLAGS)),
  interpretation: z.enum(["Untrusted", "Low trust", "Moderate trust", "High trust", "Very high trust"]),
}) satisfies z.ZodType<DerivedResult, DerivedResult>;

/** A1: a proof record; `blockNumber` and `logIndex` on on-chain records. */
export const proofRecordSchema = z.object({
  txHash: z.string(),
  executor: z.string(),
  success: z.boolean(),
  riskLevel: z.enum(RISK_LEVELS),
  policyViolations: z.number().int(),
  verified: z.boolean(),
  traceRoot: z.string(),
  source: z.enum(RECORD_SOURCES),
  blockNumber: z.number().int().optional(),
  logIndex: z.number().int().optional(),
}) satisfies z.ZodType<ProofRecord, ProofRecord>;
