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

/** A day's tree: its root and, for each leaf in the order given, its leaf hash and proof. */
export type ScoreTree = {
  root: Hex;
  leafCount: number;
  /** Leaf hash of the `i`-th value given, 32 bytes. */
  leaf(i: number): Buffer;
  /** Proof of the `i`-th value given: sibling hashes concatenated, 32 bytes each, from the leaf up. */
  proof(i: number): Buffer;
  /** Leaf hashes and proofs of values `from` to `to`, each kind in one buffer, with each proof's byte offset and length. */
  proofBatch(from: number, to: number): { leaves: Buffer; proofs: Buffer; offsets: number[]; lengths: number[] };
};

/**
 * Builds the tree of score leaves exactly as `StandardMerkleTree.of(values, SCORE_LEAF_TYPES)` does
 * (same root, same proofs; a test checks both against the package), in O(n log n) over flat buffers:
 * the package's hex strings make 1,000,000 leaves take minutes.
 */
export function buildScoreTree(values: readonly ScoreLeafValues[]): ScoreTree {
  const leaves = Buffer.allocUnsafe(32 * values.length);
  for (let i = 0; i < values.length; i++) leaves.set(keccak(keccak(encodeLeafValues(values[i]))), 32 * i);
  return treeOfLeafHashes(leaves);
}

/** Below this many leaves, hashing them on worker threads costs more than it saves. */
export const PARALLEL_MIN_LEAVES = 20_000;

/**
 * `buildScoreTree` with the leaf hashes (four fifths of the hashing) computed on worker threads, one per
 * core: the same tree. Small trees are built on the calling thread.
 */
export async function buildScoreTreeParallel(values: readonly ScoreLeafValues[], threads = os.availableParallelism()): Promise<ScoreTree> {
  if (values.length < PARALLEL_MIN_LEAVES || threads < 2) return buildScoreTree(values);
  const jsSha3Path = require.resolve("js-sha3");
  const n = values.length;
  const offsets = new Uint32Array(new SharedArrayBuffer(4 * (n + 1)));
  for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i] + encodedLeafSize(values[i]);
  const encoded = Buffer.from(new SharedArrayBuffer(offsets[n]));
  for (let i = 0; i < n; i++) writeLeafValues(values[i], encoded, offsets[i]);
  const leaves = Buffer.from(new SharedArrayBuffer(32 * n));
  const chunk = Math.ceil(n / threads);
  await Promise.all(
    Array.from({ length: threads }, (_, t) =>
      new Promise<void>((resolve, reject) => {
        const worker = new Worker(LEAF_HASH_WORKER, {
          eval: true,
          workerData: { jsSha3Path, encoded: encoded.buffer, offsets: offsets.buffer, leaves: leaves.buffer, from: t * chunk, to: Math.min(n, (t + 1) * chunk) },
        });
        worker.once("error", reject);
        worker.once("exit", (code) => (code === 0 ? resolve() : reject(new BaseError("leaf_hash_worker_failed", `leaf hashing worker exited with ${code}`))));
      }),
    ),
  );
  return treeOfLeafHashes(leaves);
}

/** Leaf hashes of encoded values `from` to `to`: keccak256(keccak256(encoded)), as `scoreLeafHash`. */
const LEAF_HASH_WORKER = `
const { workerData } = require("node:worker_threads");
const { keccak256 } = require(workerData.jsSha3Path);
const encoded = new Uint8Array(workerData.encoded);
const offsets = new Uint32Array(workerData.offsets);
const leaves = new Uint8Array(workerData.leaves);
for (let i = workerData.from; i < workerData.to; i++) {
  const inner = new Uint8Array(keccak256.arrayBuffer(encoded.subarray(offsets[i], offsets[i + 1])));
  leaves.set(new Uint8Array(keccak256.arrayBuffer(inner)), 32 * i);
}
`;

/** The tree over leaf hashes given in value order (32 bytes each): sorted, laid out and hashed as the package does. */
function treeOfLeafHashes(leaves: Buffer): ScoreTree {
  const n = leaves.length / 32;
  if (n === 0) throw new BaseError("empty_tree", "a tree needs at least one leaf");

  // Leaves sorted by hash (the package's default `sortLeaves`): sort (first 4 bytes, index) as one
  // 64-bit number natively, then order runs with equal first bytes by the whole hash.
  const keys = new BigUint64Array(n);
  for (let i = 0; i < n; i++) keys[i] = (BigInt(leaves.readUInt32BE(32 * i)) << 32n) | BigInt(i);
  keys.sort();
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = Number(keys[i] & 0xffffffffn);
  const leafAt = (i: number) => leaves.subarray(32 * i, 32 * i + 32);
  for (let start = 0; start < n; ) {
    let end = start + 1;
    while (end < n && leaves.readUInt32BE(32 * order[end]) === leaves.readUInt32BE(32 * order[start])) end++;
    if (end - start > 1) order.set(Array.from(order.subarray(start, end)).sort((a, b) => Buffer.compare(leafAt(a), leafAt(b))), start);
    start = end;
  }

  // The package's array layout: node i has children 2i+1 and 2i+2; sorted leaf k sits at size-1-k.
  const size = 2 * n - 1;
  const nodes = Buffer.from(new ArrayBuffer(32 * size));
  // The same bytes as 32-bit words (8 per node): proofs are copied word by word, not node by node as buffers.
  const words = new Uint32Array(nodes.buffer);
  const treeIndexOf = new Uint32Array(n);
  for (let k = 0; k < n; k++) {
    nodes.set(leafAt(order[k]), 32 * (size - 1 - k));
    treeIndexOf[order[k]] = size - 1 - k;
  }
  const node = (i: number) => nodes.subarray(32 * i, 32 * i + 32);
  for (let i = size - 1 - n; i >= 0; i--) nodes.set(hashPair(node(2 * i + 1), node(2 * i + 2)), 32 * i);

  return {
    root: hex(node(0)),
    leafCount: n,
    leaf: (i) => leafAt(i),
    proof(i) {
      const siblings: Buffer[] = [];
      for (let j = treeIndexOf[i]; j > 0; j = (j - 1) >> 1) siblings.push(node(j % 2 === 1 ? j + 1 : j - 1));
      return Buffer.concat(siblings);
    },
    proofBatch(from, to) {
      const offsets: number[] = [];
      const lengths: number[] = [];
      let total = 0;
      for (let i = from; i < to; i++) {
        let depth = 0;
        for (let j = treeIndexOf[i]; j > 0; j = (j - 1) >> 1) depth++;
        offsets.push(total);
        lengths.push(32 * depth);
        total += 32 * depth;
      }
      const leafBytes = Buffer.from(new ArrayBuffer(32 * (to - from)));
      const proofBytes = Buffer.from(new ArrayBuffer(total));
      const leafWords = new Uint32Array(leafBytes.buffer);
      const proofWords = new Uint32Array(proofBytes.buffer);
      let w = 0;
      for (let i = from; i < to; i++) {
        leafWords.set(words.subarray(8 * treeIndexOf[i], 8 * treeIndexOf[i] + 8), 8 * (i - from));
        for (let j = treeIndexOf[i]; j > 0; j = (j - 1) >> 1) {
          const sibling = 8 * (j % 2 === 1 ? j + 1 : j - 1);
          for (let k = 0; k < 8; k++) proofWords[w++] = words[sibling + k];
        }
      }
      return { leaves: leafBytes, proofs: proofBytes, offsets, lengths };
    },
  };
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
