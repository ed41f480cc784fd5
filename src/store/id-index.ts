/**
 * An index from ids to positions held in two typed arrays (outside the JS heap): open addressing
 * with linear probing, no tombstones. A slot takes SLOT_BYTES, at most MAX_LOAD of the slots are used,
 * and the heap holds nothing per id: a JS Map of an id string per agent makes every full collection of
 * the API server mark an object per agent, which at a million agents is its GET latency's tail
 * (src/store/score-cache.ts, its one user).
 *
 * The ids themselves are not kept here: the caller stores them beside what the positions point at,
 * and `sameId` tells whether the entry at a position is the id's.
 */

/** Bytes a slot takes: the position (+1; 0 marks an empty slot) and the id's hash, 4 bytes each. */
export const SLOT_BYTES = 8;
/** Slots of the first index. */
const MIN_SLOTS = 64;
/** The most of its slots the index fills before it doubles. */
const MAX_LOAD = 0.5;

export type IdIndex = {
  /** The position `id` points at, or -1. */
  get(id: string, hash: number): number;
  /** Points `id` at `position` (≥ 0), replacing the one it had; call `growIfFull` first when `id` may be new. */
  set(id: string, hash: number, position: number): void;
  /** Forgets `id`. */
  delete(id: string, hash: number): void;
  /** Forgets the id whose hash is `hash` and that points at `position` (an entry dropped where it is stored). */
  deletePosition(hash: number, position: number): void;
  /** Whether one more id would take the index past its load, so that it doubles: the bytes that would take more. */
  growthBytes(): number;
  /** Doubles the slots when one more id would take the index past its load. */
  growIfFull(): void;
  /** Forgets everything and gives its arrays back. */
  clear(): void;
  /** Ids held. */
  readonly size: number;
  /** Bytes its arrays take. */
  readonly bytes: number;
};

/** FNV-1a of an id's characters, then mixed (murmur3's finaliser) so that ids differing in their last digits spread over the slots. */
export function hashId(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return mix(h);
}

/** `hashId` of an id written as latin1 bytes at `bytes[start, start + length)`. */
export function hashIdBytes(bytes: Uint8Array, start: number, length: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < start + length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return mix(h);
}

function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * An empty index.
 * @param sameId whether the entry at `position` is `id`'s (the caller compares the id it stored there)
 */
export function createIdIndex(sameId: (position: number, id: string) => boolean): IdIndex {
  let positions = new Int32Array(0);
  let hashes = new Uint32Array(0);
  let size = 0;

  const grownSlots = () => Math.max(MIN_SLOTS, positions.length * 2);
  const isFull = () => size + 1 > positions.length * MAX_LOAD;

  /** The slot holding `id`, or -1. */
  function slotOf(id: string, hash: number): number {
    if (size === 0) return -1;
    const mask = positions.length - 1;
    for (let i = hash & mask; positions[i] !== 0; i = (i + 1) & mask) {
      if (hashes[i] === hash && sameId(positions[i] - 1, id)) return i;
    }
    return -1;
  }

  /** Empties slot `i`, moving back the entries after it that probing would no longer reach. */
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
    size--;
  }

  return {
    get(id, hash) {
      const i = slotOf(id, hash);
      return i < 0 ? -1 : positions[i] - 1;
    },
    set(id, hash, position) {
      let i = slotOf(id, hash);
      if (i < 0) {
        const mask = positions.length - 1;
        for (i = hash & mask; positions[i] !== 0; i = (i + 1) & mask);
        hashes[i] = hash;
        size++;
      }
      positions[i] = position + 1;
    },
    delete(id, hash) {
      const i = slotOf(id, hash);
      if (i >= 0) deleteAt(i);
    },
    deletePosition(hash, position) {
      if (size === 0) return;
      const mask = positions.length - 1;
      for (let i = hash & mask; positions[i] !== 0; i = (i + 1) & mask) {
        if (positions[i] === position + 1) return deleteAt(i);
      }
    },
    growthBytes: () => (isFull() ? (grownSlots() - positions.length) * SLOT_BYTES : 0),
    growIfFull() {
      if (!isFull()) return;
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
    },
    clear() {
      positions = new Int32Array(0);
      hashes = new Uint32Array(0);
      size = 0;
    },
    get size() {
      return size;
    },
    get bytes() {
      return positions.length * SLOT_BYTES;
    },
  };
}
