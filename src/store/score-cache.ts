import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { ScoreSummary } from "../service/ports";
import { decodeResult, encodeResult } from "./score-result-codec";

/** What the cache knows of an agent: its latest score, or `null` for an agent without one yet. */
export type CachedLatest = ScoreSummary | null;

/** `bytes`: memory charged (segments allocated and the id index), never above `maxBytes`; `evictions`: segments dropped to make room. */
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
 * The id index: open addressing with linear probing over two typed arrays (outside the JS heap, like
 * the segments), a slot each: the entry's position / ALIGN + 1 (0: empty) and its id's hash. A slot
 * takes 8 bytes and at most half the slots are used, so a million agents take 16-32 MiB, and the
 * heap holds nothing per agent: a JS Map of a million id strings made every full collection of the
 * API server mark a million objects, which at 2,000 requests/s was its GET latency's tail.
 */
const INDEX_SLOT_BYTES = 8;
const INDEX_MIN_SLOTS = 64;
const INDEX_MAX_LOAD = 0.5;
/** The largest segment: a full cache drops the entries of its oldest segment at once, a small share of them. */
const MAX_SEGMENT_BYTES = 8 * 2 ** 20;
/** Segments a cache is cut into, at least: what one eviction drops is about 1/SEGMENTS of it or less. */
const SEGMENTS = 32;
/** Entries start at multiples of this, so that a position divided by it fits a small integer up to 8 GiB. */
const ALIGN = 8;
/** An entry's first bytes: its length (u32), flags (u8), the id's length (u8). */
const HEAD_BYTES = 6;
/**
 * zlib's settings for result texts: a 4 KiB window (results are about 3 kB, so the dictionary and the
 * text both fit) allocates and clears an eighth of the default's state per call, which is most of a
 * small text's cost: deflate 98 -> 48 us, inflate 22 -> 16 us, the same bytes.
 */
const DEFLATE = { windowBits: 12, memLevel: 8 } as const;
const HAS_SCORE = 1;
const DAILY = 2;
const HAS_DAY = 4;
/** The result is kept by src/store/score-result-codec.ts (else deflated). */
const RESULT_CODED = 8;
/** The digest is kept as its 32 bytes (it is 64 lowercase hex digits), else as its text. */
const SHA_BYTES = 16;
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** FNV-1a of an id's characters, then mixed (murmur3's finaliser) so that ids differing in their last digits spread over the slots. */
function hashId(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return mix(h);
}

/** `hashId` of the id written (latin1) at `bytes[start, start + length)`. */
function hashIdBytes(bytes: Buffer, start: number, length: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < start + length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return mix(h);
}

function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Whether score `a` comes after the one at `(at, id)` in "latest" order (`ORDER BY at DESC, id DESC`). */
const after = (a: ScoreSummary, at: number, id: number) => a.at > at || (a.at === at && a.id > id);

