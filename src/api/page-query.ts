/** The query and the answer's cursor of every paged list route (keyset cursors: src/service/keyset.ts). */
import { z } from "zod";
import { CURSOR_MAX_LENGTH } from "../service/keyset";

/** The largest page a list route gives and the size it gives when none is asked for. */
export type PageSize = { readonly max: number; readonly default: number };

/** Page sizes: lists of ids or small rows (an owner's agents, the audit log) up to 1,000 a page; larger rows (scores, proofs, penalties, windows) up to 100. */
export const SMALL_ROWS_PAGE: PageSize = { max: 1000, default: 100 };
export const ROWS_PAGE: PageSize = { max: 100, default: 100 };

/** The query fields of a page: `cursor`, an earlier answer's `nextCursor` (none: the first page), and `limit`, the page size. */
export const pageQuery = (size: PageSize) => ({
  cursor: z.string().min(1).max(CURSOR_MAX_LENGTH).optional(),
  limit: z.coerce.number().int().min(1).max(size.max).default(size.default),
});

/** The answer's cursor of the next page: null on the last. */
export const nextCursorSchema = z.string().nullable();
