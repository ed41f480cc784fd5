import type { ScoreSummary } from "../service/ports";

/** What the cache knows of an agent: its latest score, or `null` for an agent without one yet. */
export type CachedLatest = ScoreSummary | null;

export type ScoreCacheStats = { entries: number; bytes: number; maxBytes: number; hits: number; misses: number; enabled: boolean };

/**
 * The latest score of each agent, held in memory for `GET /v1/agents/:id/score`.
 *
 * An entry is only ever replaced by a newer score (larger `at`, then larger `id`: the order of
 * "latest" in SQL), so answers that arrive out of order cannot make it older. What may have
 * changed without this process seeing it is dropped (`invalidate`): every drop moves the
 * generation on, and an answer obtained under an older generation (a read sent, or a transaction
 * begun, before the drop) is not stored, since it may predate the change that caused the drop.
 */
export type ScoreCache = {
  /** The cached answer, or `undefined` when the agent has to be read from the database. */
  get(agentId: string): CachedLatest | undefined;
  /** The generation now: taken before a read is sent or a transaction begins, handed back with its answer. */
  mark(): number;
  /** A read's answer for an existing agent, obtained under `mark`: kept unless newer is cached or a drop came since. */
  offerRead(agentId: string, latest: CachedLatest, mark: number): void;
  /**
   * A score this process has committed, in a transaction begun under `mark`. If a drop came since,
   * the entry is dropped too: the score may be older than one another process committed meanwhile.
   */
  offerWrite(score: ScoreSummary, mark: number): void;
  /** Drops the entries of `agentIds`, or every entry ("all"). */
  invalidate(agentIds: readonly string[] | "all"): void;
  /** Off: nothing is answered or kept (for instance while changes by other processes cannot be heard). Turning it off drops everything. */
  setEnabled(on: boolean): void;
  stats(): ScoreCacheStats;
};

/** Memory charged per entry beyond its result text: the summary object, its strings and the map slot. */
const ENTRY_OVERHEAD_BYTES = 400;
/** When full, this share of the entries (the oldest stored) is dropped at once, so drops stay rare. */
const EVICT_SHARE = 0.1;

/** Whether score `a` comes after `b` in "latest" order (`ORDER BY at DESC, id DESC`). */
function newer(a: ScoreSummary, b: CachedLatest): boolean {
  return b === null || a.at > b.at || (a.at === b.at && a.id > b.id);
}

const sizeOf = (latest: CachedLatest) => ENTRY_OVERHEAD_BYTES + (latest === null ? 0 : latest.resultJson.length + latest.sha256.length);

/**
 * Creates an empty cache holding at most about `maxBytes` (result texts plus a fixed overhead per
 * entry); when full, the oldest tenth of the entries is dropped.
 * @example
 * const cache = createScoreCache({ maxBytes: 256 * 2 ** 20 });
 * const mark = cache.mark();
 * // ... read the agent's latest score ...
 * cache.offerRead("agt_1", score, mark);
 * cache.get("agt_1"); // score
 */
export function createScoreCache(options: { maxBytes: number; enabled?: boolean }): ScoreCache {
  const entries = new Map<string, CachedLatest>();
  let generation = 0;
  let bytes = 0;
  let hits = 0;
  let misses = 0;
  let enabled = options.enabled ?? true;

  function remove(agentId: string): void {
    const current = entries.get(agentId);
    if (current === undefined) return;
    bytes -= sizeOf(current);
    entries.delete(agentId);
  }

  function clear(): void {
    entries.clear();
    bytes = 0;
    generation++;
  }

  function store(agentId: string, latest: CachedLatest): void {
    const current = entries.get(agentId);
    if (current !== undefined) {
      if (latest === null || !newer(latest, current)) return;
      bytes -= sizeOf(current);
      // Deleted first so the map's order stays the order entries were stored in (the eviction order).
      entries.delete(agentId);
    }
    const size = sizeOf(latest);
    if (size > options.maxBytes) return;
    if (bytes + size > options.maxBytes) evict(size);
    entries.set(agentId, latest);
    bytes += size;
  }

  /** Drops the oldest entries until `needed` bytes fit and at least EVICT_SHARE of them went. */
  function evict(needed: number): void {
    let toDrop = Math.ceil(entries.size * EVICT_SHARE);
    for (const [agentId, latest] of entries) {
      if (toDrop <= 0 && bytes + needed <= options.maxBytes) break;
      bytes -= sizeOf(latest);
      entries.delete(agentId);
      toDrop--;
    }
    // An answer in flight for a dropped agent may be older than a write it was overtaken by.
    generation++;
  }

  return {
    get(agentId) {
      if (!enabled) return undefined;
      const latest = entries.get(agentId);
      if (latest === undefined) misses++;
      else hits++;
      return latest;
    },
    mark: () => generation,
    offerRead(agentId, latest, mark) {
      if (enabled && mark === generation) store(agentId, latest);
    },
    offerWrite(score, mark) {
      if (!enabled) return;
      if (mark === generation) store(score.agentId, score);
      else {
        remove(score.agentId);
        generation++;
      }
    },
    invalidate(agentIds) {
      if (agentIds === "all") return clear();
      for (const agentId of agentIds) remove(agentId);
      generation++;
    },
    setEnabled(on) {
      if (!on) clear();
      enabled = on;
    },
    stats: () => ({ entries: entries.size, bytes, maxBytes: options.maxBytes, hits, misses, enabled }),
  };
}
