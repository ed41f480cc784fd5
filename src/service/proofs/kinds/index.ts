/**
 * The table of proof kinds (V6): one module per kind, and what every part of the service derives
 * from it. A new kind is its module in this folder and a line in `PROOF_KIND_MODULES`, with the kind
 * in the V6 table of the method version that counts it (src/method/score/methods.ts, which makes
 * `PROOF_KINDS` of every version's tables); the compiler then asks for nothing else.
 */
import { z } from "zod";
import { CURRENT_METHOD, kindsOf, METHODS, type ProofKind, type ProofRule } from "../../../method";
import { domain } from "./domain";
import { erc8004 } from "./erc8004";
import { github } from "./github";
import type { AnyProofKindModule, ProofKindModule } from "./kind";
import { wallet } from "./wallet";

export type { AnyProofKindModule, ProofInstructions, Publication, StoredProof } from "./kind";
export { erc8004Executor, erc8004RegistriesWithProofs } from "./erc8004";

/** Every kind's module, keyed by its kind. */
export const PROOF_KIND_MODULES = { github, wallet, domain, erc8004 } as const satisfies {
  [K in ProofKind]: AnyProofKindModule & { readonly kind: K };
};

/** What a verification of a proof of `K` proves: the JSON the store keeps for its re-checks. */
export type ProofOf<K extends ProofKind> =
  (typeof PROOF_KIND_MODULES)[K] extends ProofKindModule<K, infer _E, infer P, infer _S> ? P : never;

/** What a verification of any kind proves, told apart by `kind`. */
export type VerifiedProof = { [K in ProofKind]: ProofOf<K> }[ProofKind];

/** The module of `kind`, as code that works for every kind sees it. */
export const proofKindModule = (kind: ProofKind): AnyProofKindModule => PROOF_KIND_MODULES[kind] as AnyProofKindModule;

/** The kinds proofs are taken of now: those the current method version counts (V6), in its table's order (never none). */
export const OFFERED_PROOF_KINDS = kindsOf(METHODS[CURRENT_METHOD].identity) as [ProofKind, ...ProofKind[]];
if (OFFERED_PROOF_KINDS.length === 0) throw new Error(`method ${CURRENT_METHOD} counts no proof kind`);

/** The evidence schema of each offered kind, titled by its kind and described by its summary (one member each of the API's union). */
export const OFFERED_EVIDENCE = OFFERED_PROOF_KINDS.map((kind) => {
  const module = proofKindModule(kind);
  return module.evidence.meta({ title: `${kind} evidence`, description: module.summary });
}) as [z.ZodType, z.ZodType, ...z.ZodType[]];

/** The current method's V6 rule of `kind`: its points, whom it belongs to, its re-check days. */
export function currentProofRule(kind: ProofKind): ProofRule {
  const rule = METHODS[CURRENT_METHOD].identity[kind];
  if (rule === undefined) throw new Error(`method ${CURRENT_METHOD} counts no ${kind} proofs`);
  return rule;
}

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The environment variables of every kind (their fields of the configuration's schema), e.g. GITHUB_API_BASE_URL. */
export const PROOF_KIND_SETTINGS = Object.assign(
  {},
  ...Object.values(PROOF_KIND_MODULES).map((m: AnyProofKindModule) => m.settings),
) as UnionToIntersection<(typeof PROOF_KIND_MODULES)[ProofKind]["settings"]>;

/** The settings of `module` in `values` (the configuration, or a test's), checked and with their defaults. */
export function settingsOf(module: AnyProofKindModule, values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return z.object(module.settings).parse(values);
}

/** The offered kinds that belong to `who` (V6, current method), e.g. the agent-level ones. */
export const offeredKindsOf = (who: ProofRule["belongsTo"]): ProofKind[] =>
  OFFERED_PROOF_KINDS.filter((kind) => currentProofRule(kind).belongsTo === who);

/**
 * Kinds in running text: their nouns (`form` "noun") or titles, the last joined by `conjunction`.
 * @example kindsInWords(["github", "wallet", "domain"], "noun", "or") // "a GitHub account, a wallet or a domain"
 */
export function kindsInWords(kinds: readonly ProofKind[], form: "noun" | "title", conjunction: "and" | "or"): string {
  const words = kinds.map((kind) => proofKindModule(kind)[form]);
  return words.length < 2 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} ${conjunction} ${words[words.length - 1]}`;
}
