/**
 * The Merkle tree of a day's daily scores, as the AnchorRegistry knows it.
 *
 * After the daily recompute of day D (V9), the daily scores of D become the leaves of one tree, built
 * exactly as `@openzeppelin/merkle-tree`'s `StandardMerkleTree.of(values, types)` builds it (leaf =
 * keccak256(keccak256(abi.encode(values))), leaves sorted by hash, pairs hashed sorted), so
 * `AnchorRegistry.verify`, `VraiScores.verify` and any OpenZeppelin tooling accept its proofs. A day's leaves
 * are of one version (`SCORE_LEAF_VERSIONS`): version 1, `[agent, day, method, inputs sha256]`, for the days
 * anchored before version 2, which carries the score itself for contracts (contracts/VraiScores.sol). Its root is
 * anchored with `AnchorRegistry.anchorRoot(root, leafCount, kind)`, the version's kind, and read back from
 * `RootAnchored`. Pure: no database, no network (storing is `store/anchors`, sending `service/anchoring`).
 */
import { keccak256 as keccak256Bytes } from "js-sha3";
import { decodeEventLog, getAddress, hexToString, stringToHex, zeroAddress, type Address, type Hex } from "viem";
import { BaseError } from "../errors";
import { dayName, dayNumber, dayStart } from "../method";
import { anchorRegistryAbi } from "./abi/anchorRegistry";

/** ABI types of a version-1 leaf's values `[agent, day (YYYY-MM-DD), method, inputs sha256 (0x-hex)]` (IAnchorRegistry.verify). */
export const SCORE_LEAF_TYPES = ["string", "string", "string", "bytes32"] as const;

/**
 * The `kind` of a day's root of version-1 leaves in the `RootAnchored` event: `bytes32("vrai-score-day")`, the
 * ASCII bytes of "vrai-score-day" padded on the right with zeros, as Solidity converts a short string literal.
 */
export const SCORE_DAY_KIND: Hex = stringToHex("vrai-score-day", { size: 32 });

/** The values a version-1 leaf binds: agent, day, method and the SHA-256 of its inputs. */
export type ScoreLeafValues = [agentId: string, day: string, method: string, sha256: Hex];

/**
 * ABI types of a version-2 leaf, `VraiScores.Score`'s fields in `abi.encode` order (README, "For dApps"):
 * agent id, day (days since 1970-01-01), method (ASCII, bytes32), inputs sha256, total, identity, reliability,
 * integrity (each `NOT_ACTIVE_COMPONENT` when not active), state (`SCORE_STATES`), and the ERC-8004 identity the
 * agent held an active proof of at the score's time: chain id, identity registry, token id (zeros when none).
 */
export const SCORE_LEAF_V2_TYPES = [
  "string",
  "uint32",
  "bytes32",
  "bytes32",
  "uint16",
  "int16",
  "int16",
  "int16",
  "uint8",
  "uint256",
  "address",
  "uint256",
] as const;

/** The names of a version-2 leaf's values: `VraiScores.Score`'s fields. */
export const SCORE_LEAF_V2_FIELDS = [
  "agent",
  "day",
  "method",
  "inputsSha256",
  "total",
  "identity",
  "reliability",
  "integrity",
  "state",
  "erc8004ChainId",
  "erc8004Registry",
  "erc8004TokenId",
] as const;

/** The `kind` of a day's root of version-2 leaves: `bytes32("vrai-score-day-v2")` (`VraiScores.SCORE_DAY_V2_KIND`). */
export const SCORE_DAY_V2_KIND: Hex = stringToHex("vrai-score-day-v2", { size: 32 });

/** A version-2 leaf's component that is not active in its method (V7: Shield is not a component; none is inactive in 0.1 or 0.2). */
export const NOT_ACTIVE_COMPONENT = -1;

/** A version-2 leaf's `state` (V8): its index here. */
export const SCORE_STATES = ["provisional", "established"] as const;

/** The values a version-2 leaf binds, in `SCORE_LEAF_V2_TYPES` order. */
export type ScoreLeafV2Values = [
  agentId: string,
  day: number,
  method: Hex,
  inputsSha256: Hex,
  total: number,
  identity: number,
  reliability: number,
  integrity: number,
  state: number,
  erc8004ChainId: bigint,
  erc8004Registry: Address,
  erc8004TokenId: bigint,
];

