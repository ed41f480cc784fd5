/**
 * The one check every string a request carries passes before its route's schemas see it: text the
 * API can store and give back as it was sent. PostgreSQL's text and JSON cannot hold NUL (U+0000);
 * an unpaired surrogate (U+D800–U+DFFF) is not Unicode, so UTF-8 cannot encode it and it would be
 * stored as U+FFFD; and U+FFFD itself is what a body's invalid UTF-8 bytes (or a query's invalid
 * percent-escapes) decode to, so a request that holds one was not the text its sender meant.
 */

/** The problem of a string that breaks the rule, in the words of the 400 that names it. */
const NOT_TEXT = "must not contain NUL, unpaired surrogates or U+FFFD (invalid UTF-8)";

/** NUL and the replacement character; unpaired surrogates are found by `isWellFormed`. */
const FORBIDDEN_CHARACTER = /[\0\uFFFD]/;

/**
 * How deep a request's JSON may nest. The API's deepest body is an evidence object of a few
 * levels; a bound keeps every reader of a body (and this walk) far from any recursion limit.
 */
export const MAX_DEPTH = 32;

const isText = (s: string): boolean => s.isWellFormed() && !FORBIDDEN_CHARACTER.test(s);

/**
 * The first problem in `value` (a parsed JSON body, a query, path parameters or headers) as one
 * line naming the field, e.g. `body.name: must not contain NUL, ...`; null when every string in it,
 * object keys included, is storable text and it nests at most `MAX_DEPTH` levels. Iterative, one
 * regex test per string: no recursion, no re-serialisation.
 * @param where the part's name, which starts each field's name (`body`, `query`, `path`, `header`)
 */
export function textProblem(value: unknown, where: string): string | null {
  if (typeof value === "string") return isText(value) ? null : `${where}: ${NOT_TEXT}`;
  if (typeof value !== "object" || value === null) return null;
  const pending: Array<{ value: object; field: string; depth: number }> = [{ value, field: where, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (next.depth > MAX_DEPTH) return `${next.field}: nested deeper than ${MAX_DEPTH} levels`;
    const entries: Array<[string, unknown]> = Array.isArray(next.value)
      ? next.value.map((item, i) => [String(i), item])
      : Object.entries(next.value);
    for (const [key, item] of entries) {
      if (!isText(key)) return `${next.field}: a key ${NOT_TEXT}`;
      const field = `${next.field}.${key}`;
      if (typeof item === "string") {
        if (!isText(item)) return `${field}: ${NOT_TEXT}`;
      } else if (typeof item === "object" && item !== null) {
        pending.push({ value: item, field, depth: next.depth + 1 });
      }
    }
  }
  return null;
}
