/** V6: proof kinds, in the order of the V6 table (the order documents and results list them in). */
export const PROOF_KINDS = ["github", "wallet", "domain", "erc8004"] as const;
export type ProofKind = (typeof PROOF_KINDS)[number];

/** Whether `kind` is one of the V6 proof kinds. */
export function isProofKind(kind: string): kind is ProofKind {
  return (PROOF_KINDS as readonly string[]).includes(kind);
}

/** V6: points for the claim itself. */
export const CLAIM_POINTS = 100;

/** V6 table: points per proof kind, whom a proof belongs to, and how often it is re-checked. */
export const IDENTITY_PROOFS: Readonly<Record<ProofKind, { points: number; belongsTo: "owner" | "agent"; recheckDays: number | null }>> = {
  github: { points: 30, belongsTo: "owner", recheckDays: 30 },
  wallet: { points: 30, belongsTo: "owner", recheckDays: null },
  domain: { points: 40, belongsTo: "agent", recheckDays: 7 },
  erc8004: { points: 50, belongsTo: "agent", recheckDays: 7 },
};

/** V6: the maximum Identity, claim plus one proof of each kind. */
export const IDENTITY_MAX = CLAIM_POINTS + PROOF_KINDS.reduce((sum, k) => sum + IDENTITY_PROOFS[k].points, 0);

/** The distinct kinds among `proofs`, in V6 table order (each kind counts once, V6). */
export function distinctProofKinds(proofs: Iterable<{ kind: ProofKind }>): ProofKind[] {
  const seen = new Set<ProofKind>();
  for (const p of proofs) seen.add(p.kind);
  return PROOF_KINDS.filter((k) => seen.has(k));
}

/**
 * V6: Identity of a claimed agent holding proofs of these kinds.
 * @example identityValue(["github", "erc8004"]) // 180
 */
export function identityValue(kinds: readonly ProofKind[]): number {
  let value = CLAIM_POINTS;
  for (const k of new Set(kinds)) value += IDENTITY_PROOFS[k].points;
  return value;
}
