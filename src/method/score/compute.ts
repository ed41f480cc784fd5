import { sha256Hex } from "../canonical";
import { canonicalScoreInputs } from "./canonical-inputs";
import { DAY_S, WINDOW_DAYS, dayNumber, parseRfc3339, toRfc3339, windowDays } from "../time";
import { identityMax, identityValue } from "./identity";
import { INTEGRITY_BASE, integrityValue, isPenaltyActive, penaltyExpiry, type PenaltyCode } from "./integrity";
import { methodRules, RELIABILITY_MAX, type MethodVersion, type ProofKind } from "./methods";
import type { ScoreInputs } from "./inputs";

/** V8: the five bands, named by their range only. */
export const BANDS = ["0-199", "200-399", "400-599", "600-799", "800-1000"] as const;
export type Band = (typeof BANDS)[number];

/**
 * V8: band of a total.
 * @example bandOf(200) // "200-399"
 */
export function bandOf(total: number): Band {
  return BANDS[Math.min(BANDS.length - 1, Math.max(0, Math.floor(total / 200)))];
}

/** One day of the V10 agent page. */
export type WindowDay = { day: string; checkins: number; on_time: number; coverage_s: number; before_claim: boolean };

/** A Vrai score in the F2 `score` shape. */
export type ScoreResult = {
  scoreType: "vrai";
  method: MethodVersion;
  agent: string;
  at: string;
  total: number;
  band: Band;
  state: "provisional" | "established";
  components: {
    identity: { value: number; proofs: ProofKind[] };
    reliability: { value: number; creditS: number };
    integrity: {
      value: number;
      penalties: Array<{ id: string; code: PenaltyCode; points: number; addedAt: string; expiresAt: string }>;
      shield: { active: false };
    };
  };
  window: WindowDay[];
  sha256: string;
};

function evaluate(inputs: ScoreInputs, sha256: string): ScoreResult {
  const rules = methodRules(inputs.method);
  const at = parseRfc3339(inputs.at);
  const claimedAt = parseRfc3339(inputs.claimed_at);
  const byDay = new Map(inputs.days.map((d) => [d.day, d]));
  let creditS = 0;
  let checkinDays = 0;
  const firstDayStart = (dayNumber(at) - WINDOW_DAYS) * DAY_S;
  const window: WindowDay[] = windowDays(at).map((day, i) => {
    const d = byDay.get(day);
    // V2, V10: days that ended at or before the latest claim are shown, marked, never counted.
    const beforeClaim = firstDayStart + (i + 1) * DAY_S <= claimedAt;
    if (d === undefined || beforeClaim) return { day, checkins: 0, on_time: 0, coverage_s: 0, before_claim: beforeClaim };
    creditS += d.credit_s;
    if (d.checkins > 0) checkinDays++;
    return { day, checkins: d.checkins, on_time: d.on_time, coverage_s: d.coverage_s, before_claim: false };
  });
  const active = inputs.penalties
    .map((p) => ({ ...p, addedAt: parseRfc3339(p.added_at) }))
    .filter((p) => isPenaltyActive({ addedAt: p.addedAt, days: p.days, revokedAt: null }, at));
  const identity = identityValue(rules.identity, inputs.proofs);
  const reliability = rules.reliability(creditS);
  const integrity = integrityValue(active.map((p) => p.points));
  // V8: total of the active components only (Shield is not active).
  const total = identity + reliability + integrity;
  return {
    scoreType: "vrai",
    method: rules.version,
    agent: inputs.agent,
    at: inputs.at,
    total,
    band: bandOf(total),
    state: rules.established({ windowDays: checkinDays, otherDays: inputs.other_checkin_days }) ? "established" : "provisional",
    components: {
      identity: { value: identity, proofs: [...inputs.proofs] },
      reliability: { value: reliability, creditS },
      integrity: {
        value: integrity,
        penalties: active.map((p) => ({
          id: p.id,
          code: p.code,
          points: p.points,
          addedAt: p.added_at,
          expiresAt: toRfc3339(penaltyExpiry(p)),
        })),
        shield: { active: false },
      },
    },
    window,
    sha256,
  };
}

/**
 * V8: the most a score of `version` can total (the active components only, Shield not active): its
 * V6 table's Identity maximum, full Reliability and Integrity without penalties.
 * @example reachableMax("0.2") // 500
 */
export function reachableMax(version: MethodVersion): number {
  return identityMax(methodRules(version).identity) + RELIABILITY_MAX + INTEGRITY_BASE;
}

/**
 * Canonicalises (RFC 8785) and hashes an inputs document, then computes its score with the
 * rules of its own method version (V9). Pure: no clock, no randomness, no I/O.
 * @throws InvalidInputError `unknown_method` for a version this library does not know.
 * @example const { result, canonical, sha256 } = scoreFromInputs(buildScoreInputs(facts))
 */
export function scoreFromInputs(inputs: ScoreInputs): { result: ScoreResult; canonical: string; sha256: string } {
  methodRules(inputs.method);
  const canonical = canonicalScoreInputs(inputs);
  const sha256 = sha256Hex(canonical);
  return { result: evaluate(inputs, sha256), canonical, sha256 };
}

/**
 * The score of an inputs document (V5–V10), `sha256` of its canonical bytes included.
 * @example computeScore(inputs).total // 200 for a newly claimed agent without proofs
 */
export function computeScore(inputs: ScoreInputs): ScoreResult {
  return scoreFromInputs(inputs).result;
}
