import { deriveScores, validateRecords, type DerivedResult, type ProofRecord } from "../method";

/**
 * The AVIP-TRU SDK Derived Score (METHOD part A) of every executor in a set of A1 records, by the
 * method engine itself. Records are validated first: a malformed one throws `invalid_record` naming it (A1).
 * The result is `sdk-derived`: it is never written to the Registry's network score (part N).
 * @returns one result per executor DID
 * @example
 * const records = [
 *   { txHash: "0x01", executor: "did:web:agent.example", success: true, riskLevel: "low", policyViolations: 0, verified: true,
 *     traceRoot: "0xab", source: "self-reported" },
 * ];
 * const { total, flags } = deriveScore(records)["did:web:agent.example"];
 */
export function deriveScore(records: readonly ProofRecord[] | readonly unknown[]): Record<string, DerivedResult> {
  return deriveScores(validateRecords({ records }));
}
