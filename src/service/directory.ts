/**
 * The directory of agents: claimed agents ranked by the total of their latest score (V8: active
 * components only, as stored, so Shield never counts against anyone), ties broken by agent id,
 * filtered by band and state, searched by name, in keyset pages. A cursor names a position in the
 * ranking (a total and an agent id), never an offset, so a page follows the one before it even while
 * scores change: an agent that did not move is neither shown twice nor skipped.
 */
import type { Band } from "../method";
import { decodeKeyset, encodeKeyset, type CursorList } from "./keyset";
import { ID_PATTERN } from "./secrets";

/** V8 states. */
export const DIRECTORY_STATES = ["provisional", "established"] as const;
export type DirectoryState = (typeof DIRECTORY_STATES)[number];

/** Agents per page: 1 to 100, 20 unless asked. */
export const DIRECTORY_LIMIT = { min: 1, max: 100, default: 20 } as const;

/** Longest name search accepted. */
export const DIRECTORY_QUERY_MAX = 100;

/** One agent of the directory, with its latest score's figures. */
export type DirectoryEntry = {
  agentId: string;
  name: string | null;
  /** The name in the registration file of its ERC-8004 identity (self-declared, issue #27), when one was read. */
  registeredName: string | null;
  scoreId: number;
  /** Unix seconds of the latest score. */
  at: number;
  total: number;
  band: string;
  state: string;
};

/** What narrows the ranking: a band (V8 range), a state, and a search (case-insensitive in names, exact on ids). */
export type DirectoryFilter = { band?: Band; state?: DirectoryState; q?: string };

/** A place in the ranking: rows strictly after it or strictly before it. */
export type DirectoryPosition = { direction: "after" | "before"; total: number; agentId: string };

/** The store's ranking read (src/store/directory.ts). */
export type DirectoryStore = {
  /**
   * Up to `limit` ranked agents matching `filter` with a latest score, in rank order (total
   * descending, then agent id): the first ones, or the ones right after or right before `from`.
   * @param query.totals the band as an inclusive range of totals
   */
  rankedAgents(query: {
    state?: DirectoryState;
    totals?: { min: number; max: number };
    band?: Band;
    q?: string;
    from?: DirectoryPosition;
    limit: number;
  }): Promise<DirectoryEntry[]>;
};

/** One page: its agents and the cursors of the pages beside it (null at either end). */
export type DirectoryPage = { agents: DirectoryEntry[]; nextCursor: string | null; prevCursor: string | null };

/** A page asked for: the filter, the position of an earlier page's cursor (none: the first page), the page size. */
export type DirectoryRequest = { filter: DirectoryFilter; cursor?: DirectoryPosition; limit: number };

export type Directory = {
  /** The page of the ranking that `cursor` (from an earlier page) points to, or the first page. */
  page(request: DirectoryRequest): Promise<DirectoryPage>;
};

/** V8: a band's range of totals. */
export function bandTotals(band: Band): { min: number; max: number } {
  const [min, max] = band.split("-").map(Number);
  return { min, max };
}

/** The list a cursor of the directory belongs to: the directory under one filter (a cursor of another filter pages nothing of it). */
const listOf = (filter: DirectoryFilter): CursorList => ({
  kind: "directory",
  of: JSON.stringify([filter.band ?? "", filter.state ?? "", filter.q ?? ""]),
});

/**
 * The opaque text of a position in the directory under `filter`.
 * @example decodeCursor(encodeCursor({ direction: "after", total: 230, agentId: "agt_x" }, {}), {}) // the same position
 */
export function encodeCursor(position: DirectoryPosition, filter: DirectoryFilter): string {
  return encodeKeyset(listOf(filter), [position.direction === "after" ? "a" : "b", position.total, position.agentId]);
}

const CURSOR_PATTERN = /^([ab]):(0|[1-9]\d{0,3}):(.+)$/;

/** The position a cursor of the directory under `filter` names; null when it is not one this service made for that filter. */
export function decodeCursor(cursor: string, filter: DirectoryFilter): DirectoryPosition | null {
  const fields = decodeKeyset(cursor, listOf(filter), CURSOR_PATTERN);
  if (!fields || Number(fields[1]) > 1000 || !ID_PATTERN.test(fields[2])) return null;
  return { direction: fields[0] === "a" ? "after" : "before", total: Number(fields[1]), agentId: fields[2] };
}

/** The directory over `store`. */
export function createDirectory(deps: { store: DirectoryStore }): Directory {
  const { store } = deps;
  return {
    async page({ filter, cursor, limit }) {
      const after = (e: DirectoryEntry) => encodeCursor({ direction: "after", total: e.total, agentId: e.agentId }, filter);
      const before = (e: DirectoryEntry) => encodeCursor({ direction: "before", total: e.total, agentId: e.agentId }, filter);
      const query = { state: filter.state, band: filter.band, totals: filter.band && bandTotals(filter.band), q: filter.q };
      const first = async (): Promise<DirectoryPage> => {
        const rows = await store.rankedAgents({ ...query, limit: limit + 1 });
        const agents = rows.slice(0, limit);
        return { agents, nextCursor: rows.length > limit ? after(agents[agents.length - 1]) : null, prevCursor: null };
      };
      if (!cursor) return first();
      const rows = await store.rankedAgents({ ...query, from: cursor, limit: limit + 1 });
      if (cursor.direction === "before") {
        // Back at the start: the first page, full, rather than a short page before it.
        if (rows.length <= limit) return first();
        const agents = rows.slice(1);
        return { agents, nextCursor: after(agents[agents.length - 1]), prevCursor: before(agents[0]) };
      }
      const agents = rows.slice(0, limit);
      const nextCursor = rows.length > limit ? after(agents[agents.length - 1]) : null;
      if (agents.length === 0) return { agents, nextCursor, prevCursor: encodeCursor({ ...cursor, direction: "before" }, filter) };
      const earlier = await store.rankedAgents({
        ...query,
        from: { direction: "before", total: agents[0].total, agentId: agents[0].agentId },
        limit: 1,
      });
      return { agents, nextCursor, prevCursor: earlier.length > 0 ? before(agents[0]) : null };
    },
  };
}