/** A leaf of either version. */
export type AnyScoreLeafValues = ScoreLeafValues | ScoreLeafV2Values;

export type ScoreLeafVersion = 1 | 2;

/** Each leaf version's anchor kind (as bytes32 and as text) and ABI types: one table, one line per version. */
export const SCORE_LEAF_VERSIONS: Readonly<Record<ScoreLeafVersion, { kind: Hex; kindName: string; types: readonly string[] }>> = {
  1: { kind: SCORE_DAY_KIND, kindName: "vrai-score-day", types: SCORE_LEAF_TYPES },
  2: { kind: SCORE_DAY_V2_KIND, kindName: "vrai-score-day-v2", types: SCORE_LEAF_V2_TYPES },
};

/** Whether a leaf's values are of version 2 (their count tells the versions apart). */
export function isScoreLeafV2(values: AnyScoreLeafValues): values is ScoreLeafV2Values {
  return values.length === SCORE_LEAF_V2_TYPES.length;
}

/** The version of a leaf's values. */
export function scoreLeafVersion(values: AnyScoreLeafValues): ScoreLeafVersion {
  return isScoreLeafV2(values) ? 2 : 1;
}

/** What a stored daily score gives its version-2 leaf (`store/anchors` reads it, one SQL expression for the tree and the proofs). */
export type ScoreLeafFacts = {
  agentId: string;
  /** YYYY-MM-DD. */
  day: string;
  method: string;
  /** Lowercase hex, without 0x. */
  sha256: string;
  total: number;
  /** The components as the leaf has them (`componentLeafValue`). */
  identity: number;
  reliability: number;
  integrity: number;
  established: boolean;
  /** The subject `<chainId>:<registry>:<tokenId>` of the ERC-8004 proof active at the score's time, if any. */
  erc8004Subject: string | null;
};

/** A component as a version-2 leaf holds it: its value, or `NOT_ACTIVE_COMPONENT`. */
export function componentLeafValue(component: { value: number } | { active: false }): number {
  return "value" in component ? component.value : NOT_ACTIVE_COMPONENT;
}

/** An ERC-8004 proof's stored subject `<chainId>:<registry>:<tokenId>` (as `service/proofs/subjects` writes it) as leaf values. */
function erc8004LeafValues(subject: string | null): [bigint, Address, bigint] {
  if (subject === null) return [0n, zeroAddress, 0n];
  const match = /^([1-9][0-9]*):(0x[0-9a-fA-F]{40}):([0-9]+)$/.exec(subject);
  if (!match) throw new BaseError("invalid_leaf", `not an ERC-8004 subject: ${JSON.stringify(subject)}`);
  return [BigInt(match[1]), getAddress(match[2]), BigInt(match[3])];
}

/** The day number and method word of the leaf made last: a day's tree is a million leaves of one day and a method or two. */
let lastDay: { day: string; number: number } | null = null;
const methodWords = new Map<string, Hex>();

/**
 * The version-2 leaf of a stored daily score.
 * @example
 * scoreLeafV2({
 *   agentId: "agt_1", day: "2026-11-29", method: "0.2", sha256: "ab".repeat(32),
 *   total: 230, identity: 130, reliability: 0, integrity: 100, established: false, erc8004Subject: null,
 * })
 */
export function scoreLeafV2(facts: ScoreLeafFacts): ScoreLeafV2Values {
  if (lastDay?.day !== facts.day) lastDay = { day: facts.day, number: dayNumber(dayStart(facts.day)) };
  let method = methodWords.get(facts.method);
  if (method === undefined) {
    method = stringToHex(facts.method, { size: 32 });
    // Method versions are few; anything else is not kept for long.
    if (methodWords.size >= 16) methodWords.clear();
    methodWords.set(facts.method, method);
  }
  return [
    facts.agentId,
    lastDay.number,
    method,
    `0x${facts.sha256}`,
    facts.total,
    facts.identity,
    facts.reliability,
    facts.integrity,
    facts.established ? 1 : 0,
    ...erc8004LeafValues(facts.erc8004Subject),
  ];
}

