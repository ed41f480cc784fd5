import type { CountedCheckin } from "./checkin";
import { DAY_S, dayName, dayNumber, utcDay } from "./time";
import { sha256Hex } from "./canonical";
import { writeDecimal } from "./decimal";

/**
 * One agent's counted check-ins of one UTC day, kept incrementally (V5, V8, V10):
 * `checkins` and `onTime` and `creditS` belong to the day of arrival, `coverageS` to the days
 * each interval `(p.arrival, c.arrival]` covers, and `digest` chains the day's check-ins.
 */
export type DayAggregate = {
  day: string;
  /** V10 `checkins`: counted check-ins that arrived this day. */
  checkins: number;
  /** V10 `on_time`: those on time or excused. */
  onTime: number;
  /** V5: sum of the credits of the check-ins that arrived this day. */
  creditS: number;
  /** V10 `coverage_s`: seconds of this day inside intervals of on-time or excused check-ins. */
  coverageS: number;
  /** `nextDayDigest` chain over this day's counted check-ins in arrival order; "" for none. */
  digest: string;
};

/** An empty aggregate for `day` (a day that only receives coverage starts like this). */
export function emptyDay(day: string): DayAggregate {
  return { day, checkins: 0, onTime: 0, creditS: 0, coverageS: 0, digest: "" };
}

/**
 * V10: the seconds of the interval `(prevArrival, arrival]` falling in each UTC day, oldest first.
 * Day `d` holds `|(prev, arrival] ∩ [d 00:00, d+1 00:00)|`, so the parts sum to `arrival - prevArrival`.
 * @example coverageByDay(86_000, 87_000) // [{ day: "1970-01-01", seconds: 400 }, { day: "1970-01-02", seconds: 600 }]
 */
export function coverageByDay(prevArrival: number, arrival: number): Array<{ day: string; seconds: number }> {
  const parts: Array<{ day: string; seconds: number }> = [];
  for (let d = dayNumber(prevArrival); d * DAY_S < arrival; d++) {
    const seconds = secondsOfDayIn(d, prevArrival, arrival);
    if (seconds > 0) parts.push({ day: dayName(d), seconds });
  }
  return parts;
}

/** V10: `|(prevArrival, arrival] ∩ [d 00:00, d+1 00:00)|` for day number `d`, negative when they do not meet. */
function secondsOfDayIn(d: number, prevArrival: number, arrival: number): number {
  return Math.min(arrival, (d + 1) * DAY_S) - Math.max(prevArrival, d * DAY_S);
}

/**
 * The bytes one link of the day digest hashes (docs/inputs.md, "Day digest"):
 * `<previous digest or empty>|<arrival>|<next_heartbeat_s>|<on_time>|<excused>|<credit>` in UTF-8,
 * numbers in decimal Unix seconds, `on_time` as `true`, `false` or `null`.
 */
export function dayDigestPreimage(prev: string | null, c: CountedCheckin): string {
  return `${prev ?? ""}|${c.arrival}|${c.nextHeartbeatS}|${c.onTime}|${c.excused}|${c.credit}`;
}

/**
 * Next link of a day's SHA-256 hash chain over its counted check-ins in arrival order.
 * @param prev the digest after the day's previous check-in, or null (or "") for the first
 * @example nextDayDigest(null, { arrival: 0, nextHeartbeatS: 3600, onTime: null, excused: false, credit: 0 })
 * // sha256Hex("|0|3600|null|false|0")
 */
export function nextDayDigest(prev: string | null, checkin: CountedCheckin): string {
  const length = writePreimage(prev ?? "", checkin);
  return length < 0 ? sha256Hex(dayDigestPreimage(prev, checkin)) : sha256Hex(preimageView(length));
}

// Every counted check-in hashes a preimage (replay: hundreds of thousands a second). Joined as a
// string, its parts and the string were a quarter of the garbage of a replayed check-in, so the
// bytes of `dayDigestPreimage` are written into one buffer and hashed from a view of it. 256 bytes
// hold a 64-character digest and five fields of up to 17 characters (a negative safe integer).
const PREIMAGE = new Uint8Array(256);
/** `PREIMAGE_VIEWS[n]`: the first n bytes of PREIMAGE, made once per length. */
const PREIMAGE_VIEWS: Uint8Array[] = [];
const PIPE = 0x7c;

function preimageView(length: number): Uint8Array {
  PREIMAGE_VIEWS[length] ??= PREIMAGE.subarray(0, length);
  return PREIMAGE_VIEWS[length];
}

/** Writes `dayDigestPreimage(prev, c)` into PREIMAGE; -1 when a part is not ASCII or does not fit (never for a hex digest). */
function writePreimage(prev: string, c: CountedCheckin): number {
  let at = putAscii(0, prev);
  if (at >= 0) at = putNumber(at, c.arrival);
  if (at >= 0) at = putNumber(at, c.nextHeartbeatS);
  if (at >= 0) at = putAscii(at, c.onTime === null ? "|null" : c.onTime ? "|true" : "|false");
  if (at >= 0) at = putAscii(at, c.excused ? "|true" : "|false");
  if (at >= 0) at = putNumber(at, c.credit);
  return at;
}

