/**
 * The Merkle tree of a day's daily scores, as the AnchorRegistry knows it.
 *
 * After the daily recompute of day D (V9), the daily scores of D become the leaves of one tree, built
 * exactly as `@openzeppelin/merkle-tree`'s `StandardMerkleTree.of(values, SCORE_LEAF_TYPES)` builds it
 * (leaf = keccak256(keccak256(abi.encode(values))), leaves sorted by hash, pairs hashed sorted), so
 * `AnchorRegistry.verify` and any OpenZeppelin tooling accept its proofs. Its root is anchored with
 * `AnchorRegistry.anchorRoot(root, leafCount, SCORE_DAY_KIND)` and read back from `RootAnchored`.
 * Pure: no database, no network (storing is `store/anchors`, sending `service/anchoring`).
 */
import { keccak256 as keccak256Bytes } from "js-sha3";
import { decodeEventLog, getAddress, stringToHex, type Address, type Hex } from "viem";
import os from "node:os";
import { Worker } from "node:worker_threads";
import { BaseError } from "../errors";
import { anchorRegistryAbi } from "./abi/anchorRegistry";

/** ABI types of a score leaf's values `[agent, day (YYYY-MM-DD), method, inputs sha256 (0x-hex)]` (IAnchorRegistry.verify). */
export const SCORE_LEAF_TYPES = ["string", "string", "string", "bytes32"] as const;

/**
 * The `kind` of a day's score root in the `RootAnchored` event: `bytes32("vrai-score-day")`, the ASCII
 * bytes of "vrai-score-day" padded on the right with zeros, as Solidity converts a short string literal.
 */
export const SCORE_DAY_KIND: Hex = stringToHex("vrai-score-day", { size: 32 });

/** The values a daily score's leaf binds: agent, day, method and the SHA-256 of its inputs. */
export type ScoreLeafValues = [agentId: string, day: string, method: string, sha256: Hex];

type Keccak = (data: Uint8Array) => Uint8Array;

/**
 * keccak256 over bytes with js-sha3 (a dependency of its own): about three times faster than the
 * pure-JS implementation viem uses, which decides whether a 1,000,000-leaf tree builds in time.
 * A test checks the tree against `@openzeppelin/merkle-tree`'s.
 */
const keccak: Keccak = (data) => new Uint8Array(keccak256Bytes.arrayBuffer(data));