/** A leaf's values as JSON (ABI order): numbers as they are, uint256 values as decimal strings, addresses checksummed. */
export type ScoreLeafJson = Array<string | number>;

/** The values of a leaf as JSON: what the API serves and `scoreLeafFromJson` reads back. */
export function scoreLeafToJson(values: AnyScoreLeafValues): ScoreLeafJson {
  return values.map((v) => (typeof v === "bigint" ? v.toString(10) : v));
}

/**
 * A leaf's values from their JSON (`scoreLeafToJson`), either version, checked against its version's types.
 * @throws BaseError `invalid_leaf` naming the value that is not of its type
 */
export function scoreLeafFromJson(json: readonly unknown[]): AnyScoreLeafValues {
  const bad = (i: number, what: string): never => {
    throw new BaseError("invalid_leaf", `leaf value ${i}: expected ${what}, got ${JSON.stringify(json[i])}`);
  };
  const str = (i: number) => (typeof json[i] === "string" ? (json[i] as string) : bad(i, "a string"));
  const hex32 = (i: number): Hex => (/^0x[0-9a-fA-F]{64}$/.test(str(i)) ? (json[i] as Hex) : bad(i, "32 bytes of 0x-hex"));
  if (json.length === SCORE_LEAF_TYPES.length) return [str(0), str(1), str(2), hex32(3)];
  if (json.length !== SCORE_LEAF_V2_TYPES.length)
    return bad(json.length, `${SCORE_LEAF_TYPES.length} or ${SCORE_LEAF_V2_TYPES.length} values`);
  const int = (i: number) => (Number.isSafeInteger(json[i]) ? (json[i] as number) : bad(i, "an integer"));
  const uint256 = (i: number) => (/^(0|[1-9][0-9]{0,77})$/.test(str(i)) ? BigInt(json[i] as string) : bad(i, "a decimal uint256"));
  const address = (i: number): Address => (/^0x[0-9a-fA-F]{40}$/.test(str(i)) ? getAddress(json[i] as string) : bad(i, "an address"));
  return [str(0), int(1), hex32(2), hex32(3), int(4), int(5), int(6), int(7), int(8), uint256(9), address(10), uint256(11)];
}

/** A version-2 leaf's values by field name (`SCORE_LEAF_V2_FIELDS`), as `VraiScores.Score` takes them (viem: a struct as an object). */
export type ScoreLeafV2Fields = {
  agent: string;
  day: number;
  method: Hex;
  inputsSha256: Hex;
  total: number;
  identity: number;
  reliability: number;
  integrity: number;
  state: number;
  erc8004ChainId: bigint;
  erc8004Registry: Address;
  erc8004TokenId: bigint;
};

/** A version-2 leaf's values by field name. */
export function scoreLeafV2Fields(values: ScoreLeafV2Values): ScoreLeafV2Fields {
  const [
    agent,
    day,
    method,
    inputsSha256,
    total,
    identity,
    reliability,
    integrity,
    state,
    erc8004ChainId,
    erc8004Registry,
    erc8004TokenId,
  ] = values;
  return {
    agent,
    day,
    method,
    inputsSha256,
    total,
    identity,
    reliability,
    integrity,
    state,
    erc8004ChainId,
    erc8004Registry,
    erc8004TokenId,
  };
}

/** What a version-2 leaf says in words: its day as YYYY-MM-DD, its method as text, its state by name. */
export function describeScoreLeafV2(values: ScoreLeafV2Values): {
  day: string;
  method: string;
  state: (typeof SCORE_STATES)[number] | null;
} {
  return { day: dayName(values[1]), method: hexToString(values[2], { size: 32 }), state: SCORE_STATES[values[8]] ?? null };
}

type Keccak = (data: Uint8Array) => Uint8Array;

/**
 * keccak256 over bytes with js-sha3 (a dependency of its own), faster than the pure-JS implementation
 * viem uses: that decides whether a 1,000,000-leaf tree builds in time (`npm run bench:indexer`).
 * A test checks the tree against `@openzeppelin/merkle-tree`'s.
 */
const keccak: Keccak = (data) => new Uint8Array(keccak256Bytes.arrayBuffer(data));

const hex = (bytes: Uint8Array): Hex => `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")}`;
const bytesOf = (value: Hex): Buffer => Buffer.from(value.slice(2), "hex");

