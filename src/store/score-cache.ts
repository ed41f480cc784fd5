import { isMethodVersion, renderResult, resultShape } from "../method";
import type { ScoreSummary } from "../service/ports";
import { createIdIndex, hashId, hashIdBytes } from "./id-index";

/** What the cache knows of an agent: its latest score, or `null` for an agent without one yet. */
export type CachedLatest = ScoreSummary | null;

/** `bytes`: memory charged (segments allocated and the id index), never above `maxBytes`; `evictions`: segments dropped to make room. */
export type ScoreCacheStats = {
  entries: number;
  bytes: number;
  maxBytes: number;
  hits: number;
  misses: number;
  evictions: number;
  enabled: boolean;
};

/**
 * The latest score of each agent, held in memory for `GET /v1/agents/:id/score`, in the score's stored
 * form: its summary and its compact result (`packResult`), the text rendered by `renderResult` as it is
 * read, as the table's is.
 *
 * An entry is only ever replaced by a newer score (larger `at`, then larger `id`: the order of
 * "latest" in SQL), so answers that arrive out of order cannot make it older. What may have
 * changed is dropped (`invalidate`): every drop moves the generation on, and an answer obtained
 * under an older generation (a read sent before the drop) is not stored, since it may predate the
 * change that caused the drop.
 */
export type ScoreCache = {
  /** The cached answer, or `undefined` when the agent has to be read from the database. */
  get(agentId: string): CachedLatest | undefined;
  /** The generation now: taken before a read is sent, handed back with its answer. */
  mark(): number;
  /** A read's answer for an existing agent, obtained under `mark`: kept unless newer is cached or a drop came since. */
  offerRead(agentId: string, latest: CachedLatest, mark: number): void;
  /** Drops the entries of `agentIds`, or every entry ("all"). */
  invalidate(agentIds: readonly string[] | "all"): void;
  /** Off: nothing is answered or kept (for instance while changes by other processes cannot be heard). Turning it off drops everything. */
  setEnabled(on: boolean): void;
  /**
   * The ids of up to `n` agents with a score, spread evenly over the entries, with results of every shape among them
   * (`resultShape`: at least a twentieth of `n` each, where the cache holds that many in 20 times `n` entries read): a
   * sample of what reads will ask, for a started server's warm-up (src/app/warm-up.ts), as wide as the agents the cache
   * holds.
   */
  sample(n: number): string[];
  stats(): ScoreCacheStats;
};

/** The largest segment: a full cache drops the entries of its oldest segment at once, a small share of them. */
const MAX_SEGMENT_BYTES = 8 * 2 ** 20;
/** Segments a cache is cut into, at least: what one eviction drops is about 1/SEGMENTS of it or less. */
const SEGMENTS = 32;
/** Entries start at multiples of this, so that a position divided by it fits a small integer up to 8 GiB. */
const ALIGN = 8;

// An entry: its head, the agent's id (latin1), then for an agent with a score its fields.
/** Offset of the entry's length in bytes (u32, a multiple of ALIGN). */
const AT_LENGTH = 0;
/** Offset of its flags (u8). */
const AT_FLAGS = 4;
/** Offset of its id's length (u8). */
const AT_ID_LENGTH = 5;
/** Offset of its id. */
const AT_ID = 6;
// After the id: the score's id, `at` and total (f64 each), its method and day (u8 length, utf8), its
// digest (32 bytes when SHA_BYTES, else u8 length and text), its compact result (u32 length, bytes).
/** Offsets of the score's id, `at` and total from the end of the id. */
const SCORE_ID = 0;
const SCORE_AT = 8;
const SCORE_TOTAL = 16;
const NUMBERS_BYTES = 24;
/** A digest kept as bytes. */
const SHA256_BYTES = 32;
/** The compact result's length (u32). */
const PACKED_LENGTH_BYTES = 4;

const HAS_SCORE = 1;
const DAILY = 2;
const HAS_DAY = 4;
/** The digest is kept as its 32 bytes (it is 64 lowercase hex digits), else as its text. */
const SHA_BYTES = 16;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** Candidates `ScoreCache.sample` looks at for each agent it returns: the shapes of their results are read. */
const SAMPLE_SCAN = 20;

