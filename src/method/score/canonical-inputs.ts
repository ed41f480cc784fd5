import { canonicalJson } from "../canonical";
import type { InputDay, InputPenalty, ScoreInputs } from "./inputs";

// RFC 8785 orders members by UTF-16 code units; these are the document's keys in that order.
const INPUT_KEYS = ["agent", "at", "claimed_at", "days", "method", "other_checkin_days", "penalties", "proofs", "scoreType"];
const DAY_KEYS = ["checkins", "coverage_s", "credit_s", "day", "digest", "on_time"];
const PENALTY_KEYS = ["added_at", "code", "days", "id", "points"];

function hasExactKeys(obj: object, sortedKeys: readonly string[]): boolean {
  const keys = Object.keys(obj);
  if (keys.length !== sortedKeys.length) return false;
  for (const k of sortedKeys) if (!Object.hasOwn(obj, k)) return false;
  return true;
}

/** Text JSON writes as it is between quotes: printable ASCII but `"` and `\\` (days, digests, ids, times). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Thrown inside `canonicalOfEngineShape` at a value it does not write itself. */
class OffShape extends Error {}

function str(s: string): string {
  if (typeof s !== "string") throw new OffShape();
  // Most of a document's texts are plain (a day's date and digest): quoted as they are, without JSON.stringify (issue #30).
  if (PLAIN.test(s)) return `"${s}"`;
  // String.prototype.isWellFormed (Node >= 20) is missing from the ES2023 lib typings.
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) throw new OffShape();
  return JSON.stringify(s);
}

function day(d: InputDay): string {
  return (
    `{"checkins":${d.checkins},"coverage_s":${d.coverage_s},"credit_s":${d.credit_s},` +
    `"day":${str(d.day)},"digest":${str(d.digest)},"on_time":${d.on_time}}`
  );
}

function penalty(p: InputPenalty): string {
  return `{"added_at":${str(p.added_at)},"code":${str(p.code)},"days":${p.days},"id":${str(p.id)},"points":${p.points}}`;
}

function isIntegerField(...values: unknown[]): boolean {
  for (const v of values) if (!Number.isSafeInteger(v)) return false;
  return true;
}

/**
 * RFC 8785 bytes of an inputs document of the shape the engine writes, written directly (the generic serialiser
 * walks every value of the daily recompute's documents generically); null for anything off that shape (extra or
 * missing keys, numbers that are not safe integers, lone surrogates), which `canonicalScoreInputs` leaves to
 * `canonicalJson`. Property tests check that it writes every document the engine builds, as `canonicalJson` does.
 */
export function canonicalOfEngineShape(inputs: ScoreInputs): string | null {
  if (!hasExactKeys(inputs, INPUT_KEYS) || !isIntegerField(inputs.other_checkin_days)) return null;
  try {
    const days: string[] = [];
    for (const d of inputs.days) {
      if (!hasExactKeys(d, DAY_KEYS) || !isIntegerField(d.checkins, d.coverage_s, d.credit_s, d.on_time)) return null;
      days.push(day(d));
    }
    const penalties: string[] = [];
    for (const p of inputs.penalties) {
      if (!hasExactKeys(p, PENALTY_KEYS) || !isIntegerField(p.days, p.points)) return null;
      penalties.push(penalty(p));
    }
    const proofs = inputs.proofs.map(str).join(",");
    return (
      `{"agent":${str(inputs.agent)},"at":${str(inputs.at)},"claimed_at":${str(inputs.claimed_at)},"days":[${days.join(",")}],` +
      `"method":${str(inputs.method)},"other_checkin_days":${inputs.other_checkin_days},"penalties":[${penalties.join(",")}],` +
      `"proofs":[${proofs}],"scoreType":${str(inputs.scoreType)}}`
    );
  } catch {
    // OffShape, or a value of another type where a list is (a list of days that is not one): canonicalJson's to write or refuse.
    return null;
  }
}

/** RFC 8785 bytes of an inputs document (V9): `canonicalOfEngineShape`'s, or `canonicalJson`'s for a document off that shape. */
export function canonicalScoreInputs(inputs: ScoreInputs): string {
  return canonicalOfEngineShape(inputs) ?? canonicalJson(inputs);
}
