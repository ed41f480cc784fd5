/**
 * Daily on-chain anchoring of Vrai scores.
 *
 * After the daily recompute of day D (V9), the daily scores of D become the leaves of one Merkle tree,
 * built exactly as `@openzeppelin/merkle-tree`'s `StandardMerkleTree.of(values, SCORE_LEAF_TYPES)`
 * builds it (leaf = keccak256(keccak256(abi.encode(values))), leaves sorted by hash, pairs hashed
 * sorted), so `AnchorRegistry.verify` and any OpenZeppelin tooling accept its proofs. The root is
 * anchored with `AnchorRegistry.anchorRoot(root, leafCount, SCORE_DAY_KIND)`: one transaction a day,
 * whatever the number of agents. Every daily score keeps its leaf hash and proof (`score_proofs`).
 *
 * Three parts, one job each: the tree (pure), the repository (SQL), the anchoring service (chain).
 */
import { keccak256 as keccak256Bytes } from "js-sha3";
import {
  createPublicClient,
  createWalletClient,
  decodeEventLog,
  encodeFunctionData,
  getAddress,
  http,
  keccak256 as viemKeccak256,
  stringToHex,
  TransactionReceiptNotFoundError,
  WaitForTransactionReceiptTimeoutError,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import fs from "node:fs";
import os from "node:os";
import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import { BaseError } from "../errors";
import type { Db } from "../store/db";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";

// ---------------------------------------------------------------------------------------------------
// The tree (pure)

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
const PARALLEL_MIN_LEAVES = 20_000;

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

// ---------------------------------------------------------------------------------------------------
// The repository (SQL, tables of migration 003)

/** Where a day's root stands. */
export type DayAnchorRow = {
  day: string;
  root: Hex;
  leafCount: number;
  status: "pending" | "mined";
  builtAt: number;
  chainId: number | null;
  contract: Address | null;
  txHash: Hex | null;
  rawTx: Hex | null;
  blockNumber: number | null;
  minedAt: number | null;
};

/** A daily score with its proof and its day's anchor, as `GET /v1/scores/:id/proof` serves it. */
export type ScoreProof = {
  scoreId: number;
  leaf: Hex;
  leafValues: ScoreLeafValues;
  proof: Hex[];
  root: Hex;
  day: string;
  anchor: { txHash: Hex; blockNumber: number; chainId: number; contract: Address } | null;
};

/** Rows per INSERT of proofs: one statement carries ids, offsets and two binary blobs. */
const PROOF_BATCH = 20_000;
/** Scores read per query while gathering a day's leaves. */
const LEAF_PAGE = 50_000;

type AnchorDbRow = {
  day: string; root: string; leaf_count: number; status: "pending" | "mined"; built_at: number; chain_id: number | null;
  contract: string | null; tx_hash: string | null; raw_tx: string | null; block_number: number | null; mined_at: number | null;
};

const anchorRow = (r: AnchorDbRow): DayAnchorRow => ({
  day: r.day, root: r.root as Hex, leafCount: Number(r.leaf_count), status: r.status, builtAt: Number(r.built_at), chainId: r.chain_id,
  contract: r.contract as Address | null, txHash: r.tx_hash as Hex | null, rawTx: r.raw_tx as Hex | null,
  blockNumber: r.block_number === null ? null : Number(r.block_number), minedAt: r.mined_at === null ? null : Number(r.mined_at),
});

/** The anchoring tables, on PostgreSQL or PGlite. */
export function createAnchorRepository(db: Db) {
  return {
    /** The daily scores of `day` as leaf values, in id order, with their ids. */
    async dayLeaves(day: string): Promise<{ ids: number[]; values: ScoreLeafValues[] }> {
      const ids: number[] = [];
      const values: ScoreLeafValues[] = [];
      for (let after = 0; ; ) {
        const { rows } = await db.query<{ id: number; agent_id: string; method: string; sha256: string }>(
          "SELECT id, agent_id, method, sha256 FROM scores WHERE trigger = 'daily' AND day = $1 AND id > $2 ORDER BY id LIMIT $3",
          [day, after, LEAF_PAGE],
        );
        for (const r of rows) {
          ids.push(Number(r.id));
          values.push([r.agent_id, day, r.method, `0x${r.sha256}`]);
        }
        if (rows.length < LEAF_PAGE) return { ids, values };
        after = Number(rows[rows.length - 1].id);
      }
    },

    /**
     * Stores a day's root (pending) and every score's leaf and proof in one transaction; false, storing
     * nothing, when the day already has a tree (another instance built it first).
     */
    async insertTree(day: string, ids: readonly number[], tree: ScoreTree, builtAt: number): Promise<boolean> {
      return db.transaction(async (tx) => {
        const inserted = await tx.query(
          "INSERT INTO score_anchors (day, root, leaf_count, status, built_at) VALUES ($1, $2, $3, 'pending', $4) ON CONFLICT (day) DO NOTHING",
          [day, tree.root, tree.leafCount, builtAt],
        );
        if (inserted.rowCount === 0) return false;
        // Each batch's parameters are assembled while the previous batch's INSERT runs in the database.
        let params: unknown[] | null = proofBatchParams(day, ids, tree, 0, Math.min(ids.length, PROOF_BATCH));
        for (let from = 0; params; from += PROOF_BATCH) {
          const inserting = tx.query(INSERT_PROOFS, params);
          const next = from + PROOF_BATCH;
          params = next < ids.length ? proofBatchParams(day, ids, tree, next, Math.min(ids.length, next + PROOF_BATCH)) : null;
          await inserting;
        }
        return true;
      });
    },

    async getDay(day: string): Promise<DayAnchorRow | null> {
      const { rows } = await db.query<AnchorDbRow>("SELECT * FROM score_anchors WHERE day = $1", [day]);
      return rows[0] ? anchorRow(rows[0]) : null;
    },

    /** Days whose root is not yet seen mined, oldest first. */
    async unminedDays(): Promise<DayAnchorRow[]> {
      const { rows } = await db.query<AnchorDbRow>("SELECT * FROM score_anchors WHERE status <> 'mined' ORDER BY day");
      return rows.map(anchorRow);
    },

    /**
     * Records the signed transaction about to be broadcast, if the day's transaction is still `expected`
     * (compare-and-set: two instances never both send). Returns whether it was recorded.
     */
    async setPendingTx(day: string, expected: Hex | null, next: { txHash: Hex; rawTx: Hex; chainId: number; contract: Address } | null): Promise<boolean> {
      const { rowCount } = await db.query(
        "UPDATE score_anchors SET tx_hash = $3, raw_tx = $4, chain_id = $5, contract = $6 WHERE day = $1 AND status = 'pending' AND tx_hash IS NOT DISTINCT FROM $2",
        [day, expected, next?.txHash ?? null, next?.rawTx ?? null, next?.chainId ?? null, next?.contract ?? null],
      );
      return rowCount === 1;
    },

    async setMined(day: string, mined: { txHash: Hex; blockNumber: number; chainId: number; contract: Address; minedAt: number }): Promise<void> {
      await db.query(
        "UPDATE score_anchors SET status = 'mined', tx_hash = $2, block_number = $3, chain_id = $4, contract = $5, mined_at = $6, raw_tx = NULL WHERE day = $1",
        [day, mined.txHash, mined.blockNumber, mined.chainId, mined.contract, mined.minedAt],
      );
    },

    /** A score with its proof and anchor; `null` when the score does not exist. */
    async scoreProof(scoreId: number): Promise<
      | null
      | { trigger: "daily" | "change"; proof: null }
      | { trigger: "daily"; proof: ScoreProof }
    > {
      const { rows } = await db.query<{
        agent_id: string; method: string; sha256: string; trigger: "daily" | "change"; day: string | null; leaf: Uint8Array | null; proof: Uint8Array | null;
        root: string | null; status: string | null; tx_hash: string | null; block_number: number | null; chain_id: number | null; contract: string | null;
      }>(
        `SELECT s.agent_id, s.method, s.sha256, s.trigger, s.day, p.leaf, p.proof, a.root, a.status, a.tx_hash, a.block_number, a.chain_id, a.contract
         FROM scores s LEFT JOIN score_proofs p ON p.score_id = s.id LEFT JOIN score_anchors a ON a.day = p.day WHERE s.id = $1`,
        [scoreId],
      );
      const r = rows[0];
      if (!r) return null;
      if (r.leaf === null || r.proof === null || r.root === null || r.day === null) return { trigger: r.trigger, proof: null };
      const mined = r.status === "mined" && r.tx_hash !== null && r.block_number !== null && r.chain_id !== null && r.contract !== null;
      return {
        trigger: "daily",
        proof: {
          scoreId, leaf: hex(r.leaf), leafValues: [r.agent_id, r.day, r.method, `0x${r.sha256}`], proof: proofElements(r.proof), root: r.root as Hex, day: r.day,
          anchor: mined ? { txHash: r.tx_hash as Hex, blockNumber: Number(r.block_number), chainId: Number(r.chain_id), contract: r.contract as Address } : null,
        },
      };
    },
  };
}

export type AnchorRepository = ReturnType<typeof createAnchorRepository>;

/** One statement inserts a batch of proofs: ids, offsets and lengths as arrays, leaves and proofs as two binary blobs. */
const INSERT_PROOFS = `INSERT INTO score_proofs (score_id, day, leaf, proof)
  SELECT u.id, $1, substring($3::bytea FROM ((u.ord - 1) * 32 + 1)::int FOR 32), substring($4::bytea FROM u.off + 1 FOR u.len)
  FROM unnest($2::bigint[], $5::int[], $6::int[]) WITH ORDINALITY AS u(id, off, len, ord)`;

/** The parameters of `INSERT_PROOFS` for leaves `from` to `to`. */
function proofBatchParams(day: string, ids: readonly number[], tree: ScoreTree, from: number, to: number): unknown[] {
  const { leaves, proofs, offsets, lengths } = tree.proofBatch(from, to);
  return [day, ids.slice(from, to), leaves, proofs, offsets, lengths];
}

// ---------------------------------------------------------------------------------------------------
// The anchoring service (chain)

/** The account and chain that anchor roots: a wallet client with a local account, and the AnchorRegistry. */
export type AnchorWriter = {
  publicClient: PublicClient<Transport, Chain | undefined>;
  walletClient: WalletClient<Transport, Chain | undefined, Account>;
  /** The AnchorRegistry address. */
  contract: Address;
};

/** Anchoring configuration (`vrai serve`: ANCHOR_PRIVATE_KEY, ANCHOR_RPC_URL or RPC_URL, ANCHOR_REGISTRY or ANCHOR_DEPLOYMENT). */
export type AnchorWriterConfig = { privateKey: Hex; rpcUrl: string; registry?: string; deploymentFile?: string };

/** The configuration names no usable AnchorRegistry. */
export class AnchorConfigError extends BaseError {
  constructor(message: string) {
    super("anchor_config_invalid", message);
  }
}

/**
 * A writer over HTTP JSON-RPC from configuration; the registry is `registry`, or
 * `contracts.AnchorRegistry.address` of a `deployments/<network>.json` file.
 */
export function anchorWriterFromConfig(config: AnchorWriterConfig): AnchorWriter {
  let address = config.registry;
  if (address === undefined && config.deploymentFile !== undefined) {
    const deployment = JSON.parse(fs.readFileSync(config.deploymentFile, "utf8")) as { contracts?: { AnchorRegistry?: { address?: string } } };
    address = deployment.contracts?.AnchorRegistry?.address;
    if (address === undefined) throw new AnchorConfigError(`${config.deploymentFile} has no contracts.AnchorRegistry.address`);
  }
  if (address === undefined) throw new AnchorConfigError("anchoring needs ANCHOR_REGISTRY or ANCHOR_DEPLOYMENT");
  const transport = http(config.rpcUrl);
  return {
    publicClient: createPublicClient({ transport }),
    walletClient: createWalletClient({ transport, account: privateKeyToAccount(config.privateKey) }),
    contract: getAddress(address),
  };
}

/** Where an anchoring attempt left a day. */
export type AnchorOutcome =
  | { type: "mined"; day: string; txHash: Hex; blockNumber: number }
  | { type: "waiting"; day: string; txHash: Hex }
  | { type: "off"; day: string };

/** First retry after a failed attempt; doubled at each failure up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 5_000;
const MAX_RETRY_MS = 300_000;
/** How long one attempt waits for its transaction's receipt before leaving it to the next attempt. */
const RECEIPT_TIMEOUT_MS = 120_000;

/**
 * The daily anchoring: `afterDaily(day)` builds and stores the day's tree, then anchors every root not
 * yet mined, oldest first. Failed attempts are retried in the background (backoff from 5 s to 5 min)
 * until mined; `start()` resumes after a restart. Idempotent per day: a root already anchored on chain
 * (`anchorOf(root)` non-zero) counts as mined, the signed transaction is stored before it is broadcast
 * and rebroadcast as is, so a day is anchored by one transaction.
 */
export function createAnchoring(deps: { db: Db; clock: Clock; logger: Logger; writer?: AnchorWriter; receiptTimeoutMs?: number }) {
  const { clock, logger, writer } = deps;
  const repo = createAnchorRepository(deps.db);
  let retryTimer: NodeJS.Timeout | null = null;
  let retryMs = FIRST_RETRY_MS;
  let running: Promise<AnchorOutcome[]> | null = null;
  let stopped = false;
  if (!writer) logger.info("anchoring off: no ANCHOR_PRIVATE_KEY (trees and proofs are still stored)");

  /** Builds and stores the tree of `day`'s daily scores, once; returns its root (null: no score that day). */
  async function buildDay(day: string): Promise<{ root: Hex; leafCount: number } | null> {
    const existing = await repo.getDay(day);
    if (existing) return { root: existing.root, leafCount: existing.leafCount };
    const started = Date.now();
    const { ids, values } = await repo.dayLeaves(day);
    if (ids.length === 0) return null;
    const tree = await buildScoreTreeParallel(values);
    if (await repo.insertTree(day, ids, tree, clock.now())) {
      logger.info({ day, root: tree.root, leaves: tree.leafCount, ms: Date.now() - started }, "score tree stored");
      return { root: tree.root, leafCount: tree.leafCount };
    }
    // Another instance stored the day's tree first: the same scores, so the same tree.
    const stored = await repo.getDay(day);
    return stored && { root: stored.root, leafCount: stored.leafCount };
  }

  /** Where the root is anchored on chain, if it is: the `RootAnchored` log's transaction and block. */
  async function findOnChain(w: AnchorWriter, row: DayAnchorRow): Promise<{ txHash: Hex; blockNumber: number } | null> {
    const anchor = await w.publicClient.readContract({ address: w.contract, abi: anchorRegistryAbi, functionName: "anchorOf", args: [row.root] });
    if (anchor.submitter === "0x0000000000000000000000000000000000000000") return null;
    if (row.txHash) {
      const receipt = await w.publicClient.getTransactionReceipt({ hash: row.txHash }).catch(() => null);
      if (receipt?.status === "success") return { txHash: row.txHash, blockNumber: Number(receipt.blockNumber) };
    }
    const logs = await w.publicClient.getContractEvents({ address: w.contract, abi: anchorRegistryAbi, eventName: "RootAnchored", args: { root: row.root }, fromBlock: 0n });
    const log = logs[0];
    if (!log?.transactionHash || log.blockNumber === null) throw new BaseError("anchor_log_missing", `root ${row.root} is anchored but no RootAnchored log was found`, { retryable: true });
    return { txHash: log.transactionHash, blockNumber: Number(log.blockNumber) };
  }

  /** One attempt for one day: mined if the root is on chain, else (re)broadcast its one transaction and wait. */
  async function anchorOne(w: AnchorWriter, chainId: number, row: DayAnchorRow): Promise<AnchorOutcome> {
    const markMined = async (found: { txHash: Hex; blockNumber: number }): Promise<AnchorOutcome> => {
      await repo.setMined(row.day, { ...found, chainId, contract: w.contract, minedAt: clock.now() });
      logger.info({ day: row.day, root: row.root, txHash: found.txHash, blockNumber: found.blockNumber }, "score root anchored");
      return { type: "mined", day: row.day, ...found };
    };
    const onChain = await findOnChain(w, row);
    if (onChain) return markMined(onChain);

    let txHash = row.txHash;
    let rawTx = row.rawTx;
    if (txHash && rawTx) {
      // Rebroadcast the stored transaction as is: same nonce, so it can never anchor twice.
      const receipt = await w.publicClient.getTransactionReceipt({ hash: txHash }).catch((error: unknown) => {
        if (error instanceof TransactionReceiptNotFoundError) return null;
        throw error;
      });
      if (receipt && receipt.status !== "success") {
        logger.warn({ day: row.day, txHash }, "anchoring transaction reverted; sending a new one");
        txHash = rawTx = null;
      } else if (!receipt) {
        const replaced = await w.publicClient.sendRawTransaction({ serializedTransaction: rawTx }).then(
          () => false,
          (error: unknown) => {
            // "already known": still in the pool, wait for it. "nonce too low": another transaction of this
            // account took its nonce, so it can never be mined (the root is not on chain): send a new one.
            const message = (error as Error).message;
            logger.info({ day: row.day, txHash, err: message.split("\n")[0] }, "rebroadcast refused");
            return /nonce too low|nonce has already been used/i.test(message);
          },
        );
        if (replaced) txHash = rawTx = null;
      }
      if (!txHash && !(await repo.setPendingTx(row.day, row.txHash, null))) return { type: "waiting", day: row.day, txHash: row.txHash as Hex };
    }
    if (!txHash) {
      const data = encodeFunctionData({ abi: anchorRegistryAbi, functionName: "anchorRoot", args: [row.root, BigInt(row.leafCount), SCORE_DAY_KIND] });
      const request = await w.walletClient.prepareTransactionRequest({ account: w.walletClient.account, chain: null, to: w.contract, data });
      rawTx = await w.walletClient.signTransaction({ ...request, account: w.walletClient.account, chain: null } as never);
      txHash = viemKeccak256(rawTx);
      if (!(await repo.setPendingTx(row.day, null, { txHash, rawTx, chainId, contract: w.contract }))) {
        return { type: "waiting", day: row.day, txHash };
      }
      await w.publicClient.sendRawTransaction({ serializedTransaction: rawTx });
      logger.info({ day: row.day, root: row.root, leaves: row.leafCount, txHash }, "score root sent");
    }
    try {
      const receipt = await w.publicClient.waitForTransactionReceipt({ hash: txHash, timeout: deps.receiptTimeoutMs ?? RECEIPT_TIMEOUT_MS });
      if (receipt.status === "success") return markMined({ txHash, blockNumber: Number(receipt.blockNumber) });
      const after = await findOnChain(w, { ...row, txHash: null });
      if (after) return markMined(after);
      await repo.setPendingTx(row.day, txHash, null);
      throw new BaseError("anchor_reverted", `anchoring transaction ${txHash} of ${row.day} reverted`, { retryable: true });
    } catch (error) {
      if (error instanceof WaitForTransactionReceiptTimeoutError) return { type: "waiting", day: row.day, txHash };
      throw error;
    }
  }

  /** Anchors every day not yet mined, oldest first; a failure schedules a retry and stops this pass. */
  async function anchorDue(): Promise<AnchorOutcome[]> {
    if (stopped) return [];
    if (running) {
      // A pass in progress may have listed the days before the caller's day was built: run one more after it.
      await running;
      return anchorDue();
    }
    running = (async () => {
      const outcomes: AnchorOutcome[] = [];
      try {
        const days = await repo.unminedDays();
        if (!writer) return days.map((d) => ({ type: "off" as const, day: d.day }));
        if (days.length === 0) return outcomes;
        const chainId = await writer.publicClient.getChainId();
        for (const row of days) outcomes.push(await anchorOne(writer, chainId, row));
        if (outcomes.some((o) => o.type === "waiting")) scheduleRetry();
        else retryMs = FIRST_RETRY_MS;
      } catch (error) {
        logger.error({ err: error, retryInMs: retryMs }, "anchoring failed; retrying");
        scheduleRetry();
      } finally {
        running = null;
      }
      return outcomes;
    })();
    return running;
  }

  function scheduleRetry(): void {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void anchorDue();
    }, retryMs);
    retryTimer.unref();
    retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
  }

  return {
    buildDay,
    anchorDue,
    /** The scheduler's hook after the daily recompute of `day` (V9): store its tree, then anchor. */
    async afterDaily(day: string): Promise<void> {
      await buildDay(day);
      await anchorDue();
    },
    /** A daily score's proof and its day's anchor. */
    async proofOf(scoreId: number): Promise<ScoreProof> {
      const found = await repo.scoreProof(scoreId);
      if (!found) throw new NotFoundError("score_not_found", `score ${scoreId} does not exist`);
      if (found.trigger !== "daily") throw new NotFoundError("score_not_daily", `score ${scoreId} is not a daily score: only daily scores are anchored`);
      if (!found.proof) throw new NotFoundError("proof_not_ready", `score ${scoreId}'s day has no tree yet (it is built after the daily recompute)`);
      return found.proof;
    },
    /** Resumes anchoring left pending by a previous run. */
    start(): void {
      stopped = false;
      void anchorDue();
    },
    /** Stops retrying and waits for an attempt in progress. */
    async stop(): Promise<void> {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = null;
      await running;
    },
  };
}

export type Anchoring = ReturnType<typeof createAnchoring>;

/** The decoded `RootAnchored` events of a transaction receipt's logs emitted by `contract`. */
export function rootAnchoredLogs(contract: Address, logs: ReadonlyArray<{ address: Address; data: Hex; topics: readonly Hex[] }>) {
  const out: Array<{ root: Hex; kind: Hex; leafCount: bigint; role: number }> = [];
  for (const log of logs) {
    if (getAddress(log.address) !== getAddress(contract)) continue;
    try {
      const event = decodeEventLog({ abi: anchorRegistryAbi, data: log.data, topics: log.topics as [Hex, ...Hex[]] });
      if (event.eventName === "RootAnchored") out.push(event.args);
    } catch {
      // Another event of the contract (roles): not an anchor.
    }
  }
  return out;
}
