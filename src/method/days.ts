import type { CountedCheckin } from "./checkin";
import { DAY_S, dayNumber, utcDay } from "./time";
import { sha256Hex } from "./canonical";

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
  if (arrival <= prevArrival) return parts;
  for (let d = dayNumber(prevArrival); d * DAY_S < arrival; d++) {
    const from = Math.max(prevArrival, d * DAY_S);
    const to = Math.min(arrival, (d + 1) * DAY_S);
    if (to > from) parts.push({ day: utcDay(d * DAY_S), seconds: to - from });
  }
  return parts;
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
  return sha256Hex(dayDigestPreimage(prev === "" ? null : prev, checkin));
}

/** Read/write access to an agent's day aggregates (a Map, or a repository's rows loaded for the update). */
export type DayStore = {
  get(day: string): DayAggregate | undefined;
  set(day: string, aggregate: DayAggregate): unknown;
};

/**
 * Applies one counted check-in to the day aggregates, the same way for the service and replay:
 * the day of arrival gains the check-in, its credit and a digest link; when it is on time or
 * excused, coverage of `(previousArrival, arrival]` is added to each day it covers (V10).
 * Aggregates are replaced, never mutated, so a caller can diff what changed.
 * @param previousArrival arrival of the previous counted check-in since the claim, or null for the first
 * @returns the days written, in order
 */
export function applyCheckinToDays(days: DayStore, counted: CountedCheckin, previousArrival: number | null): DayAggregate[] {
  const written: DayAggregate[] = [];
  const covered = counted.onTime === true && previousArrival !== null ? coverageByDay(previousArrival, counted.arrival) : [];
  const arrivalDay = utcDay(counted.arrival);
  for (const part of covered) {
    if (part.day === arrivalDay) continue;
    const current = days.get(part.day) ?? emptyDay(part.day);
    const next = { ...current, coverageS: current.coverageS + part.seconds };
    days.set(part.day, next);
    written.push(next);
  }
  const current = days.get(arrivalDay) ?? emptyDay(arrivalDay);
  const ownCoverage = covered.length > 0 && covered[covered.length - 1].day === arrivalDay ? covered[covered.length - 1].seconds : 0;
  const next: DayAggregate = {
    day: arrivalDay,
    checkins: current.checkins + 1,
    onTime: current.onTime + (counted.onTime === true ? 1 : 0),
    creditS: current.creditS + counted.credit,
    coverageS: current.coverageS + ownCoverage,
    digest: nextDayDigest(current.digest, counted),
  };
  days.set(arrivalDay, next);
  written.push(next);
  return written;
}