const hex = (bytes: Uint8Array): Hex => `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;
const bytesOf = (value: Hex): Buffer => Buffer.from(value.slice(2), "hex");

const padded32 = (n: number) => Math.ceil(n / 32) * 32;

/** Size of `abi.encode(string, string, string, bytes32)` of a score leaf's values. */
function encodedLeafSize([agentId, day, method]: ScoreLeafValues): number {
  return 128 + 96 + padded32(Buffer.byteLength(agentId)) + padded32(Buffer.byteLength(day)) + padded32(Buffer.byteLength(method));
}

/** Writes `abi.encode(string, string, string, bytes32)` of a score leaf's values into zeroed `out` at `at`; returns the end. */
function writeLeafValues(values: ScoreLeafValues, out: Buffer, at: number): number {
  let tail = 128;
  for (let i = 0; i < 3; i++) {
    out.writeUInt32BE(tail, at + i * 32 + 28);
    const length = out.write(values[i], at + tail + 32, "utf8");
    out.writeUInt32BE(length, at + tail + 28);
    tail += 32 + padded32(length);
  }
  const digest = values[3];
  if (!/^0x[0-9a-fA-F]{64}$/.test(digest)) throw new BaseError("invalid_leaf", `sha256 must be 32 bytes of 0x-hex, got ${digest}`);
  out.write(digest.slice(2), at + 96, "hex");
  return at + tail;
}

/** `abi.encode(string, string, string, bytes32)` of a score leaf's values. */
function encodeLeafValues(values: ScoreLeafValues): Buffer {
  const out = Buffer.alloc(encodedLeafSize(values));
  writeLeafValues(values, out, 0);
  return out;
}

/**
 * The leaf hash of a score, as `StandardMerkleTree.leafHash(values)`: keccak256(keccak256(abi.encode(values))).
 * @example scoreLeafHash(["agt_1", "2026-11-29", "0.2", `0x${"ab".repeat(32)}`])
 */
export function scoreLeafHash(values: ScoreLeafValues): Hex {
  return hex(keccak(keccak(encodeLeafValues(values))));
}

/** keccak256 of the two nodes in byte order (OpenZeppelin's `standardNodeHash`, `MerkleProof`'s commutative hash). */
function hashPair(a: Uint8Array, b: Uint8Array): Uint8Array {
  const pair = Buffer.allocUnsafe(64);
  const aFirst = Buffer.compare(a, b) <= 0;
  pair.set(aFirst ? a : b, 0);
  pair.set(aFirst ? b : a, 32);
  return keccak(pair);
}

/** The root a leaf and its proof lead to (OpenZeppelin's `processProof`). */
export function processScoreProof(leaf: Hex, proof: readonly Hex[]): Hex {
  let node: Uint8Array = bytesOf(leaf);
  for (const sibling of proof) node = hashPair(node, bytesOf(sibling));
  return hex(node);
}

/** A tree held in memory (small trees: tests, tools): its root and, for each leaf in the order given, its leaf hash and proof. */
export type ScoreTree = {
  root: Hex;
  leafCount: number;
  /** Leaf hash of the `i`-th value given, 32 bytes. */
  leaf(i: number): Buffer;
  /** Proof of the `i`-th value given: sibling hashes concatenated, 32 bytes each, from the leaf up. */
  proof(i: number): Buffer;
};

/**
 * Builds in memory the tree of score leaves exactly as `StandardMerkleTree.of(values, SCORE_LEAF_TYPES)`
 * does (same root, same proofs; a test checks both against the package). A day's tree is built in
 * bounded memory by `buildChunkedScoreTree`; this one is for small trees and as a reference.
 */
export function buildScoreTree(values: readonly ScoreLeafValues[]): ScoreTree {
  const n = values.length;
  if (n === 0) throw new BaseError("empty_tree", "a tree needs at least one leaf");
  const leaves = values.map((v) => Buffer.from(keccak(keccak(encodeLeafValues(v)))));
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => Buffer.compare(leaves[a], leaves[b]));
  const size = 2 * n - 1;
  const nodes: Buffer[] = new Array(size);
  const treeIndexOf = new Uint32Array(n);
  order.forEach((valueIndex, k) => {
    nodes[size - 1 - k] = leaves[valueIndex];
    treeIndexOf[valueIndex] = size - 1 - k;
  });
  for (let i = size - 1 - n; i >= 0; i--) nodes[i] = Buffer.from(hashPair(nodes[2 * i + 1], nodes[2 * i + 2]));
  return {
    root: hex(nodes[0]),
    leafCount: n,
    leaf: (i) => leaves[i],
    proof: (i) => Buffer.concat(proofIndices(treeIndexOf[i]).map((j) => nodes[j])),
  };
}

/** Below this many leaves, hashing them on worker threads costs more than it saves. */
export const PARALLEL_MIN_LEAVES = 20_000;

/** Computes leaf hashes page by page, on worker threads kept for its life; `close()` ends them. */
export type LeafHasher = {
  /** The leaf hashes of `values`, 32 bytes each, in the order given (as `scoreLeafHash`). */
  hash(values: readonly ScoreLeafValues[]): Promise<Buffer>;
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
        for (let i = 0; i < n; i++) leaves.set(keccak(keccak(encodeLeafValues(values[i]))), 32 * i);
        return leaves;
      }
      const jsSha3Path = require.resolve("js-sha3");
      workers ??= Array.from({ length: threads }, () => new Worker(LEAF_HASH_WORKER, { eval: true, workerData: { jsSha3Path } }));
      const offsets = new Uint32Array(new SharedArrayBuffer(4 * (n + 1)));
      for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i] + encodedLeafSize(values[i]);
      const encoded = Buffer.from(new SharedArrayBuffer(offsets[n]));
      for (let i = 0; i < n; i++) writeLeafValues(values[i], encoded, offsets[i]);
      const leaves = Buffer.from(new SharedArrayBuffer(32 * n));
      const share = Math.ceil(n / workers.length);
      await Promise.all(
        workers.map((worker, t) => run(worker, { encoded: encoded.buffer, offsets: offsets.buffer, leaves: leaves.buffer, from: t * share, to: Math.min(n, (t + 1) * share) })),
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
const { keccak256 } = require(workerData.jsSha3Path);
parentPort.on("message", (job) => {
  const encoded = new Uint8Array(job.encoded);
  const offsets = new Uint32Array(job.offsets);
  const leaves = new Uint8Array(job.leaves);
  for (let i = job.from; i < job.to; i++) {
    const inner = new Uint8Array(keccak256.arrayBuffer(encoded.subarray(offsets[i], offsets[i + 1])));
    leaves.set(new Uint8Array(keccak256.arrayBuffer(inner)), 32 * i);
  }
  parentPort.postMessage(null);
});
`;