/** Writes `text` at `at` if it is ASCII (a byte a character, as in UTF-8) and fits; returns the end, or -1. */
function putAscii(at: number, text: string): number {
  if (at + text.length > PREIMAGE.length) return -1;
  for (let k = 0; k < text.length; k++) {
    const code = text.charCodeAt(k);
    if (code > 0x7f) return -1;
    PREIMAGE[at + k] = code;
  }
  return at + text.length;
}

/** Writes `|` and `n` as a template literal prints it; returns the end, or -1. */
function putNumber(at: number, n: number): number {
  if (at >= PREIMAGE.length) return -1;
  PREIMAGE[at] = PIPE;
  const end = writeDecimal(PREIMAGE, at + 1, n);
  // Not a safe integer (a fraction, say): as text, which fits or not.
  return end >= 0 ? end : putAscii(at, `|${n}`);
}

/** Read/write access to an agent's day aggregates (a Map, or a repository's rows loaded for the update). */
export type DayStore = {
  get(day: string): DayAggregate | undefined;
  set(day: string, aggregate: DayAggregate): unknown;
};

/**
 * What one counted check-in adds to one day's aggregate: `checkins`, `onTime`, `creditS` and
 * `coverageS` are added to the day's values; `digest`, when not null, replaces the day's digest
 * (only the day of arrival gets a new link). A store applies deltas to whatever the day holds at
 * commit, so it never has to read the aggregates first.
 */
export type DayDelta = { day: string; checkins: number; onTime: number; creditS: number; coverageS: number; digest: string | null };

/**
 * The changes one counted check-in makes to the day aggregates, the same for the service and
 * replay: the day of arrival gains the check-in, its credit and a digest link; when it is on time
 * or excused, coverage of `(previousArrival, arrival]` is added to each day it covers (V10).
 * @param previousArrival arrival of the previous counted check-in since the claim, or null for the first
 * @param arrivalDayDigest the digest of the day of arrival so far ("" when no check-in of the claim arrived that day yet)
 * @returns one delta per day touched, oldest first; the last is the day of arrival
 */
export function checkinDayDeltas(counted: CountedCheckin, previousArrival: number | null, arrivalDayDigest: string): DayDelta[] {
  const { arrival } = counted;
  const arrivalDay = dayNumber(arrival);
  const covers = counted.onTime === true && previousArrival !== null;
  // The days before the day of arrival that the interval covers; usually none (an hourly check-in
  // rarely spans midnight), so the array is made only when one is found: replay decides hundreds of
  // thousands of check-ins a second, where each allocation counts.
  let deltas: DayDelta[] | null = null;
  if (covers) {
    // Each day from the previous arrival's to the one before the arrival's holds some of (prev, arrival]:
    // the rest of the first, then whole days.
    for (let d = dayNumber(previousArrival); d < arrivalDay; d++) {
      deltas ??= [];
      deltas.push({
        day: dayName(d),
        checkins: 0,
        onTime: 0,
        creditS: 0,
        coverageS: secondsOfDayIn(d, previousArrival, arrival),
        digest: null,
      });
    }
  }
  const arrivalDelta: DayDelta = {
    day: dayName(arrivalDay),
    checkins: 1,
    onTime: counted.onTime === true ? 1 : 0,
    creditS: counted.credit,
    // Never negative: previousArrival < arrival. Zero for an arrival exactly at midnight, whose interval ends the day before.
    coverageS: covers ? secondsOfDayIn(arrivalDay, previousArrival, arrival) : 0,
    digest: nextDayDigest(arrivalDayDigest, counted),
  };
  if (deltas === null) return [arrivalDelta];
  deltas.push(arrivalDelta);
  return deltas;
}

/**
 * Applies day deltas to aggregates held in memory. Aggregates are replaced, never mutated, so a
 * caller can diff what changed.
 * @returns the days written, in the deltas' order
 */
export function applyDayDeltas(days: DayStore, deltas: readonly DayDelta[]): DayAggregate[] {
  const written: DayAggregate[] = [];
  for (const delta of deltas) {
    const current = days.get(delta.day) ?? emptyDay(delta.day);
    const next: DayAggregate = {
      day: delta.day,
      checkins: current.checkins + delta.checkins,
      onTime: current.onTime + delta.onTime,
      creditS: current.creditS + delta.creditS,
      coverageS: current.coverageS + delta.coverageS,
      digest: delta.digest ?? current.digest,
    };
    days.set(delta.day, next);
    written.push(next);
  }
  return written;
}

/**
 * Applies one counted check-in to day aggregates held in memory (`checkinDayDeltas` then `applyDayDeltas`).
 * @param previousArrival arrival of the previous counted check-in since the claim, or null for the first
 * @returns the days written, in order
 */
export function applyCheckinToDays(days: DayStore, counted: CountedCheckin, previousArrival: number | null): DayAggregate[] {
  return applyDayDeltas(days, checkinDayDeltas(counted, previousArrival, days.get(utcDay(counted.arrival))?.digest ?? ""));
}