const padded32 = (n: number) => Math.ceil(n / 32) * 32;

/** Size of `abi.encode(string, string, string, bytes32)` of a version-1 leaf's values. */
function encodedV1Size([agentId, day, method]: ScoreLeafValues): number {
  return 128 + 96 + padded32(Buffer.byteLength(agentId)) + padded32(Buffer.byteLength(day)) + padded32(Buffer.byteLength(method));
}

const HEX32 = /^0x[0-9a-fA-F]{64}$/;
const invalidLeaf = (message: string) => new BaseError("invalid_leaf", message);

/** Writes `abi.encode(string, string, string, bytes32)` of a version-1 leaf's values into zeroed `out` at `at`; returns the end. */
function writeV1Values(values: ScoreLeafValues, out: Buffer, at: number): number {
  let tail = 128;
  for (let i = 0; i < 3; i++) {
    out.writeUInt32BE(tail, at + i * 32 + 28);
    const length = out.write(values[i], at + tail + 32, "utf8");
    out.writeUInt32BE(length, at + tail + 28);
    tail += 32 + padded32(length);
  }
  const digest = values[3];
  if (!HEX32.test(digest)) throw invalidLeaf(`sha256 must be 32 bytes of 0x-hex, got ${digest}`);
  out.write(digest.slice(2), at + 96, "hex");
  return at + tail;
}

/** The head of a version-2 encoding: one word per value, the agent's being its offset. */
const V2_HEAD = 32 * SCORE_LEAF_V2_TYPES.length;
const UINT256_MAX = 2n ** 256n - 1n;

/** Size of `abi.encode` of a version-2 leaf's values (`SCORE_LEAF_V2_TYPES`). */
function encodedV2Size(values: ScoreLeafV2Values): number {
  return V2_HEAD + 32 + padded32(Buffer.byteLength(values[0]));
}

/** Writes the word of an integer of `bits` bits, signed or not, checked against its type. */
function writeInteger(value: number, bits: number, signed: boolean, name: string, out: Buffer, word: number): void {
  const min = signed ? -(2 ** (bits - 1)) : 0;
  const max = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
  if (!Number.isInteger(value) || value < min || value > max)
    throw invalidLeaf(`${name} must be an ${signed ? "int" : "uint"}${bits}, got ${value}`);
  // Two's complement over the word: a negative value's upper bytes are all ones.
  if (value < 0) {
    out.fill(0xff, word, word + 28);
    out.writeInt32BE(value, word + 28);
  } else out.writeUInt32BE(value, word + 28);
}

/** Writes a uint256 word into zeroed `out` (0, most leaves' ERC-8004 values, is left as it is). */
function writeUint256(value: bigint, name: string, out: Buffer, word: number): void {
  if (value < 0n || value > UINT256_MAX) throw invalidLeaf(`${name} must be a uint256, got ${value}`);
  if (value !== 0n) out.write(value.toString(16).padStart(64, "0"), word, "hex");
}

/** Writes `abi.encode` of a version-2 leaf's values into zeroed `out` at `at`; returns the end. */
function writeV2Values(values: ScoreLeafV2Values, out: Buffer, at: number): number {
  const [agentId, day, method, sha256, total, identity, reliability, integrity, state, chainId, registry, tokenId] = values;
  out.writeUInt32BE(V2_HEAD, at + 28);
  writeInteger(day, 32, false, "day", out, at + 32);
  for (const [i, name, value] of [
    [2, "method", method],
    [3, "inputsSha256", sha256],
  ] as const) {
    if (!HEX32.test(value)) throw invalidLeaf(`${name} must be 32 bytes of 0x-hex, got ${value}`);
    out.write(value.slice(2), at + 32 * i, "hex");
  }
  writeInteger(total, 16, false, "total", out, at + 128);
  writeInteger(identity, 16, true, "identity", out, at + 160);
  writeInteger(reliability, 16, true, "reliability", out, at + 192);
  writeInteger(integrity, 16, true, "integrity", out, at + 224);
  writeInteger(state, 8, false, "state", out, at + 256);
  writeUint256(chainId, "erc8004ChainId", out, at + 288);
  if (!/^0x[0-9a-fA-F]{40}$/.test(registry)) throw invalidLeaf(`erc8004Registry must be an address, got ${registry}`);
  out.write(registry.slice(2), at + 320 + 12, "hex");
  writeUint256(tokenId, "erc8004TokenId", out, at + 352);
  const length = out.write(agentId, at + V2_HEAD + 32, "utf8");
  out.writeUInt32BE(length, at + V2_HEAD + 28);
  return at + V2_HEAD + 32 + padded32(length);
}

