/**
 * Keyset cursors, for every paged list (the directory, declared windows, an owner's agents, an agent's
 * proofs, penalties and score history, the audit log): a cursor names the key of a row (the last one
 * shown), never an offset, so a page follows the one before it while rows are added, and costs the
 * same however deep it is. To a client it is opaque text: the key's fields joined by `:`, base64url.
 */
import { InvalidInputError } from "../errors";

/** The fields of a key, in order. */
export type KeyFields = ReadonlyArray<string | number>;

/** Longest cursor text accepted. */
export const CURSOR_MAX_LENGTH = 200;

/**
 * The cursor of a key.
 * @example decodeKeyset(encodeKeyset([1767225600, "out_a"]), /^(\d+):(.+)$/) // ["1767225600", "out_a"]
 */
export function encodeKeyset(fields: KeyFields): string {
  return Buffer.from(fields.join(":")).toString("base64url");
}

/**
 * The fields of a cursor `encodeKeyset` made, as `pattern` (anchored, one group per field) captures
 * them; null for any other text (not base64url, another shape, or not the one spelling it encodes to).
 */
export function decodeKeyset(cursor: string, pattern: RegExp): string[] | null {
  if (cursor.length > CURSOR_MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const match = pattern.exec(text);
  if (!match || match[0] !== text || Buffer.from(text).toString("base64url") !== cursor) return null;
  return match.slice(1);
}

/**
 * The key a cursor from one list names, or 400 `invalid_cursor` naming the parameter.
 * @param parse the key of the decoded fields; null when they are not one of this list's keys
 */
export function parseKeyset<K>(cursor: string, pattern: RegExp, parse: (fields: string[]) => K | null): K {
  const fields = decodeKeyset(cursor, pattern);
  const key = fields === null ? null : parse(fields);
  if (key === null) throw new InvalidInputError("invalid_cursor", "cursor: not a cursor of this list; use the nextCursor of the previous page");
  return key;
}

/** One page of a list, and the cursor of the next (null on the last). */
export type KeysetPage<T> = { items: T[]; nextCursor: string | null };

/**
 * The page of `rows`, read as one more row than `limit`: that extra row tells a next page exists
 * without a count; the next page starts after the key of the last row kept.
 */
export function keysetPage<T>(rows: readonly T[], limit: number, keyOf: (row: T) => KeyFields): KeysetPage<T> {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? encodeKeyset(keyOf(items[items.length - 1])) : null };
}
