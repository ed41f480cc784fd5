/**
 * The request schemas several routes share: an instant and a day (V1), each a real calendar
 * instant or day within the bounds the API accepts, so that every route refuses the same things
 * with the same words.
 */
import { z } from "zod";
import { InvalidInputError } from "../errors";
import { dayStart, parseRfc3339 } from "../method";

/** The first instant the API takes: no Vrai record, claim or outage is older. */
export const EARLIEST_INSTANT = "2000-01-01T00:00:00Z";
/** The API takes instants before this one: a bound far past any real use, well inside every integer type that holds seconds. */
export const INSTANT_LIMIT = "2100-01-01T00:00:00Z";

/** Unix seconds of `s` read by `parse` (which throws InvalidInputError for what is not a real calendar instant), or null. */
function secondsOf(parse: (s: string) => number, s: string): number | null {
  try {
    return parse(s);
  } catch (error) {
    if (error instanceof InvalidInputError) return null;
    throw error;
  }
}

/**
 * Unix seconds of `s` (in the fixed-width form of the bounds, so that they compare as strings) read
 * by `parse` when it is a real instant within the bounds; otherwise null, the problem added to `context`.
 */
function boundedSeconds(parse: (s: string) => number, what: string, s: string, context: z.RefinementCtx): number | null {
  const [earliest, limit] = [EARLIEST_INSTANT.slice(0, s.length), INSTANT_LIMIT.slice(0, s.length)];
  const inBounds = s >= earliest && s < limit;
  const t = inBounds ? secondsOf(parse, s) : null;
  if (t === null)
    context.addIssue({
      code: "custom",
      message: inBounds ? `${s} is not a real UTC ${what}` : `${s} is not from ${earliest} to before ${limit}`,
    });
  return t;
}

/**
 * An instant (V1): RFC 3339 UTC, whole seconds, `YYYY-MM-DDTHH:MM:SSZ`, a real one (no 23:60, no
 * February 31st) from 2000-01-01 to before 2100-01-01; parsed to Unix seconds.
 * @example instantSchema.parse("2026-11-02T10:00:00Z") // 1793613600
 */
export const instantSchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, "expected an RFC 3339 UTC instant YYYY-MM-DDTHH:MM:SSZ (V1)")
  .transform((s, context) => boundedSeconds(parseRfc3339, "instant", s, context) ?? z.NEVER);

/**
 * A UTC day (V1) `YYYY-MM-DD`, a real calendar day from 2000-01-01 to 2099-12-31; kept as its name.
 * @example daySchema.parse("2026-11-02") // "2026-11-02"
 */
export const daySchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "expected a UTC day YYYY-MM-DD (V1)")
  .transform((day, context) => (boundedSeconds(dayStart, "day", day, context) === null ? z.NEVER : day));

/**
 * A positive integer in a path, written in decimal digits only (no sign, exponent, `0x`, space or leading zero:
 * `z.coerce.number()` alone reads `1e3` as 1000 and `0x10` as 16), at most `Number.MAX_SAFE_INTEGER`, the
 * largest a number holds exactly (a longer one would be rounded to another id); parsed to that number.
 * @example positiveDecimalSchema("a score id").parse("42") // 42
 */
export const positiveDecimalSchema = (what: string) =>
  z
    .string()
    .regex(/^[1-9][0-9]*$/, `expected ${what}: a positive integer in decimal digits`)
    .transform(Number)
    .pipe(z.number().max(Number.MAX_SAFE_INTEGER, `expected ${what} of at most ${Number.MAX_SAFE_INTEGER} (2^53 - 1)`));

/**
 * A stored score's id in a path (`/v1/scores/{id}`): `positiveDecimalSchema`, documented as the integer it is
 * (a path's integer is its decimal digits), so generated clients keep taking a number.
 */
export const scoreIdSchema = positiveDecimalSchema("a score id").meta({
  type: "integer",
  pattern: undefined,
  minimum: 1,
  maximum: Number.MAX_SAFE_INTEGER,
});