/** Size of `abi.encode` of a leaf's values, its version's types. */
export function encodedLeafSize(values: AnyScoreLeafValues): number {
  return isScoreLeafV2(values) ? encodedV2Size(values) : encodedV1Size(values);
}

/** Writes `abi.encode` of a leaf's values into zeroed `out` at `at`; returns the end. */
export function writeLeafValues(values: AnyScoreLeafValues, out: Buffer, at: number): number {
  return isScoreLeafV2(values) ? writeV2Values(values, out, at) : writeV1Values(values, out, at);
}

/** `abi.encode` of a leaf's values. */
export function encodeLeafValues(values: AnyScoreLeafValues): Buffer {
  const out = Buffer.alloc(encodedLeafSize(values));
  writeLeafValues(values, out, 0);
  return out;
}

/**
 * The leaf hash of a score, as `StandardMerkleTree.leafHash(values)` with its version's types: keccak256(keccak256(abi.encode(values))).
 * @example scoreLeafHash(["agt_1", "2026-11-29", "0.2", `0x${"ab".repeat(32)}`])
 */
export function scoreLeafHash(values: AnyScoreLeafValues): Hex {
  return hex(keccak(keccak(encodeLeafValues(values))));
}

/** Writes into `out` (64 bytes) what a parent's hash is of: the two nodes in byte order; returns `out`. */
export function writeSortedPair(a: Uint8Array, b: Uint8Array, out: Uint8Array): Uint8Array {
  const aFirst = Buffer.compare(a, b) <= 0;
  out.set(aFirst ? a : b, 0);
  out.set(aFirst ? b : a, 32);
  return out;
}

/** keccak256 of the two nodes in byte order (OpenZeppelin's `standardNodeHash`, `MerkleProof`'s commutative hash). */
function hashPair(a: Uint8Array, b: Uint8Array): Uint8Array {
  return keccak(writeSortedPair(a, b, Buffer.allocUnsafe(64)));
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
 * Builds in memory the tree of score leaves exactly as `StandardMerkleTree.of(values, types)` does with their
 * version's types (same root, same proofs; a test checks both against the package). A day's tree is built in
 * bounded memory by `buildChunkedScoreTree`; this one is for small trees and as a reference.
 */
export function buildScoreTree(values: readonly AnyScoreLeafValues[]): ScoreTree {
  const n = values.length;
  if (n === 0) throw new BaseError("empty_tree", "a tree needs at least one leaf");
  if (values.some((v) => v.length !== values[0].length)) throw invalidLeaf("a tree's leaves are of one version");
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
  if (!Number.isSafeInteger(leafCount) || leafCount < 1)
    throw new BaseError("empty_tree", `a tree needs at least one leaf, got ${leafCount}`);
  if (!Number.isSafeInteger(chunkNodes) || chunkNodes < 1)
    throw new BaseError("invalid_chunk_size", `a chunk holds at least one node, got ${chunkNodes}`);
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

/** Splits a stored proof (concatenated 32-byte hashes) into its 0x-hex elements. */
export function proofElements(proof: Uint8Array): Hex[] {
  const out: Hex[] = [];
  for (let i = 0; i < proof.length; i += 32) out.push(hex(proof.subarray(i, i + 32)));
  return out;
}
/** A `RootAnchored` event of the AnchorRegistry: the root, its kind, its leaf count and the submitter's role (METHOD A6). */
export type RootAnchoredEvent = { root: Hex; kind: Hex; leafCount: bigint; role: number };

/** The decoded `RootAnchored` events of a transaction receipt's logs emitted by `contract`. */
export function rootAnchoredLogs(
  contract: Address,
  logs: ReadonlyArray<{ address: Address; data: Hex; topics: [Hex, ...Hex[]] | [] }>,
): RootAnchoredEvent[] {
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
