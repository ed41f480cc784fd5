/**
 * V6 Identity: the claim's points and the points of each kind of proof, as one method version's table
 * says (`MethodRules.identity`, src/method/score/methods.ts). A kind a later version adds is in that
 * version's table only, so it never changes a score, a maximum or a page of an earlier version.
 */
import { PROOF_KINDS, type ProofKind } from "./methods";

/** V6: points for the claim itself. */
export const CLAIM_POINTS = 100;

/** One row of a V6 table: the points of a proof of the kind, whom it belongs to, and how often it is re-checked (days; null: never). */
export type ProofRule = { readonly points: number; readonly belongsTo: "owner" | "agent"; readonly recheckDays: number | null };

/** A method version's V6 table: the kinds it counts, each with its rule. */
export type IdentityTable = Readonly<Partial<Record<ProofKind, ProofRule>>>;

/** The kinds `table` counts, in V6 table order. */
export function kindsOf(table: IdentityTable): ProofKind[] {
  return PROOF_KINDS.filter((kind) => table[kind] !== undefined);
}

/** V6: the maximum Identity under `table`, the claim plus one proof of each kind it counts. */
export function identityMax(table: IdentityTable): number {
  return kindsOf(table).reduce((sum, kind) => sum + (table[kind]?.points ?? 0), CLAIM_POINTS);
}

/** The distinct kinds among `proofs` that `table` counts, in V6 table order (each kind counts once, V6). */
export function distinctProofKinds(table: IdentityTable, proofs: Iterable<{ kind: ProofKind }>): ProofKind[] {
  const seen = new Set<ProofKind>();
  for (const p of proofs) seen.add(p.kind);
  return kindsOf(table).filter((k) => seen.has(k));
}

/**
 * V6: Identity of a claimed agent holding proofs of these kinds, under `table`.
 * @example identityValue(METHODS["0.2"].identity, ["github", "erc8004"]) // 180
 */
export function identityValue(table: IdentityTable, kinds: readonly ProofKind[]): number {
  let value = CLAIM_POINTS;
  for (const k of new Set(kinds)) value += table[k]?.points ?? 0;
  return value;
}
