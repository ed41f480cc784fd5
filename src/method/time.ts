import { InvalidInputError } from "../errors";

/** V1: seconds in a UTC day `[00:00:00, 24:00:00)`. */
export const DAY_S = 86_400;

/** V1: the window is the 30 complete UTC days before the day of `at`. */
export const WINDOW_DAYS = 30;

const RFC3339_UTC = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/;
const DAY_FORMAT = /^(\d{4})-(\d{2})-(\d{2})$/;

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

function assertSeconds(t: number, what: string): void {
  if (!Number.isSafeInteger(t)) throw new InvalidInputError("invalid_time", `${what}: expected whole Unix seconds, got ${t}`);
}

/**
 * UTC day of a Unix time (V1).
 * @example utcDay(0) // "1970-01-01"
 */
export function utcDay(t: number): string {
  assertSeconds(t, "time");
  return dayName(Math.floor(t / DAY_S));
}

/**
 * `YYYY-MM-DD` of a day number (days since 1970-01-01), by integer civil-calendar arithmetic
 * (H. Hinnant's `civil_from_days`): no Date allocation on the check-in path.
 */
export function dayName(dayNumber: number): string {
  let name = dayNames.get(dayNumber);
  if (name === undefined) {
    if (dayNames.size >= DAY_NAME_CACHE) dayNames.clear();
    name = civilDayName(dayNumber);
    dayNames.set(dayNumber, name);
  }
  return name;
}

// Day names are asked for over and over on the check-in path; a bounded memo of the pure function.
const DAY_NAME_CACHE = 4096;
const dayNames = new Map<number, string>();

function civilDayName(dayNumber: number): string {
  const z = dayNumber + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return `${String(y).padStart(4, "0")}-${pad2(m)}-${pad2(d)}`;
}

/**
 * Unix time of `YYYY-MM-DD 00:00:00Z`; rejects anything that is not a real calendar day.
 * @example dayStart("1970-01-02") // 86400
 */
export function dayStart(day: string): number {
  const m = DAY_FORMAT.exec(day);
  if (m === null) throw new InvalidInputError("invalid_day", `expected a day YYYY-MM-DD, got ${JSON.stringify(day)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  // Four-digit fields always give a finite time: what is no calendar day names another day.
  const t = ms / 1000;
  if (utcDay(t) !== day) throw new InvalidInputError("invalid_day", `not a calendar day: ${day}`);
  return t;
}

/** Index of the UTC day of `t` counted from 1970-01-01 (cheap day arithmetic for hot loops). */
export function dayNumber(t: number): number {
  return Math.floor(t / DAY_S);
}

/**
 * RFC 3339 UTC form of a Unix time, whole seconds (V1).
 * @example toRfc3339(86400) // "1970-01-02T00:00:00Z"
 */
export function toRfc3339(t: number): string {
  assertSeconds(t, "time");
  const d = new Date(t * 1000);
  return `${utcDay(t)}T${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}Z`;
}

/**
 * Parses the strict V1 form `YYYY-MM-DDTHH:MM:SSZ` (no offsets, no fractions) to Unix seconds.
 * @throws InvalidInputError `invalid_time` for any other form or an impossible date.
 * @example parseRfc3339("1970-01-02T00:00:00Z") // 86400
 */
export function parseRfc3339(s: string): number {
  const m = typeof s === "string" ? RFC3339_UTC.exec(s) : null;
  if (m === null) throw new InvalidInputError("invalid_time", `expected YYYY-MM-DDTHH:MM:SSZ, got ${JSON.stringify(s)}`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  // Fields of two and four digits always give a finite time: what is no valid time prints as another.
  const t = ms / 1000;
  if (toRfc3339(t) !== s) throw new InvalidInputError("invalid_time", `not a valid UTC time: ${s}`);
  return t;
}

/**
 * V1: the 30 window days `D-30 … D-1` of a score computed at `at`, oldest first.
 * @example windowDays(31 * 86400)[0] // "1970-01-02"
 */
export function windowDays(at: number): string[] {
  const today = dayNumber(at);
  const days: string[] = [];
  for (let d = today - WINDOW_DAYS; d < today; d++) days.push(dayName(d));
  return days;
}

/**
 * V9: when a claim made at `claimedAt` gets its first daily score: the daily recompute scores every agent claimed
 * by `D 00:00:00`, so it is the first 00:00 UTC at or after the claim (the claim itself gets a score at once).
 * @example firstDailyAt(Date.UTC(2026, 10, 2, 10) / 1000) // 2026-11-03T00:00:00Z, as Unix seconds
 */
export function firstDailyAt(claimedAt: number): number {
  return Math.ceil(claimedAt / DAY_S) * DAY_S;
}