/** Where the entry at `start` keeps its compact result's length (then its bytes): after its id, numbers, method, day and digest. */
function resultOffset(segment: Buffer, start: number): number {
  let o = start + AT_ID + segment[start + AT_ID_LENGTH] + NUMBERS_BYTES;
  o += 1 + segment[o]; // method
  o += 1 + segment[o]; // day
  return o + (segment[start + AT_FLAGS] & SHA_BYTES ? SHA256_BYTES : 1 + segment[o]);
}

/**
 * Up to `n` of the candidates whose results have `shapes` (`resultShape`), by index, in their order: spread evenly over
 * them, then each shape with fewer than a twentieth of `n` picked (at least one) given more of its candidates, spread
 * over them, in place of picks of the shape picked most. A warm-up's reads then render results of every shape the cache
 * holds, however rare (issue #30: agents with a penalty, 1 in 100 of the bench's, were none of its 1,000).
 */
function pickCovering(shapes: readonly number[], n: number): number[] {
  const spread = <T>(items: readonly T[], m: number) => Array.from({ length: m }, (_, i) => items[Math.floor((i * items.length) / m)]);
  const all = shapes.map((_, i) => i);
  const picked = new Set(spread(all, Math.min(n, all.length)));
  const cover = Math.max(1, Math.floor(n / 20));
  const kinds = [...new Set(shapes)];
  const ofShape = (shape: number, inPicked: boolean) => all.filter((i) => shapes[i] === shape && picked.has(i) === inPicked);
  for (const shape of kinds) {
    const more = ofShape(shape, false);
    const want = Math.min(cover - ofShape(shape, true).length, more.length);
    if (want <= 0) continue;
    const most = kinds
      .filter((k) => k !== shape)
      .map((k) => ofShape(k, true))
      .reduce((a, b) => (b.length > a.length ? b : a));
    for (const i of spread(more, want)) picked.add(i);
    for (const i of spread(most, want)) picked.delete(i);
  }
  // At most n, also where a few agents' worth of shapes could not each take a pick from another's.
  return [...picked].sort((a, b) => a - b).slice(0, n);
}

/** Whether score `a` comes after the one at `(at, id)` in "latest" order (`ORDER BY at DESC, id DESC`). */
const after = (a: ScoreSummary, at: number, id: number) => a.at > at || (a.at === at && a.id > id);

