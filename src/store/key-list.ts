/**
 * An append-only list of distinct strings that finds a string's position: the memory store's
 * idempotency keys of one agent's latest claim (V3.1: keys are scoped per agent and claim, and a
 * counted check-in's key is kept until the next claim), where position `n` is the claim's n-th
 * counted check-in.
 *
 * Why not a `Map<string, number>`: `vrai replay` looks a key up for every check-in, across
 * thousands of agents whose tables are no longer in the CPU's caches. A Map's lookup reads its
 * bucket, then each entry of the chain, then each entry's key string, each usually a cache miss;
 * here a lookup reads one slot (hash and position side by side) and touches a key string only when
 * the hashes match. `npm run bench:method` replays check-ins through it. A class rather than a
 * factory's closure: V8 reads and writes its fields faster than variables of a closure that growing
 * reassigns (measured in the commit that made it one).
 */
const INITIAL_SLOTS = 16;
/**
 * Slots are multiplied by this when they fill up to half: a new typed array costs far more than a
 * Map's growth (it is zeroed outside the JS heap), so they grow in fewer, larger steps.
 */
const GROWTH = 4;

export class KeyList {
  /** The strings in the order they were added. */
  private readonly keys: string[] = [];
  /** Open addressing with linear probing: per slot, the key's hash, then its position + 1 (0: empty). */
  private slots = new Int32Array(2 * INITIAL_SLOTS);
  /** Slots - 1 (slots are a power of two, at least twice the keys; GROWTH is a power of two too). */
  private mask = INITIAL_SLOTS - 1;

  get size(): number {
    return this.keys.length;
  }

  /** The position of `key`, or -1 when it was never added. */
  indexOf(key: string): number {
    const hash = hashOf(key);
    const slots = this.slots;
    for (let s = hash & this.mask; ; s = (s + 1) & this.mask) {
      const entry = slots[2 * s + 1];
      if (entry === 0) return -1;
      if (slots[2 * s] === hash && this.keys[entry - 1] === key) return entry - 1;
    }
  }

  /**
   * Adds `key` at the end and returns its position.
   * @throws Error when `key` is already in the list (the caller looks it up first)
   */
  add(key: string): number {
    if (2 * (this.keys.length + 1) > this.mask + 1) this.grow();
    const hash = hashOf(key);
    const slots = this.slots;
    let s = hash & this.mask;
    for (; slots[2 * s + 1] !== 0; s = (s + 1) & this.mask) {
      if (slots[2 * s] === hash && this.keys[slots[2 * s + 1] - 1] === key) throw new Error(`key already in the list: ${key}`);
    }
    this.keys.push(key);
    slots[2 * s] = hash;
    slots[2 * s + 1] = this.keys.length;
    return this.keys.length - 1;
  }

  /** The key at `position`. */
  at(position: number): string {
    return this.keys[position];
  }

  /** Multiplies the slots by GROWTH, placing each key again by the hash kept beside it. */
  private grow(): void {
    const old = this.slots;
    const mask = GROWTH * (this.mask + 1) - 1;
    const slots = new Int32Array(2 * (mask + 1));
    for (let o = 0; o < old.length; o += 2) {
      if (old[o + 1] === 0) continue;
      let s = old[o] & mask;
      while (slots[2 * s + 1] !== 0) s = (s + 1) & mask;
      slots[2 * s] = old[o];
      slots[2 * s + 1] = old[o + 1];
    }
    this.slots = slots;
    this.mask = mask;
  }
}

/** FNV-1a over the UTF-16 code units, then mixed (murmur3's finaliser) so that linear probing spreads keys that differ only at the end. */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}
