/**
 * Keyset cursors, for every paged list (the directory, declared windows, an owner's agents, an agent's
 * proofs, penalties and score history, the audit log): a cursor names the key of a row (the last one
 * shown), never an offset, so a page follows the one before it while rows are added, and costs the
 * same however deep it is. A cursor also names its list (issue #33): the kind of list and, for a list
 * of one agent's or one owner's rows or of one filter's, a short digest of whose, so that any other
 * list refuses it with a 400 instead of paging from a key that is not one of its own. To a client it
 * is opaque text: the list and the key's fields joined by `:`, base64url.
 */
import crypto from "node:crypto";
import { InvalidInputError } from "../errors";

/** The fields of a key, in order. */
export type KeyFields = ReadonlyArray<string | number>;

/** Longest cursor text accepted. */
export const CURSOR_MAX_LENGTH = 200;

/** A paged list a cursor belongs to: its kind (`penalties`) and whose rows it shows (an agent id, an owner id, a filter), if not everyone's. */
export type CursorList = { readonly kind: string; readonly of?: string };

/** The name of a list in its cursors: the kind, then 8 base64url characters of the SHA-256 of whose rows it shows. */
function listName(list: CursorList): string {
  if (list.of === undefined) return list.kind;
  return `${list.kind}.${crypto.createHash("sha256").update(list.of).digest("base64url").slice(0, 8)}`;
}

/**
 * The cursor of a key of `list`.
 * @example decodeKeyset(encodeKeyset({ kind: "outages" }, [1767225600, "out_a"]), { kind: "outages" }, /^(\d+):(.+)$/) // ["1767225600", "out_a"]
 */
export function encodeKeyset(list: CursorList, fields: KeyFields): string {
  return Buffer.from([listName(list), ...fields].join(":")).toString("base64url");
}

/**
 * The fields of a cursor `encodeKeyset` made for `list`, as `pattern` (anchored, one group per field)
 * captures them; null for any other text (not base64url, another list's, another shape, or not the
 * one spelling it encodes to).
 */
export function decodeKeyset(cursor: string, list: CursorList, pattern: RegExp): string[] | null {
  if (cursor.length > CURSOR_MAX_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const prefix = `${listName(list)}:`;
  if (!text.startsWith(prefix) || Buffer.from(text).toString("base64url") !== cursor) return null;
  const key = text.slice(prefix.length);
  const match = pattern.exec(key);
  if (!match || match[0] !== key) return null;
  return match.slice(1);
}

/**
 * The key a cursor of `list` names, or 400 `invalid_cursor` naming the parameter.
 * @param parse the key of the decoded fields; null when they are not one of this list's keys
 */
export function parseKeyset<K>(cursor: string, list: CursorList, pattern: RegExp, parse: (fields: string[]) => K | null): K {
  const fields = decodeKeyset(cursor, list, pattern);
  const key = fields === null ? null : parse(fields);
  if (key === null)
    throw new InvalidInputError("invalid_cursor", "cursor: not a cursor of this list; use the nextCursor of the previous page");
  return key;
}

/** One page of a list, and the cursor of the next (null on the last). */
export type KeysetPage<T> = { items: T[]; nextCursor: string | null };

/**
 * The page of `rows` of `list`, read as one more row than `limit`: that extra row tells a next page
 * exists without a count; the next page starts after the key of the last row kept.
 */
export function keysetPage<T>(rows: readonly T[], limit: number, list: CursorList, keyOf: (row: T) => KeyFields): KeysetPage<T> {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? encodeKeyset(list, keyOf(items[items.length - 1])) : null };
}