/**
 * Creates an empty cache holding at most `maxBytes`: the entries' bytes in segments outside the JS
 * heap, allocated as needed, plus the id index (src/store/id-index.ts). An entry keeps a score's
 * summary in binary and its compact result, a few hundred bytes whatever the result's text, and
 * nothing per agent is on the JS heap. Entries are written one after the other, segment after
 * segment, and the ring of segments turns: when the next entry does not fit, every entry of the oldest
 * segment is dropped at once (the oldest stored), so drops stay rare.
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
  const segments: Buffer[] = [];
  /** Bytes written in each segment (entries dropped since included). */
  const used: number[] = [];
  /** The segment entries are written to now. */
  let current = 0;
  let generation = 0;
  let hits = 0;
  let misses = 0;
  let evictions = 0;
  let enabled = options.enabled ?? true;

  /** The segment and offset of an entry's position / ALIGN. */
  const segmentOf = (slot: number) => segments[Math.floor((slot * ALIGN) / segmentBytes)];
  const offsetOf = (slot: number) => (slot * ALIGN) % segmentBytes;

  const index = createIdIndex((slot, id) => {
    const segment = segmentOf(slot);
    const o = offsetOf(slot);
    if (segment[o + AT_ID_LENGTH] !== id.length) return false;
    for (let k = 0; k < id.length; k++) if (segment[o + AT_ID + k] !== id.charCodeAt(k)) return false;
    return true;
  });
  const charged = () => segments.length * segmentBytes + index.bytes;

  function clear(): void {
    index.clear();
    segments.length = 0;
    used.length = 0;
    current = 0;
    generation++;
  }

  /** Drops every entry written in segment `s` (those its agents' slots still point at), and starts it again empty. */
  function dropSegment(s: number): void {
    const segment = segments[s];
    for (let offset = 0; offset < used[s]; offset += segment.readUInt32LE(offset + AT_LENGTH)) {
      index.deletePosition(hashIdBytes(segment, offset + AT_ID, segment[offset + AT_ID_LENGTH]), (s * segmentBytes + offset) / ALIGN);
    }
    used[s] = 0;
    evictions++;
    // An answer in flight for a dropped agent may be older than a write it was overtaken by.
    generation++;
  }

  /** Drops the oldest segment holding entries (the ring's next after the current one, the current one last); false when none holds any. */
  function dropOldest(): boolean {
    for (let k = 1; k <= segments.length; k++) {
      const s = (current + k) % segments.length;
      if (used[s] > 0) {
        dropSegment(s);
        return true;
      }
    }
    return false;
  }

  /** Moves on to the next segment of the ring, dropping the entries it holds (the oldest). */
  function turn(): void {
    current = (current + 1) % segments.length;
    if (used[current] > 0) dropSegment(current);
  }

  /**
   * The position of `length` free bytes for an entry (a new agent's when `isNew`), making room as needed,
   * the index's included: -1 when an entry that long cannot be kept.
   */
  function room(length: number, isNew: boolean): number {
    if (length > segmentBytes) return -1;
    // A new agent in an index at its load doubles the index: the oldest segments go while that would not fit.
    while (charged() + (isNew ? index.growthBytes() : 0) > maxBytes) if (!dropOldest()) return -1;
    if (isNew) index.growIfFull();
    if (segments.length === 0 || used[current] + length > segmentBytes) {
      // The segment is full: another one while the cap allows and the ring has not turned yet, else the ring turns.
      const newest = segments.length === 0 || current === segments.length - 1;
      if (newest && charged() + segmentBytes <= maxBytes) {
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

  function write(agentId: string, latest: CachedLatest, hash: number, isNew: boolean): void {
    if (agentId.length > 255 || /[^\x20-\x7e]/.test(agentId)) return;
    const text = (value: string) => Buffer.from(value, "utf8");
    let method = text("");
    let day = text("");
    let sha = text("");
    const shaBytes = latest !== null && HEX_SHA256.test(latest.sha256);
    if (latest !== null) {
      [method, day, sha] = [
        text(latest.method),
        text(latest.day ?? ""),
        shaBytes ? Buffer.from(latest.sha256, "hex") : text(latest.sha256),
      ];
      if (method.length > 255 || day.length > 255 || sha.length > 255) return;
    }
    const packed = latest?.packed ?? null;
    const body =
      latest === null || packed === null
        ? 0
        : NUMBERS_BYTES + 2 + method.length + day.length + (shaBytes ? SHA256_BYTES : 1 + sha.length) + PACKED_LENGTH_BYTES + packed.length;
    const length = Math.ceil((AT_ID + agentId.length + body) / ALIGN) * ALIGN;
    const position = room(length, isNew);
    if (position < 0) return;
    const segment = segmentOf(position / ALIGN);
    let o = offsetOf(position / ALIGN);
    segment.writeUInt32LE(length, o + AT_LENGTH);
    segment[o + AT_FLAGS] =
      latest === null
        ? 0
        : HAS_SCORE | (latest.trigger === "daily" ? DAILY : 0) | (latest.day === null ? 0 : HAS_DAY) | (shaBytes ? SHA_BYTES : 0);
    segment[o + AT_ID_LENGTH] = agentId.length;
    o += AT_ID + segment.write(agentId, o + AT_ID, "latin1");
    if (latest !== null && packed !== null) {
      segment.writeDoubleLE(latest.id, o + SCORE_ID);
      segment.writeDoubleLE(latest.at, o + SCORE_AT);
      segment.writeDoubleLE(latest.total, o + SCORE_TOTAL);
      o += NUMBERS_BYTES;
      for (const field of [method, day]) {
        segment[o++] = field.length;
        o += field.copy(segment, o);
      }
      if (!shaBytes) segment[o++] = sha.length;
      o += sha.copy(segment, o);
      o = segment.writeUInt32LE(packed.length, o);
      segment.set(packed, o);
    }
    index.set(agentId, hash, position / ALIGN);
  }

  /** The (at, id) of the score an entry holds, or null for an entry of an agent without one. */
  function keyOf(slot: number): { at: number; id: number } | null {
    const segment = segmentOf(slot);
    const o = offsetOf(slot);
    if ((segment[o + AT_FLAGS] & HAS_SCORE) === 0) return null;
    const fields = o + AT_ID + segment[o + AT_ID_LENGTH];
    return { id: segment.readDoubleLE(fields + SCORE_ID), at: segment.readDoubleLE(fields + SCORE_AT) };
  }

  function read(agentId: string, slot: number): CachedLatest {
    const segment = segmentOf(slot);
    const start = offsetOf(slot);
    const flags = segment[start + AT_FLAGS];
    if ((flags & HAS_SCORE) === 0) return null;
    let o = start + AT_ID + segment[start + AT_ID_LENGTH];
    const id = segment.readDoubleLE(o + SCORE_ID);
    const at = segment.readDoubleLE(o + SCORE_AT);
    const total = segment.readDoubleLE(o + SCORE_TOTAL);
    o += NUMBERS_BYTES;
    const [method, day] = [0, 1].map(() => {
      const length = segment[o];
      o += 1 + length;
      return segment.toString("utf8", o - length, o);
    });
    let sha256: string;
    if (flags & SHA_BYTES) {
      sha256 = segment.toString("hex", o, o + SHA256_BYTES);
      o += SHA256_BYTES;
    } else {
      const length = segment[o];
      sha256 = segment.toString("utf8", o + 1, o + 1 + length);
      o += 1 + length;
    }
    const packedLength = segment.readUInt32LE(o);
    // A copy: the segment's bytes are written over when it is dropped.
    const packed = Uint8Array.prototype.slice.call(segment, o + PACKED_LENGTH_BYTES, o + PACKED_LENGTH_BYTES + packedLength);
    const resultJson = renderResult(packed, { agentId, at, sha256, total });
    if (!isMethodVersion(method))
      throw new Error(`score cache: the entry of ${agentId} names no method version (${JSON.stringify(method)})`);
    return {
      id,
      agentId,
      method,
      at,
      trigger: flags & DAILY ? "daily" : "change",
      day: flags & HAS_DAY ? day : null,
      sha256,
      resultJson,
      total,
      packed,
    };
  }

  function store(agentId: string, latest: CachedLatest): void {
    // A score whose result has no compact form (an old one kept as text) is read from the database each time.
    if (latest !== null && latest.packed === null) return;
    const hash = hashId(agentId);
    const slot = index.get(agentId, hash);
    if (slot >= 0) {
      if (latest === null) return;
      const key = keyOf(slot);
      if (key !== null && !after(latest, key.at, key.id)) return;
    }
    write(agentId, latest, hash, slot < 0);
  }

  return {
    get(agentId) {
      if (!enabled) return undefined;
      const slot = index.get(agentId, hashId(agentId));
      if (slot < 0) {
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
    invalidate(agentIds) {
      if (agentIds === "all") return clear();
      for (const agentId of agentIds) index.delete(agentId, hashId(agentId));
      generation++;
    },
    setEnabled(on) {
      if (!on) clear();
      enabled = on;
    },
    sample(n) {
      if (n <= 0) return [];
      // Candidates, SAMPLE_SCAN times as many as asked: at every step-th entry written, it or the first after it still
      // in the index with a score (an entry replaced, dropped or of an agent without a score is not).
      const ids: string[] = [];
      const shapes: number[] = [];
      const step = Math.max(1, Math.floor(index.size / (n * SAMPLE_SCAN)));
      let due = 0;
      let k = 0;
      for (let s = 0; s < segments.length; s++) {
        const segment = segments[s];
        for (let offset = 0; offset < used[s]; offset += segment.readUInt32LE(offset + AT_LENGTH), k++) {
          if (k < due || (segment[offset + AT_FLAGS] & HAS_SCORE) === 0) continue;
          const id = segment.toString("latin1", offset + AT_ID, offset + AT_ID + segment[offset + AT_ID_LENGTH]);
          if (index.get(id, hashId(id)) !== (s * segmentBytes + offset) / ALIGN) continue;
          const packedAt = resultOffset(segment, offset);
          const packed = segment.subarray(packedAt + PACKED_LENGTH_BYTES, packedAt + PACKED_LENGTH_BYTES + segment.readUInt32LE(packedAt));
          ids.push(id);
          shapes.push(resultShape(packed));
          due = Math.max(k + 1, ids.length * step);
        }
      }
      return pickCovering(shapes, n).map((i) => ids[i]);
    },
    stats: () => ({ entries: index.size, bytes: charged(), maxBytes, hits, misses, evictions, enabled }),
  };
}
