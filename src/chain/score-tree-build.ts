/**
 * A day's score tree built at scale (the store's `storeDayTree`, a million leaves a day): leaf hashes computed a page at
 * a time on worker threads, and the tree made in chunks of bounded memory from the sorted leaves. The leaves, proofs and
 * small trees themselves are `score-tree.ts`'s (which the SDK bundles); this module hashes with a WebAssembly keccak256
 * (hash-wasm), five times faster than js-sha3 on a leaf and on a pair (1.75 against 8.8 us a leaf, 0.61 against 3.0 us a
 * pair, measured on this machine), created once per build since its module compiles asynchronously.
 */
import os from "node:os";
import { Worker } from "node:worker_threads";
import { createKeccak, type IHasher } from "hash-wasm";
import type { Hex } from "viem";
import { BaseError } from "../errors";
import {
  encodedLeafSize,
  encodeLeafValues,
  scoreTreeLayout,
  writeLeafValues,
  writeSortedPair,
  type AnyScoreLeafValues,
} from "./score-tree";

/** A keccak256 of hash-wasm's, made ready: the WebAssembly module compiles once per process, each instance has its own state. */
const newKeccak = (): Promise<IHasher> => createKeccak(256);

/** keccak256 of `data` with `h` (reset first). */
function keccakWith(h: IHasher, data: Uint8Array): Uint8Array {
  h.init();
  h.update(data);
  return h.digest("binary");
}

const hex = (bytes: Uint8Array): Hex => `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;

/** Below this many leaves, hashing them on worker threads costs more than it saves. */
export const PARALLEL_MIN_LEAVES = 20_000;

/** Computes leaf hashes page by page, on worker threads kept for its life; `close()` ends them. */
export type LeafHasher = {
  /** The leaf hashes of `values`, 32 bytes each, in the order given (as `scoreLeafHash`). */
  hash(values: readonly AnyScoreLeafValues[]): Promise<Buffer>;
  close(): Promise<void>;
};

/**
 * A leaf hasher with one worker thread per core (started at the first page of at least
 * `PARALLEL_MIN_LEAVES` values; smaller pages are hashed on the calling thread). The leaf hashes are four
 * fifths of a tree's hashing, which decides whether a 1,000,000-leaf day builds in time.
 * @example const hasher = createLeafHasher(); try { leaves = await hasher.hash(page); } finally { await hasher.close(); }
 */
export function createLeafHasher(threads = os.availableParallelism()): LeafHasher {
  let workers: Worker[] | null = null;
  let keccak: IHasher | undefined;
  const run = (worker: Worker, job: object) =>
    new Promise<void>((resolve, reject) => {
      const onError = (error: unknown) => {
        worker.off("message", onDone);
        reject(error);
      };
      const onDone = () => {
        worker.off("error", onError);
        resolve();
      };
      worker.once("message", onDone);
      worker.once("error", onError);
      worker.postMessage(job);
    });
  return {
    async hash(values) {
      const n = values.length;
      if (n < PARALLEL_MIN_LEAVES || threads < 2) {
        const leaves = Buffer.allocUnsafe(32 * n);
        keccak ??= await newKeccak();
        for (let i = 0; i < n; i++) leaves.set(keccakWith(keccak, keccakWith(keccak, encodeLeafValues(values[i]))), 32 * i);
        return leaves;
      }
      const hashWasmPath = require.resolve("hash-wasm");
      workers ??= Array.from({ length: threads }, () => new Worker(LEAF_HASH_WORKER, { eval: true, workerData: { hashWasmPath } }));
      const offsets = new Uint32Array(new SharedArrayBuffer(4 * (n + 1)));
      for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i] + encodedLeafSize(values[i]);
      const encoded = Buffer.from(new SharedArrayBuffer(offsets[n]));
      for (let i = 0; i < n; i++) writeLeafValues(values[i], encoded, offsets[i]);
      const leaves = Buffer.from(new SharedArrayBuffer(32 * n));
      const share = Math.ceil(n / workers.length);
      await Promise.all(
        workers.map((worker, t) =>
          run(worker, {
            encoded: encoded.buffer,
            offsets: offsets.buffer,
            leaves: leaves.buffer,
            from: t * share,
            to: Math.min(n, (t + 1) * share),
          }),
        ),
      );
      return leaves;
    },
    async close() {
      const ending = workers ?? [];
      workers = null;
      await Promise.all(ending.map((w) => w.terminate()));
    },
  };
}

/** Leaf hashes of encoded values `from` to `to` of each job: keccak256(keccak256(encoded)), as `scoreLeafHash`. */
const LEAF_HASH_WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const keccak = require(workerData.hashWasmPath).createKeccak(256);
const hash = (h, data) => {
  h.init();
  h.update(data);
  return h.digest("binary");
};
parentPort.on("message", async (job) => {
  const h = await keccak;
  const encoded = new Uint8Array(job.encoded);
  const offsets = new Uint32Array(job.offsets);
  const leaves = new Uint8Array(job.leaves);
  for (let i = job.from; i < job.to; i++) leaves.set(hash(h, hash(h, encoded.subarray(offsets[i], offsets[i + 1]))), 32 * i);
  parentPort.postMessage(null);
});
`;

/** Where the chunked build stores the chunks it makes and reads back the ones it needs again. */
export type TreeChunkStore = {
  /** Stores chunk `chunk` (its nodes concatenated) with its smallest leaf hash, null when it holds no leaf. */
  write(chunk: number, nodes: Buffer, minLeaf: Buffer | null): Promise<void>;
  /** Chunks written before, by number. */
  read(chunks: readonly number[]): Promise<Map<number, Uint8Array>>;
};

