import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { ScoreSummary } from "../service/ports";

/** What the cache knows of an agent: its latest score, or `null` for an agent without one yet. */
export type CachedLatest = ScoreSummary | null;

/** `bytes`: memory charged (segments allocated and the id map), never above `maxBytes`; `evictions`: segments dropped to make room. */
export type ScoreCacheStats = { entries: number; bytes: number; maxBytes: number; hits: number; misses: number; evictions: number; enabled: boolean };

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

/**
 * Memory charged per entry for its place in the id map (the key string's header and the map's slots),
 * beyond the id's own length; the entry itself is bytes in a segment, outside the JS heap.
 */
const INDEX_BYTES_PER_ENTRY = 64;
/** The largest segment: a full cache drops the entries of its oldest segment at once, a small share of them. */
const MAX_SEGMENT_BYTES = 8 * 2 ** 20;
/** Segments a cache is cut into, at least: what one eviction drops is about 1/SEGMENTS of it or less. */
const SEGMENTS = 32;
/** Entries start at multiples of this, so that a position divided by it fits a small integer up to 8 GiB. */
const ALIGN = 8;
/** An entry's first bytes: its length (u32), flags (u8), the id's length (u8). */
const HEAD_BYTES = 6;
const HAS_SCORE = 1;
const DAILY = 2;
const HAS_DAY = 4;

/** Whether score `a` comes after the one at `(at, id)` in "latest" order (`ORDER BY at DESC, id DESC`). */
const after = (a: ScoreSummary, at: number, id: number) => a.at > at || (a.at === at && a.id > id);

/**
 * Creates an empty cache holding at most `maxBytes`: the entries' bytes in segments outside the JS
 * heap, allocated as needed, plus INDEX_BYTES_PER_ENTRY and the id's length per entry for the id map.
 * An entry keeps its summary in binary and its result text deflated with a preset dictionary (the
 * first result text kept since the cache was last emptied: results share their keys and their
 * 30-day window's shape), about 300 bytes for a 3 kB result, so a million agents fit in a few hundred
 * MiB and the heap holds one string and one small integer per agent, whatever their number. Entries
 * are written one after the other, segment after segment, and the ring of segments turns: when the
 * next entry does not fit, every entry of the oldest segment is dropped at once (the oldest stored),
 * so drops stay rare.
 * @example
 * const cache = createScoreCache({ maxBytes: 256 * 2 ** 20 });
 * const mark = cache.mark();
 * // ... read the agent's latest score ...
 * cache.offerRead("agt_1", score, mark);
 * cache.get("agt_1"); // score
 */
