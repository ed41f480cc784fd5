import { InvalidInputError } from "../../errors";
import { describe } from "../shape";

/** A1: risk levels. */
export const RISK_LEVELS = ["low", "medium", "high", "critical"] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];
/** A1: where a record comes from. */
export const RECORD_SOURCES = ["onchain", "self-reported"] as const;
export type RecordSource = (typeof RECORD_SOURCES)[number];

/** An A1 proof record. `blockNumber` and `logIndex` are present on on-chain records. */
export type ProofRecord = {
  txHash: string;
  executor: string;
  success: boolean;
  riskLevel: RiskLevel;
  policyViolations: number;
  verified: boolean;
  traceRoot: string;
  source: RecordSource;
  blockNumber?: number;
  logIndex?: number;
};

function recordError(index: number, record: Record<string, unknown>, field: string, expected: string, value: unknown): InvalidInputError {
  // txHash is checked first: when another field is wrong, it is a non-empty string.
  const tx = field === "txHash" ? "" : ` (txHash ${String(record.txHash).slice(0, 80)})`;
  return new InvalidInputError("invalid_record", `records[${index}].${field}: expected ${expected}, got ${describe(value)}${tx}`);
}

function isNonNegativeInteger(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

/**
 * Checks one A1 record; a record that breaks the shape is rejected, never dropped (A1).
 * Extra fields are allowed and ignored. The error names the record (index and txHash) and the field.
 * @throws InvalidInputError `invalid_record`, e.g. `records[3].riskLevel: expected low|medium|high|critical, got "extreme" (txHash 0xab…)`
 */
export function validateRecord(json: unknown, index: number): ProofRecord {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new InvalidInputError("invalid_record", `records[${index}]: expected an object, got ${describe(json)}`);
  }
  const r = json as Record<string, unknown>;
  if (typeof r.txHash !== "string" || r.txHash.length === 0) throw recordError(index, r, "txHash", "a non-empty string", r.txHash);
  if (typeof r.executor !== "string" || !r.executor.startsWith("did:"))
    throw recordError(index, r, "executor", "a DID string (did:...)", r.executor);
  if (typeof r.success !== "boolean") throw recordError(index, r, "success", "true|false", r.success);
  const risk = r.riskLevel;
  if (risk !== "low" && risk !== "medium" && risk !== "high" && risk !== "critical")
    throw recordError(index, r, "riskLevel", RISK_LEVELS.join("|"), risk);
  if (!isNonNegativeInteger(r.policyViolations)) throw recordError(index, r, "policyViolations", "a whole number >= 0", r.policyViolations);
  if (typeof r.verified !== "boolean") throw recordError(index, r, "verified", "true|false", r.verified);
  if (typeof r.traceRoot !== "string" || r.traceRoot.length === 0)
    throw recordError(index, r, "traceRoot", "a non-empty string", r.traceRoot);
  const source = r.source;
  if (source === "onchain") {
    if (!isNonNegativeInteger(r.blockNumber))
      throw recordError(index, r, "blockNumber", "a whole number >= 0 (on-chain record)", r.blockNumber);
    if (!isNonNegativeInteger(r.logIndex)) throw recordError(index, r, "logIndex", "a whole number >= 0 (on-chain record)", r.logIndex);
  } else if (source === "self-reported") {
    if (r.blockNumber !== undefined && r.blockNumber !== null && !isNonNegativeInteger(r.blockNumber))
      throw recordError(index, r, "blockNumber", "a whole number >= 0 or absent", r.blockNumber);
    if (r.logIndex !== undefined && r.logIndex !== null && !isNonNegativeInteger(r.logIndex))
      throw recordError(index, r, "logIndex", "a whole number >= 0 or absent", r.logIndex);
  } else {
    throw recordError(index, r, "source", RECORD_SOURCES.join("|"), source);
  }
  return r as unknown as ProofRecord;
}

/**
 * Checks the F1 input `{ "records": [...] }` and every record in it (A1).
 * @throws InvalidInputError `invalid_record` naming the first bad record and field.
 */
export function validateRecords(json: unknown): ProofRecord[] {
  if (typeof json !== "object" || json === null || Array.isArray(json) || !Array.isArray((json as { records?: unknown }).records)) {
    throw new InvalidInputError("invalid_record", `records: expected { "records": [ ... ] }, got ${describe(json)}`);
  }
  const records = (json as { records: unknown[] }).records;
  for (let i = 0; i < records.length; i++) validateRecord(records[i], i);
  return records as ProofRecord[];
}
