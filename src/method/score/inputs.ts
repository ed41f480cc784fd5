import type { DayAggregate } from "../days";
import { DAY_S, dayNumber, dayStart, parseRfc3339, toRfc3339, utcDay, windowDays } from "../time";
import { asArray, asInteger, asObject, asOneOf, asString, onlyKeys, shapeError } from "../shape";
import { InvalidInputError } from "../../errors";
import { distinctProofKinds, kindsOf } from "./identity";
import { PENALTY_CODES, PENALTY_DAYS, PENALTY_POINTS, isPenaltyActive, type Penalty, type PenaltyCode } from "./integrity";
import { METHOD_VERSIONS, methodRules, type MethodVersion, type ProofKind } from "./methods";

/** Facts the service (or replay) gathers about one agent to score it at `at` (V5–V10). */
export type ScoreFacts = {
  agent: string;
  method: MethodVersion;
  /** Unix seconds. */
  at: number;
  /** Latest claim (V2), Unix seconds, `<= at`. */
  claimedAt: number;
  /** Proofs active at `at` that count for this agent, owner-level ones included (V6). */
  proofs: ReadonlyArray<{ kind: ProofKind }>;
  /** Penalties of the agent; only those active at `at` reach the document (V7). */
  penalties: readonly Penalty[];
  /**
   * Every UTC day since the claim with counted check-ins arriving `<= at` (or coverage), any order; or only those from a
   * day on, with `earlierCheckinDays` counting the days before it that had check-ins.
   */
  days: readonly DayAggregate[];
  /**
   * Days of the claim before the window (V1) with counted check-ins that `days` leaves out, counted by the caller: they
   * count for the established state (V8) as days the document does not list. A store reading a long history counts
   * them where they are (issue #30). Default 0.
   */
  earlierCheckinDays?: number;
};

/** One window day of the inputs document (V5, V10); days with nothing are left out. */
export type InputDay = { day: string; checkins: number; on_time: number; credit_s: number; coverage_s: number; digest: string };

/** A penalty active at `at`, as the document keeps it (V7). */
export type InputPenalty = { id: string; code: PenaltyCode; points: number; days: number; added_at: string };

/**
 * The inputs document of a Vrai score (V9), canonicalised with RFC 8785 and hashed with SHA-256.
 * It is enough to recompute the result and stays a few KB: only window days with data are listed,
 * and the other days since the claim are a count (V8). Fields: docs/inputs.md.
 */
export type ScoreInputs = {
  scoreType: "vrai";
  method: MethodVersion;
  agent: string;
  at: string;
  claimed_at: string;
  proofs: ProofKind[];
  penalties: InputPenalty[];
  days: InputDay[];
  other_checkin_days: number;
};

const INPUT_KEYS = ["scoreType", "method", "agent", "at", "claimed_at", "proofs", "penalties", "days", "other_checkin_days"] as const;
const DAY_KEYS = ["day", "checkins", "on_time", "credit_s", "coverage_s", "digest"] as const;
const PENALTY_KEYS = ["id", "code", "points", "days", "added_at"] as const;
const HEX64 = /^[0-9a-f]{64}$/;
const CODE = "invalid_inputs";

let windowCache: { dayNumber: number; days: readonly string[] } | null = null;

/** V1 window days, memoised on the day of `at` (scoring many agents at the same instant is the common case). */
function cachedWindow(at: number): readonly string[] {
  const d = dayNumber(at);
  if (windowCache === null || windowCache.dayNumber !== d) windowCache = { dayNumber: d, days: windowDays(at) };
  return windowCache.days;
}

/**
 * Builds the inputs document of a score from the facts (V9): window days with data, oldest first;
 * a count of the other days since the claim with a check-in no later than `at` (V8, 0.2);
 * penalties active at `at`; distinct proof kinds.
 * @example buildScoreInputs({ agent: "a1", method: "0.2", at, claimedAt, proofs: [], penalties: [], days: [] })
 */
export function buildScoreInputs(facts: ScoreFacts): ScoreInputs {
  const rules = methodRules(facts.method);
  if (facts.claimedAt > facts.at) throw new InvalidInputError("invalid_inputs", `claimedAt ${facts.claimedAt} is after at ${facts.at}`);
  const window = cachedWindow(facts.at);
  const first = window[0];
  const last = window[window.length - 1];
  const today = utcDay(facts.at);
  const days: InputDay[] = [];
  const earlier = facts.earlierCheckinDays ?? 0;
  if (!Number.isSafeInteger(earlier) || earlier < 0)
    throw new InvalidInputError("invalid_inputs", `earlierCheckinDays must be a non-negative integer, got ${earlier}`);
  let otherDays = earlier;
  for (const d of facts.days) {
    if (d.day >= first && d.day <= last) {
      if (d.checkins > 0 || d.coverageS > 0) {
        days.push({ day: d.day, checkins: d.checkins, on_time: d.onTime, credit_s: d.creditS, coverage_s: d.coverageS, digest: d.digest });
      }
    } else if (d.day <= today && d.checkins > 0) {
      otherDays++;
    }
  }
  // One aggregate a day, one id a penalty: no two compare equal.
  days.sort((a, b) => (a.day < b.day ? -1 : 1));
  const penalties: InputPenalty[] = facts.penalties
    .filter((p) => isPenaltyActive(p, facts.at))
    .sort((a, b) => a.addedAt - b.addedAt || (a.id < b.id ? -1 : 1))
    .map((p) => ({ id: p.id, code: p.code, points: p.points, days: p.days, added_at: toRfc3339(p.addedAt) }));
  return {
    scoreType: "vrai",
    method: facts.method,
    agent: facts.agent,
    at: toRfc3339(facts.at),
    claimed_at: toRfc3339(facts.claimedAt),
    // V6 of the score's version: a kind it does not count is not among its inputs.
    proofs: distinctProofKinds(rules.identity, facts.proofs),
    penalties,
    days,
    other_checkin_days: otherDays,
  };
}