export function createScoreCache(options: { maxBytes: number; enabled?: boolean }): ScoreCache {
  const { maxBytes } = options;
  const segmentBytes = Math.min(MAX_SEGMENT_BYTES, Math.floor(maxBytes / SEGMENTS / ALIGN) * ALIGN);
  /** Agent id to its entry's position / ALIGN. */
  const index = new Map<string, number>();
  const segments: Buffer[] = [];
  /** Bytes written in each segment (entries dropped since included). */
  const used: number[] = [];
  /** The segment entries are written to now. */
  let current = 0;
  let indexBytes = 0;
  let dictionary: Buffer | null = null;
  let generation = 0;
  let hits = 0;
  let misses = 0;
  let evictions = 0;
  let enabled = options.enabled ?? true;

  const charged = () => segments.length * segmentBytes + indexBytes;
  const place = (agentId: string) => INDEX_BYTES_PER_ENTRY + agentId.length;

  function remove(agentId: string): void {
    if (!index.delete(agentId)) return;
    indexBytes -= place(agentId);
  }

  function clear(): void {
    index.clear();
    segments.length = 0;
    used.length = 0;
    current = 0;
    indexBytes = 0;
    dictionary = null;
    generation++;
  }

  /** Drops every entry written in segment `s`, and starts it again empty. */
  function dropSegment(s: number): void {
    const segment = segments[s];
    for (let offset = 0; offset < used[s]; offset += segment.readUInt32LE(offset)) {
      const agentId = segment.toString("latin1", offset + HEAD_BYTES, offset + HEAD_BYTES + segment[offset + 5]);
      if (index.get(agentId) === (s * segmentBytes + offset) / ALIGN) remove(agentId);
    }
    used[s] = 0;
    evictions++;
    // An answer in flight for a dropped agent may be older than a write it was overtaken by.
    generation++;
  }

  /** Moves on to the next segment of the ring, dropping the entries it holds (the oldest). */
  function turn(): void {
    current = (current + 1) % segments.length;
    if (used[current] > 0) dropSegment(current);
  }

  /** The position of `length` free bytes, making room as needed (-1 when an entry that long cannot be kept). */
  function room(length: number, agentId: string): number {
    if (length > segmentBytes) return -1;
    // The id map's share counts against the cap as well: the oldest segments go while it would not fit.
    for (let k = 1; k <= segments.length && charged() + place(agentId) > maxBytes; k++) {
      const s = (current + k) % segments.length;
      if (used[s] > 0) dropSegment(s);
    }
    if (charged() + place(agentId) > maxBytes) return -1;
    if (segments.length === 0 || used[current] + length > segmentBytes) {
      // The segment is full: another one while the cap allows and the ring has not turned yet, else the ring turns.
      const newest = segments.length === 0 || current === segments.length - 1;
      if (newest && charged() + segmentBytes + place(agentId) <= maxBytes) {
        segments.push(Buffer.allocUnsafeSlow(segmentBytes));
        used.push(0);
        current = segments.length - 1;
      } else if (segments.length === 0) return -1;
      else turn();
    }
    const offset = used[current];
    used[current] += length;
    return current * segmentBytes + offset;
  }

  /** The segment and offset of an entry's position / ALIGN. */
  const locate = (slot: number): [Buffer, number] => [segments[Math.floor((slot * ALIGN) / segmentBytes)], (slot * ALIGN) % segmentBytes];

  function write(agentId: string, latest: CachedLatest): void {
    if (agentId.length > 255 || /[^\x20-\x7e]/.test(agentId)) return;
    let result: Buffer | null = null;
    const text = (value: string) => Buffer.from(value, "utf8");
    let method = text("");
    let day = text("");
    let sha = text("");
    if (latest !== null) {
      dictionary ??= Buffer.from(latest.resultJson, "utf8");
      result = deflateRawSync(latest.resultJson, { dictionary });
      [method, day, sha] = [text(latest.method), text(latest.day ?? ""), text(latest.sha256)];
      if (method.length > 255 || day.length > 255 || sha.length > 255) return;
    }
    const body = latest === null ? 0 : 24 + 3 + method.length + day.length + sha.length + 4 + result!.length;
    const length = Math.ceil((HEAD_BYTES + agentId.length + body) / ALIGN) * ALIGN;
    const position = room(length, agentId);
    if (position < 0) return;
    const [segment, start] = locate(position / ALIGN);
    let o = start;
    segment.writeUInt32LE(length, o);
    segment[o + 4] = latest === null ? 0 : HAS_SCORE | (latest.trigger === "daily" ? DAILY : 0) | (latest.day === null ? 0 : HAS_DAY);
    segment[o + 5] = agentId.length;
    o += HEAD_BYTES + segment.write(agentId, o + HEAD_BYTES, "latin1");
    if (latest !== null) {
      o = segment.writeDoubleLE(latest.id, o);
      o = segment.writeDoubleLE(latest.at, o);
      o = segment.writeDoubleLE(latest.total, o);
      for (const field of [method, day, sha]) {
        segment[o++] = field.length;
        o += field.copy(segment, o);
      }
      o = segment.writeUInt32LE(result!.length, o);
      result!.copy(segment, o);
    }
    if (!index.has(agentId)) indexBytes += place(agentId);
    index.set(agentId, position / ALIGN);
  }

  /** The (at, id) of the score an entry holds, or null for an entry of an agent without one. */
  function keyOf(slot: number): { at: number; id: number } | null {
    const [segment, o] = locate(slot);
    if ((segment[o + 4] & HAS_SCORE) === 0) return null;
    const fields = o + HEAD_BYTES + segment[o + 5];
    return { id: segment.readDoubleLE(fields), at: segment.readDoubleLE(fields + 8) };
  }

  function read(agentId: string, slot: number): CachedLatest {
    const [segment, start] = locate(slot);
    const flags = segment[start + 4];
    if ((flags & HAS_SCORE) === 0) return null;
    let o = start + HEAD_BYTES + segment[start + 5];
    const id = segment.readDoubleLE(o);
    const at = segment.readDoubleLE(o + 8);
    const total = segment.readDoubleLE(o + 16);
    o += 24;
    const [method, day, sha256] = [0, 1, 2].map(() => {
      const length = segment[o];
      o += 1 + length;
      return segment.toString("utf8", o - length, o);
    });
    const resultLength = segment.readUInt32LE(o);
    const resultJson = inflateRawSync(segment.subarray(o + 4, o + 4 + resultLength), { dictionary: dictionary! }).toString("utf8");
    return { id, agentId, method, at, trigger: flags & DAILY ? "daily" : "change", day: flags & HAS_DAY ? day : null, sha256, resultJson, total };
  }

  function store(agentId: string, latest: CachedLatest): void {
    const slot = index.get(agentId);
    if (slot !== undefined) {
      if (latest === null) return;
      const key = keyOf(slot);
      if (key !== null && !after(latest, key.at, key.id)) return;
    }
    write(agentId, latest);
  }

  return {
    get(agentId) {
      if (!enabled) return undefined;
      const slot = index.get(agentId);
      if (slot === undefined) {
        misses++;
        return undefined;
      }
      hits++;
      return read(agentId, slot);
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
    stats: () => ({ entries: index.size, bytes: charged(), maxBytes, hits, misses, evictions, enabled }),
  };
}
