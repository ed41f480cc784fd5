/**
 * Subjects several proof kinds share, in one canonical spelling so that challenges, evidence and
 * bindings compare as plain strings. Each kind's own subject is in its module (`./kinds`).
 */
import { getAddress, isAddress, type Address } from "viem";
import { proofError } from "./errors";

/** Lowercases a 20-byte hex address after checking it (any checksum case is accepted). @throws `proof_subject_invalid` */
export function normalizeAddress(input: string): Address {
  if (!isAddress(input, { strict: false })) throw proofError("proof_subject_invalid", `invalid address ${JSON.stringify(input)}`);
  return getAddress(input).toLowerCase() as Address;
}