function asTime(value: unknown, path: string): number {
  const s = asString(CODE, value, path);
  try {
    return parseRfc3339(s);
  } catch {
    throw shapeError(CODE, path, "a time YYYY-MM-DDTHH:MM:SSZ", `, got ${JSON.stringify(s)}`);
  }
}

/**
 * Checks that a JSON value is a well-formed inputs document (V9), for `vrai score` and recompute.
 * Strict: unknown fields, unsorted or duplicate entries and days outside the window are rejected,
 * so one result has exactly one document. The method is checked first (`unknown_method`).
 * @throws InvalidInputError `unknown_method` or `invalid_inputs`, the message naming the field.
 */
export function validateScoreInputs(json: unknown): ScoreInputs {
  const doc = asObject(CODE, json, "inputs");
  if (!("method" in doc)) throw shapeError(CODE, "method", METHOD_VERSIONS.join("|"), ", missing");
  const kinds = kindsOf(methodRules(doc.method).identity);
  onlyKeys(CODE, doc, "inputs", INPUT_KEYS);
  for (const key of INPUT_KEYS) if (!(key in doc)) throw new InvalidInputError(CODE, `${key}: missing`);
  asOneOf(CODE, doc.scoreType, "scoreType", ["vrai"]);
  asString(CODE, doc.agent, "agent");
  const at = asTime(doc.at, "at");
  const claimedAt = asTime(doc.claimed_at, "claimed_at");
  if (claimedAt > at) throw new InvalidInputError(CODE, `claimed_at: expected no later than at (${doc.at}), got ${doc.claimed_at}`);

  const proofs = asArray(CODE, doc.proofs, "proofs");
  let previousKind = -1;
  proofs.forEach((kind, i) => {
    const k = kinds.indexOf(asOneOf(CODE, kind, `proofs[${i}]`, kinds));
    if (k <= previousKind) throw new InvalidInputError(CODE, `proofs[${i}]: expected distinct kinds in the order ${kinds.join(", ")}`);
    previousKind = k;
  });

  const ids = new Set<string>();
  let previousAdded = -Infinity;
  asArray(CODE, doc.penalties, "penalties").forEach((value, i) => {
    const path = `penalties[${i}]`;
    const p = asObject(CODE, value, path);
    onlyKeys(CODE, p, path, PENALTY_KEYS);
    const id = asString(CODE, p.id, `${path}.id`);
    asOneOf(CODE, p.code, `${path}.code`, PENALTY_CODES);
    asInteger(CODE, p.points, `${path}.points`, PENALTY_POINTS.min, PENALTY_POINTS.max);
    asInteger(CODE, p.days, `${path}.days`, PENALTY_DAYS.min, PENALTY_DAYS.max);
    const added = asTime(p.added_at, `${path}.added_at`);
    if (ids.has(id)) throw new InvalidInputError(CODE, `${path}.id: duplicate penalty id ${JSON.stringify(id)}`);
    if (added < previousAdded) throw new InvalidInputError(CODE, `${path}.added_at: expected penalties ordered by added_at`);
    ids.add(id);
    previousAdded = added;
  });

  const window = new Set(windowDays(at));
  let previousDay = "";
  asArray(CODE, doc.days, "days").forEach((value, i) => {
    const path = `days[${i}]`;
    const d = asObject(CODE, value, path);
    onlyKeys(CODE, d, path, DAY_KEYS);
    const day = asString(CODE, d.day, `${path}.day`);
    try {
      dayStart(day);
    } catch {
      throw shapeError(CODE, `${path}.day`, "a day YYYY-MM-DD", `, got ${JSON.stringify(day)}`);
    }
    if (!window.has(day)) throw new InvalidInputError(CODE, `${path}.day: ${day} is not in the window of ${doc.at} (V1)`);
    if (day <= previousDay) throw new InvalidInputError(CODE, `${path}.day: expected distinct days, oldest first`);
    previousDay = day;
    const checkins = asInteger(CODE, d.checkins, `${path}.checkins`);
    const onTime = asInteger(CODE, d.on_time, `${path}.on_time`, 0, checkins);
    const credit = asInteger(CODE, d.credit_s, `${path}.credit_s`);
    const coverage = asInteger(CODE, d.coverage_s, `${path}.coverage_s`, 0, DAY_S);
    const digest = asString(CODE, d.digest, `${path}.digest`, true);
    if (checkins === 0 ? digest !== "" : !HEX64.test(digest)) {
      throw shapeError(CODE, `${path}.digest`, checkins === 0 ? '"" for a day without check-ins' : "64 lowercase hex digits");
    }
    if (onTime === 0 && credit > 0) throw new InvalidInputError(CODE, `${path}.credit_s: expected 0 on a day without on-time check-ins`);
    if (checkins === 0 && coverage === 0) throw new InvalidInputError(CODE, `${path}: a day without check-ins or coverage is left out`);
    if (dayStart(day) + DAY_S <= claimedAt)
      throw new InvalidInputError(CODE, `${path}.day: ${day} ended before the claim and cannot hold check-ins (V2)`);
  });

  const span = dayNumber(at) - dayNumber(claimedAt) + 1;
  asInteger(CODE, doc.other_checkin_days, "other_checkin_days", 0, span);
  return doc as ScoreInputs;
}