/**
 * Heap indices of the proof of node `index`, from it up to the root: node i's children are 2i+1 and 2i+2
 * (the package's layout), so its sibling is i+1 when i is odd, i-1 when even.
 */
export function proofIndices(index: number): number[] {
  const out: number[] = [];
  for (let j = index; j > 0; j = (j - 1) >> 1) out.push(j % 2 === 1 ? j + 1 : j - 1);
  return out;
}

/**
 * Where a stored tree's nodes sit. A tree of n leaves has 2n-1 nodes in the package's heap layout (sorted
 * leaf k at index 2n-2-k, so leaf hashes fall as the index rises from n-1 to 2n-2); it is stored as chunks
 * of `chunkNodes` consecutive nodes (32 bytes each), chunk c holding nodes c·C to c·C+C-1, the last chunk
 * fewer.
 */
export type ScoreTreeLayout = {
  leafCount: number;
  /** 2n-1. */
  size: number;
  chunkNodes: number;
  /** The chunk holding node `index`, and the node's position in it. */
  locate(index: number): { chunk: number; offset: number };
  /** Heap indices of the leaves chunk `chunk` holds, `from` to `to` inclusive; null when it holds none. */
  leavesIn(chunk: number): { from: number; to: number } | null;
};

/** The layout of a stored tree of `leafCount` leaves in chunks of `chunkNodes` nodes. */
export function scoreTreeLayout(leafCount: number, chunkNodes: number): ScoreTreeLayout {
  if (!Number.isSafeInteger(leafCount) || leafCount < 1) throw new BaseError("empty_tree", `a tree needs at least one leaf, got ${leafCount}`);
  if (!Number.isSafeInteger(chunkNodes) || chunkNodes < 1) throw new BaseError("invalid_chunk_size", `a chunk holds at least one node, got ${chunkNodes}`);
  const size = 2 * leafCount - 1;
  return {
    leafCount,
    size,
    chunkNodes,
    locate: (index) => ({ chunk: Math.floor(index / chunkNodes), offset: index % chunkNodes }),
    leavesIn(chunk) {
      const from = Math.max(chunk * chunkNodes, leafCount - 1);
      const to = Math.min(chunk * chunkNodes + chunkNodes - 1, size - 1);
      return from <= to ? { from, to } : null;
    },
  };
}

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
export async function buildChunkedScoreTree(leafCount: number, sortedLeaves: AsyncIterable<Uint8Array>, chunkNodes: number, store: TreeChunkStore): Promise<ChunkedTreeBuild> {
  const layout = scoreTreeLayout(leafCount, chunkNodes);
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
      if (!bytes || bytes.length < 32 * offset + 32) throw new BaseError("tree_chunk_missing", `node ${i} of chunk ${at} was not read back`);
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

/** Splits a stored proof (concatenated 32-byte hashes) into its 0x-hex elements. */
export function proofElements(proof: Uint8Array): Hex[] {
  const out: Hex[] = [];
  for (let i = 0; i < proof.length; i += 32) out.push(hex(proof.subarray(i, i + 32)));
  return out;
}
/** A `RootAnchored` event of the AnchorRegistry: the root, its kind, its leaf count and the submitter's role (METHOD A6). */
export type RootAnchoredEvent = { root: Hex; kind: Hex; leafCount: bigint; role: number };

/** The decoded `RootAnchored` events of a transaction receipt's logs emitted by `contract`. */
export function rootAnchoredLogs(contract: Address, logs: ReadonlyArray<{ address: Address; data: Hex; topics: [Hex, ...Hex[]] | [] }>): RootAnchoredEvent[] {
  const out: RootAnchoredEvent[] = [];
  for (const log of logs) {
    if (getAddress(log.address) !== getAddress(contract)) continue;
    try {
      const event = decodeEventLog({ abi: anchorRegistryAbi, data: log.data, topics: log.topics });
      if (event.eventName === "RootAnchored") out.push(event.args);
    } catch {
      // Another event of the contract (roles): not an anchor.
    }
  }
  return out;
}
