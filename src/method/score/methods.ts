import { InvalidInputError } from "../../errors";
import type { IdentityTable, ProofRule } from "./identity";

/** V5: seconds in 30 days, the credit sum that earns full Reliability. */
export const RELIABILITY_FULL_S = 2_592_000;
/** V5: the maximum Reliability. */
export const RELIABILITY_MAX = 150;
/** V8: distinct UTC days with a counted check-in that make a score established. */
export const ESTABLISHED_DAYS = 14;

export type MethodVersion = "0.1" | "0.2";

/** What the state rule of V8 looks at. */
export type EstablishedFacts = {
  /** Window days (V1) with at least one counted check-in since the claim. */
  windowDays: number;
  /** Other days since the claim with a counted check-in arriving no later than `at`. */
  otherDays: number;
};

/** The rules that differ between method versions, with their entry of "Changes to the method". */
export type MethodRules = {
  version: MethodVersion;
  /** Publication date of the version (seed, "Changes to the method"). */
  published: string;
  /** What changed and why, as published. */
  changes: string;
  /** V6: the proof kinds this version counts, with their points, whom they belong to and their re-check days. */
  identity: IdentityTable;
  /** V5: Reliability from the credit sum `S` of the window. */
  reliability(creditS: number): number;
  /** V8: whether the score is established. */
  established(facts: EstablishedFacts): boolean;
};

/** V6 table of methods 0.1 and 0.2 (seed, "Identity"). */
const IDENTITY_V6 = Object.freeze({
  github: { points: 30, belongsTo: "owner", recheckDays: 30 },
  wallet: { points: 30, belongsTo: "owner", recheckDays: null },
  domain: { points: 40, belongsTo: "agent", recheckDays: 7 },
  erc8004: { points: 50, belongsTo: "agent", recheckDays: 7 },
} as const satisfies Record<string, ProofRule>);

/** Every proof kind a method version knows: the kinds of every version's V6 table (a version that adds a kind adds it here). */
export type ProofKind = keyof typeof IDENTITY_V6;

function cappedCredit(creditS: number): number {
  return Math.min(Math.max(0, creditS), RELIABILITY_FULL_S);
}

/**
 * Every method version, so a stored score recomputes with its own rules (V9).
 * Shared rules (V7 Integrity, V8 total and bands, V10 window) are the same in both, as is their V6 table.
 */
export const METHODS: Readonly<Record<MethodVersion, MethodRules>> = {
  "0.1": {
    version: "0.1",
    published: "2026-10-23",
    changes: "The first method.",
    identity: IDENTITY_V6,
    // V5, method 0.1: floor(150 * min(1, S / 2592000)).
    reliability: (creditS) => Math.floor((RELIABILITY_MAX * cappedCredit(creditS)) / RELIABILITY_FULL_S),
    // V8, method 0.1: established only while 14 of the window's days had a counted check-in.
    established: (f) => f.windowDays >= ESTABLISHED_DAYS,
  },
  "0.2": {
    version: "0.2",
    published: "2026-10-24",
    changes:
      "Reliability rounds to the nearest whole point instead of rounding down. Credits add up to the time between check-ins, " +
      "so an agent that never misses one sums to a few seconds more or less than 2,592,000, and rounding down moved it " +
      "between 149 and 150 from one day to the next. A score that is established now stays established until the agent's next claim.",
    identity: IDENTITY_V6,
    // V5, method 0.2: min(150, floor((300*S + 2592000) / (2*2592000))), i.e. round half up.
    reliability: (creditS) =>
      Math.min(RELIABILITY_MAX, Math.floor((2 * RELIABILITY_MAX * cappedCredit(creditS) + RELIABILITY_FULL_S) / (2 * RELIABILITY_FULL_S))),
    // V8, method 0.2: 14 distinct days since the claim, up to `at`; the count only grows until
    // the next claim, which is what keeps an established score established.
    established: (f) => f.windowDays + f.otherDays >= ESTABLISHED_DAYS,
  },
};

/** The version new scores are computed with. */
export const CURRENT_METHOD: MethodVersion = "0.2";

/** Versions newest first, for the method page. */
export const METHOD_VERSIONS: readonly [MethodVersion, ...MethodVersion[]] = ["0.2", "0.1"];

/**
 * Every proof kind a method version knows, in the order versions added them (the oldest version's
 * table first): stored forms list kinds by their index here, so a kind a later version adds comes last.
 */
export const PROOF_KINDS = [...new Set(METHOD_VERSIONS.toReversed().flatMap((version) => Object.keys(METHODS[version].identity)))] as [
  ProofKind,
  ...ProofKind[],
];

/** Narrows a version string. */
export function isMethodVersion(version: unknown): version is MethodVersion {
  return typeof version === "string" && Object.hasOwn(METHODS, version);
}

/**
 * The rules of one method version.
 * @throws InvalidInputError `unknown_method` for a version this library does not know.
 * @example methodRules("0.2").reliability(2_591_990) // 150
 */
export function methodRules(version: unknown): MethodRules {
  if (!isMethodVersion(version)) {
    throw new InvalidInputError(
      "unknown_method",
      `method: unknown method version ${JSON.stringify(version)} (known: ${METHOD_VERSIONS.join(", ")})`,
    );
  }
  return METHODS[version];
}