/**
 * Creates an empty cache holding at most `maxBytes`: the entries' bytes in segments outside the JS
 * heap, allocated as needed, plus the id index (INDEX_SLOT_BYTES a slot, at least two slots an entry).
 * An entry keeps its summary in binary and its result in the few numbers src/store/score-result-codec.ts
 * renders its text back from (when the summary comes with the result's value and the text is the
 * method engine's rendering of it), else its text deflated with a preset dictionary (the first result
 * text deflated since the cache was last emptied: results share their keys and their 30-day window's
 * shape): 200-300 bytes for a 3 kB result, so a million agents fit in a few hundred MiB, and the id
 * index is typed arrays (INDEX_SLOT_BYTES): nothing per agent on the JS heap. Entries
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
  /** The id index's slots: entry position / ALIGN + 1 (0: empty), and the id's hash; none until the first entry. */
  let positions = new Int32Array(0);
  let hashes = new Uint32Array(0);
  /** Entries in the index. */
  let count = 0;
  const segments: Buffer[] = [];
  /** Bytes written in each segment (entries dropped since included). */
  const used: number[] = [];
  /** The segment entries are written to now. */
  let current = 0;
  let dictionary: Buffer | null = null;
  let generation = 0;
  let hits = 0;
  let misses = 0;
  let evictions = 0;
  let enabled = options.enabled ?? true;

  const indexBytes = () => positions.length * INDEX_SLOT_BYTES;
  const charged = () => segments.length * segmentBytes + indexBytes();
  /** The segment and offset of an entry's position / ALIGN. */
  const segmentOf = (slot: number) => segments[Math.floor((slot * ALIGN) / segmentBytes)];
  const offsetOf = (slot: number) => (slot * ALIGN) % segmentBytes;

  /** The index slot of `agentId` (hash `h`), or -1. */
  function find(agentId: string, h: number): number {
    if (count === 0) return -1;
    const mask = positions.length - 1;
    for (let i = h & mask; positions[i] !== 0; i = (i + 1) & mask) {
      if (hashes[i] !== h) continue;
      const segment = segmentOf(positions[i] - 1);
      const o = offsetOf(positions[i] - 1);
      if (segment[o + 5] !== agentId.length) continue;
      let same = true;
      for (let k = 0; k < agentId.length && same; k++) same = segment[o + HEAD_BYTES + k] === agentId.charCodeAt(k);
      if (same) return i;
    }
    return -1;
  }

  /** Points `agentId`'s slot (hash `h`) at `slot`, taking an empty one when it has none. */
  function setIndex(agentId: string, h: number, slot: number): void {
    let i = find(agentId, h);
    if (i < 0) {
      const mask = positions.length - 1;
      for (i = h & mask; positions[i] !== 0; i = (i + 1) & mask);
      hashes[i] = h;
      count++;
    }
    positions[i] = slot + 1;
  }

  /** Empties index slot `i`, moving back the entries after it that probing would no longer reach (no tombstones). */
  function deleteAt(i: number): void {
    const mask = positions.length - 1;
    for (let j = (i + 1) & mask; positions[j] !== 0; j = (j + 1) & mask) {
      const home = hashes[j] & mask;
      // The entry at j stays when its home slot lies cyclically in (i, j].
      if (i <= j ? i < home && home <= j : i < home || home <= j) continue;
      positions[i] = positions[j];
      hashes[i] = hashes[j];
      i = j;
    }
    positions[i] = 0;
    count--;
  }

  /** The slots of the index after it grows. */
  const grownSlots = () => Math.max(INDEX_MIN_SLOTS, positions.length * 2);

  /** Twice the slots (INDEX_MIN_SLOTS the first time), every entry placed again by its hash. */
  function growIndex(): void {
    const [oldPositions, oldHashes] = [positions, hashes];
    positions = new Int32Array(grownSlots());
    hashes = new Uint32Array(positions.length);
    const mask = positions.length - 1;
    for (let j = 0; j < oldPositions.length; j++) {
      if (oldPositions[j] === 0) continue;
      let i = oldHashes[j] & mask;
      while (positions[i] !== 0) i = (i + 1) & mask;
      positions[i] = oldPositions[j];
      hashes[i] = oldHashes[j];
    }
  }

  function remove(agentId: string): void {
    const i = find(agentId, hashId(agentId));
    if (i >= 0) deleteAt(i);
  }

  function clear(): void {
    positions = new Int32Array(0);
    hashes = new Uint32Array(0);
    count = 0;
    segments.length = 0;
    used.length = 0;
    current = 0;
    dictionary = null;
    generation++;
  }

  /** Drops every entry written in segment `s` (those its agents' slots still point at), and starts it again empty. */
  function dropSegment(s: number): void {
    const segment = segments[s];
    const mask = positions.length - 1;
    for (let offset = 0; offset < used[s]; offset += segment.readUInt32LE(offset)) {
      const slot = (s * segmentBytes + offset) / ALIGN + 1;
      for (let i = hashIdBytes(segment, offset + HEAD_BYTES, segment[offset + 5]) & mask; positions[i] !== 0; i = (i + 1) & mask) {
        if (positions[i] === slot) {
          deleteAt(i);
          break;
        }
      }
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
   * The position of `length` free bytes for an entry of `agentId` (hash `h`), making room as needed, the
   * index's included: -1 when an entry that long cannot be kept.
   */
  function room(length: number, agentId: string, h: number): number {
    if (length > segmentBytes) return -1;
    // A new agent in an index at its load doubles the index: the oldest segments go while that would not fit.
    for (;;) {
      const grow = count + 1 > positions.length * INDEX_MAX_LOAD && find(agentId, h) < 0;
      if (charged() + (grow ? (grownSlots() - positions.length) * INDEX_SLOT_BYTES : 0) <= maxBytes) {
        if (grow) growIndex();
        break;
      }
      if (!dropOldest()) return -1;
    }
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

  function write(agentId: string, latest: CachedLatest, h: number): void {
    if (agentId.length > 255 || /[^\x20-\x7e]/.test(agentId)) return;
    let result: Buffer | null = null;
    const text = (value: string) => Buffer.from(value, "utf8");
    let method = text("");
    let day = text("");
    let sha = text("");
    let coded = false;
    const shaBytes = latest !== null && HEX_SHA256.test(latest.sha256);
    if (latest !== null) {
      result = latest.result === undefined ? null : encodeResult(latest.result, latest.resultJson, latest);
      coded = result !== null;
      if (!coded) {
        dictionary ??= Buffer.from(latest.resultJson, "utf8");
        result = deflateRawSync(latest.resultJson, { ...DEFLATE, dictionary });
      }
      [method, day, sha] = [text(latest.method), text(latest.day ?? ""), shaBytes ? Buffer.from(latest.sha256, "hex") : text(latest.sha256)];
      if (method.length > 255 || day.length > 255 || sha.length > 255) return;
    }
    const body = latest === null ? 0 : 24 + 3 + method.length + day.length + sha.length + 4 + result!.length;
    const length = Math.ceil((HEAD_BYTES + agentId.length + body) / ALIGN) * ALIGN;
    const position = room(length, agentId, h);
    if (position < 0) return;
    const segment = segmentOf(position / ALIGN);
    let o = offsetOf(position / ALIGN);
    segment.writeUInt32LE(length, o);
    segment[o + 4] = latest === null ? 0
      : HAS_SCORE | (latest.trigger === "daily" ? DAILY : 0) | (latest.day === null ? 0 : HAS_DAY) | (coded ? RESULT_CODED : 0) | (shaBytes ? SHA_BYTES : 0);
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
    setIndex(agentId, h, position / ALIGN);
  }

  /** The (at, id) of the score an entry holds, or null for an entry of an agent without one. */
  function keyOf(slot: number): { at: number; id: number } | null {
    const segment = segmentOf(slot);
    const o = offsetOf(slot);
    if ((segment[o + 4] & HAS_SCORE) === 0) return null;
    const fields = o + HEAD_BYTES + segment[o + 5];
    return { id: segment.readDoubleLE(fields), at: segment.readDoubleLE(fields + 8) };
  }

  function read(agentId: string, slot: number): CachedLatest {
    const segment = segmentOf(slot);
    const start = offsetOf(slot);
    const flags = segment[start + 4];
    if ((flags & HAS_SCORE) === 0) return null;
    let o = start + HEAD_BYTES + segment[start + 5];
    const id = segment.readDoubleLE(o);
    const at = segment.readDoubleLE(o + 8);
    const total = segment.readDoubleLE(o + 16);
    o += 24;
    const [method, day, sha256] = [0, 1, 2].map((field) => {
      const length = segment[o];
      o += 1 + length;
      return segment.toString(field === 2 && flags & SHA_BYTES ? "hex" : "utf8", o - length, o);
    });
    const resultLength = segment.readUInt32LE(o);
    const bytes = segment.subarray(o + 4, o + 4 + resultLength);
    const resultJson = flags & RESULT_CODED
      ? decodeResult(bytes, { agentId, at, sha256, total })
      : inflateRawSync(bytes, { windowBits: DEFLATE.windowBits, dictionary: dictionary! }).toString("utf8");
    return { id, agentId, method, at, trigger: flags & DAILY ? "daily" : "change", day: flags & HAS_DAY ? day : null, sha256, resultJson, total };
  }

  function store(agentId: string, latest: CachedLatest): void {
    const h = hashId(agentId);
    const i = find(agentId, h);
    if (i >= 0) {
      if (latest === null) return;
      const key = keyOf(positions[i] - 1);
      if (key !== null && !after(latest, key.at, key.id)) return;
    }
    write(agentId, latest, h);
  }

  return {
    get(agentId) {
      if (!enabled) return undefined;
      const i = find(agentId, hashId(agentId));
      if (i < 0) {
        misses++;
        return undefined;
      }
      hits++;
      return read(agentId, positions[i] - 1);
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
    stats: () => ({ entries: count, bytes: charged(), maxBytes, hits, misses, evictions, enabled }),
  };
}