/** What a chunked build made: the root, and the most 32-byte hashes (nodes of chunks, leaves of a page) it held at once. */
export type ChunkedTreeBuild = { root: Hex; leafCount: number; peakNodesHeld: number };

/**
 * Builds the tree of `leafCount` leaves whose hashes `sortedLeaves` yields in ascending order (pages of
 * concatenated 32-byte hashes) and hands it to `store` chunk by chunk: the same nodes as
 * `StandardMerkleTree.of` (a test checks roots and proofs against the package). Memory stays O(chunk +
 * page) whatever the leaf count: nodes are made in descending index order, the leaves first (they arrive
 * in that order), then each parent from its children 2i+1 and 2i+2, which sit in higher, already written
 * chunks (2c, 2c+1 and the first node of 2c+2 for chunk c ≥ 1) read back when the chunk is made. At most
 * the chunk being made, the one being written, three read back and one page of leaves are held.
 */
export async function buildChunkedScoreTree(
  leafCount: number,
  sortedLeaves: AsyncIterable<Uint8Array>,
  chunkNodes: number,
  store: TreeChunkStore,
): Promise<ChunkedTreeBuild> {
  const layout = scoreTreeLayout(leafCount, chunkNodes);
  const keccak = await newKeccak();
  const pair = Buffer.allocUnsafe(64);
  const hashPair = (a: Uint8Array, b: Uint8Array): Uint8Array => keccakWith(keccak, writeSortedPair(a, b, pair));
  const { size } = layout;
  const C = chunkNodes;
  const n = leafCount;
  const lastChunk = layout.locate(size - 1).chunk;
  /** The chunk holding node n-1, the first leaf: it holds parents too, unless n-1 starts it. */
  const boundaryChunk = layout.locate(n - 1).chunk;
  const chunkLength = (c: number) => Math.min(C, size - c * C);
  let peakNodesHeld = 0;
  let writing: Promise<void> = Promise.resolve();
  let writingNodes = 0;
  const held = (nodes: number) => {
    peakNodesHeld = Math.max(peakNodesHeld, nodes + writingNodes);
  };
  /** Hands chunk c to the store; the next write (or read) waits for it, so at most one is in flight. */
  const write = async (c: number, nodes: Buffer) => {
    await writing;
    const leaves = layout.leavesIn(c);
    const minLeaf = leaves ? nodes.subarray(32 * (leaves.to - c * C), 32 * (leaves.to - c * C) + 32) : null;
    writingNodes = nodes.length / 32;
    writing = store.write(c, nodes, minLeaf);
    // Awaited by the next write or read: this keeps its failure from going unhandled meanwhile.
    writing.catch(() => undefined);
  };

  // The leaves: sorted leaf k at index size-1-k, so the ascending stream fills chunks from the last one down.
  let chunk = lastChunk;
  let current = Buffer.alloc(32 * chunkLength(chunk));
  let index = size - 1;
  for await (const page of sortedLeaves) {
    held(current.length / 32 + page.length / 32);
    for (let at = 0; at < page.length; at += 32) {
      if (index < n - 1) throw new BaseError("tree_leaf_count", `more than the ${n} leaves announced`);
      current.set(page.subarray(at, at + 32), 32 * (index - chunk * C));
      if (index === chunk * C && chunk > boundaryChunk) {
        await write(chunk, current);
        chunk--;
        current = Buffer.alloc(32 * C);
      }
      index--;
    }
  }
  if (index !== n - 2) throw new BaseError("tree_leaf_count", `${size - 1 - index} leaves, ${n} announced`);

  // The parents, chunk by chunk downwards, each from children already made. Chunk c's last child is the
  // first node of the lowest chunk chunk c+1 read: kept (32 bytes) rather than read again.
  let carried: { chunk: number; node: Uint8Array } | null = null;
  for (let c = boundaryChunk; c >= 0; c--) {
    if (c < boundaryChunk) current = Buffer.alloc(32 * C);
    const top = Math.min(n - 2, c * C + C - 1);
    let children = new Map<number, Uint8Array>();
    const lastChild = 2 * top + 2;
    const lastAt = layout.locate(lastChild);
    const carriedNode: Uint8Array | null = carried !== null && carried.chunk === lastAt.chunk && lastAt.offset === 0 ? carried.node : null;
    if (top >= c * C) {
      const first = Math.max(c + 1, layout.locate(2 * c * C + 1).chunk);
      const last: number = lastAt.chunk - (carriedNode ? 1 : 0);
      const wanted = Array.from({ length: Math.max(0, last - first + 1) }, (_, k) => first + k);
      if (wanted.length > 0) {
        await writing;
        children = await store.read(wanted);
        const lowest = children.get(wanted[0]);
        carried = lowest ? { chunk: wanted[0], node: Buffer.from(lowest.subarray(0, 32)) } : null;
      }
    }
    held(current.length / 32 + [...children.values()].reduce((sum, b) => sum + b.length / 32, 0));
    const node = (i: number): Uint8Array => {
      if (i === lastChild && carriedNode) return carriedNode;
      const { chunk: at, offset } = layout.locate(i);
      const bytes = at === c ? current : children.get(at);
      if (!bytes || bytes.length < 32 * offset + 32)
        throw new BaseError("tree_chunk_missing", `node ${i} of chunk ${at} was not read back`);
      return bytes.subarray(32 * offset, 32 * offset + 32);
    };
    for (let i = top; i >= c * C; i--) current.set(hashPair(node(2 * i + 1), node(2 * i + 2)), 32 * (i - c * C));
    if (c === 0) {
      const root = hex(current.subarray(0, 32));
      await write(0, current);
      await writing;
      return { root, leafCount: n, peakNodesHeld };
    }
    await write(c, current);
  }
  throw new BaseError("tree_chunk_missing", "chunk 0 was never made");
}
