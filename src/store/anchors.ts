/**
 * The anchor repository: `score_anchors` (migration 003, one row a day: root, leaf count, leaf version,
 * anchoring state) and `score_tree_chunks` (migration 011: each day's tree once, its node array in chunks),
 * on PostgreSQL or PGlite. SQL only: the tree's arithmetic is `chain/score-tree`'s, and the anchoring
 * service decides what is written when.
 */
import { bytesToHex, type Address, type Hex } from "viem";
import { buildChunkedScoreTree, createLeafHasher, type TreeChunkStore } from "../chain/score-tree-build";
import {
  proofIndices,
  scoreLeafHash,
  scoreLeafV2,
  scoreTreeLayout,
  type AnyScoreLeafValues,
  type ScoreLeafVersion,
} from "../chain/score-tree";
import type { Db, Queryable } from "./db";
import { BaseError } from "../errors";

/** Where a day's root stands. */
export type DayAnchorRow = {
  day: string;
  root: Hex;
  leafCount: number;
  /** The version of the day's leaves, which names the kind its root is anchored with (`SCORE_LEAF_VERSIONS`). */
  leafVersion: ScoreLeafVersion;
  status: "pending" | "mined";
  builtAt: number;
  chainId: number | null;
  contract: Address | null;
  txHash: Hex | null;
  rawTx: Hex | null;
  blockNumber: number | null;
  minedAt: number | null;
  /** Block time of the root's anchor; null until mined (and for days mined before it was recorded, migration 014). */
  anchoredAt: number | null;
  /** When the anchor was seen with enough confirmations to be final (migration 020); null until then. */
  finalAt: number | null;
};

/** Where a day's root is anchored: its transaction and block, and the block's time (null for days mined before migration 014). */
export type ScoreAnchor = { txHash: Hex; blockNumber: number; chainId: number; contract: Address; anchoredAt: number | null };

/** A daily score with its proof and its day's anchor (null until mined), derived from the stored tree. */
export type ScoreProof = {
  scoreId: number;
  agentId: string;
  day: string;
  leafVersion: ScoreLeafVersion;
  leaf: Hex;
  leafValues: AnyScoreLeafValues;
  proof: Hex[];
  root: Hex;
  anchor: ScoreAnchor | null;
};

/**
 * A score as the proof lookup finds it: absent (`null`), a change score (never proven), a daily score without a
 * proof (its day's tree not built yet, or built without it: stored after the tree), or with one.
 */
export type ScoreProofLookup =
  | null
  | { trigger: "change"; proof: null }
  | { trigger: "daily"; proof: null; day: string; tree: "none" | "without the score" }
  | { trigger: "daily"; proof: ScoreProof };

/** The signed anchoring transaction of a day, stored before it is broadcast. */
export type PendingAnchorTx = { txHash: Hex; rawTx: Hex; chainId: number; contract: Address };

/**
 * Where and when a day's root was seen anchored on chain: its block's time, when the service saw it, and when it saw it
 * final (enough confirmations; null: not yet).
 */
export type MinedAnchor = {
  txHash: Hex;
  blockNumber: number;
  chainId: number;
  contract: Address;
  anchoredAt: number;
  minedAt: number;
  finalAt: number | null;
};

/** The days whose root is not anchored yet (pending): how many, the oldest, and when its tree was built. */
export type AnchoringLag = { days: number; oldestDay: string | null; oldestBuiltAt: number | null };

/** The anchoring tables. */
export type AnchorRepository = {
  /**
   * Builds the tree of `day`'s daily scores and stores it with its root (pending) in one transaction, in
   * memory bounded by the repository's page and chunk sizes whatever the number of scores. One instance
   * builds a day: another waits for it, then finds the day `exists` and stores nothing.
   */
  storeDayTree(day: string, builtAt: number): Promise<DayTreeOutcome>;
  /** The day's root and anchoring state; `null` before its tree is stored. */
  getDay(day: string): Promise<DayAnchorRow | null>;
  /** Days whose anchor is not final yet (not mined, or mined with fewer confirmations than asked), oldest first. */
  unfinalDays(): Promise<DayAnchorRow[]>;
  /**
   * Records the signed transaction about to be broadcast (or clears it: `null`), if the day's transaction
   * is still `expected` (compare-and-set: two instances never both send). Returns whether it was recorded.
   */
  setPendingTx(day: string, expected: Hex | null, next: PendingAnchorTx | null): Promise<boolean>;
  /** Marks the day mined by the given transaction; its signed transaction is kept until the anchor is final. */
  setMined(day: string, mined: MinedAnchor): Promise<void>;
  /**
   * The day's anchor by `txHash`, not final, is no longer on chain (a reorganisation dropped its block): the day is
   * pending again, with that transaction and its signed bytes. False if the day is not so (another instance moved it).
   */
  setDropped(day: string, txHash: Hex): Promise<boolean>;
  /** The days whose root is not anchored yet. */
  anchoringLag(): Promise<AnchoringLag>;
  /** A score with its proof (derived from its day's stored tree) and anchor; `null` when the score does not exist. */
  scoreProof(scoreId: number): Promise<ScoreProofLookup>;
  /**
   * Whether the agent exists, its latest daily score whose day's root is mined, if any, the day of its latest daily
   * score mined or not (null before its first), when its latest claim was made (null: no such agent), and when its owner
   * unclaimed it (null: claimed, issue #29).
   */
  latestAnchoredScore(agentId: string): Promise<{
    agentExists: boolean;
    scoreId: number | null;
    latestDailyDay: string | null;
    claimedAt: number | null;
    releasedAt: number | null;
  }>;
};

/** What `storeDayTree` did: stored the tree, found none to build (no daily score), or found it built. */
export type DayTreeOutcome =
  | { type: "stored"; root: Hex; leafCount: number; leafVersion: ScoreLeafVersion; peakNodesHeld: number }
  | { type: "empty" }
  | { type: "exists" };

/** Sizes of a tree build; the defaults suit 1,000,000 leaves, tests make them tiny. */
export type AnchorRepositoryOptions = {
  /** Nodes per stored chunk (default `TREE_CHUNK_NODES`). */
  chunkNodes?: number;
  /** Scores read, and sorted leaf hashes fetched, per query (default `TREE_PAGE_ROWS`). */
  pageRows?: number;
  /** Leaf hashing threads (default: one per core). */
  threads?: number;
};

/**
 * Nodes per chunk of a stored tree: 2,048 × 32 bytes = 64 KiB, stored out of line uncompressed (hashes
 * do not compress). A proof reads one chunk whole (the leaf's, found by its fence) and then only its
 * siblings' 32 bytes each; the top 11 levels of every tree are all in chunk 0. Larger chunks make the
 * leaf's chunk slower to read; smaller ones add rows and round trips to the build (a 1,000,000-leaf tree
 * is 977 chunks). The stored chunk size is read back from chunk 0, so a day keeps the size it was built with.
 */
export const TREE_CHUNK_NODES = 2048;
/** Rows per query while building: 20,000 scores (a few MB as JS strings) and then 640 KB of sorted leaf hashes. */
export const TREE_PAGE_ROWS = 20_000;

/** The build transaction's scratch table of leaf hashes, dropped at commit. */
const SCRATCH = "score_tree_leaves";
/** `pg_advisory_xact_lock(TREE_LOCK_CLASS, hashtext(day))`: one instance builds a day's tree at a time. */
const TREE_LOCK_CLASS = 7_264_011;

/** A `score_anchors` row; the hex columns hold only what this repository wrote. */
type AnchorDbRow = {
  day: string;
  root: Hex;
  leaf_count: number;
  leaf_version: number;
  status: "pending" | "mined";
  built_at: number;
  chain_id: number | null;
  contract: Address | null;
  tx_hash: Hex | null;
  raw_tx: Hex | null;
  block_number: number | null;
  mined_at: number | null;
  anchored_at: number | null;
  final_at: number | null;
};

const nullableNumber = (value: number | string | null): number | null => (value === null ? null : Number(value));
const leafVersionOf = (value: number | string): ScoreLeafVersion => (Number(value) === 2 ? 2 : 1);

// Drivers may hand bigint columns (built_at, block_number, mined_at, anchored_at) back as strings: converted here, once.
const anchorRow = (r: AnchorDbRow): DayAnchorRow => ({
  day: r.day,
  root: r.root,
  leafCount: Number(r.leaf_count),
  leafVersion: leafVersionOf(r.leaf_version),
  status: r.status,
  builtAt: Number(r.built_at),
  chainId: r.chain_id,
  contract: r.contract,
  txHash: r.tx_hash,
  rawTx: r.raw_tx,
  blockNumber: nullableNumber(r.block_number),
  minedAt: nullableNumber(r.mined_at),
  anchoredAt: nullableNumber(r.anchored_at),
  finalAt: nullableNumber(r.final_at),
});

/**
 * What a daily score's leaf is made of, from its row `s` of `scores`: the one expression the day's tree and
 * every proof read, so the leaf a proof hashes is the leaf the tree holds. The ERC-8004 identity is the
 * subject of the agent's erc8004 proof active at the score's `at` (V6; the latest proven, should it hold two),
 * as the score's inputs counted it; the components are those migration 014 keeps.
 */
const LEAF_COLUMNS = `s.agent_id, s.method, s.sha256, s.total, s.identity_points, s.reliability_points, s.integrity_points,
  COALESCE(s.established, s.result->>'state' = 'established', false) AS established,
  (SELECT p.subject FROM proofs p
   WHERE p.agent_id = s.agent_id AND p.kind = 'erc8004' AND p.verified_at <= s.at AND (p.removed_at IS NULL OR p.removed_at > s.at)
   ORDER BY p.verified_at DESC, p.id DESC LIMIT 1) AS erc8004_subject`;

type LeafRow = {
  agent_id: string;
  method: string;
  sha256: string;
  total: number;
  identity_points: number | null;
  reliability_points: number | null;
  integrity_points: number | null;
  established: boolean;
  erc8004_subject: string | null;
};

/** A version-2 leaf needs the components, which rows written before migration 014 lack: such a day's tree is of version 1. */
class ComponentsMissing extends Error {}

/** The leaf of version `version` of a daily score of `day`, from its LEAF_COLUMNS. */
function leafOf(r: LeafRow, day: string, version: ScoreLeafVersion): AnyScoreLeafValues {
  if (version === 1) return [r.agent_id, day, r.method, `0x${r.sha256}`];
  if (r.identity_points === null || r.reliability_points === null || r.integrity_points === null) throw new ComponentsMissing();
  return scoreLeafV2({
    agentId: r.agent_id,
    day,
    method: r.method,
    sha256: r.sha256,
    total: Number(r.total),
    identity: r.identity_points,
    reliability: r.reliability_points,
    integrity: r.integrity_points,
    established: r.established,
    erc8004Subject: r.erc8004_subject,
  });
}

/** The version new days' trees are built of. */
const CURRENT_LEAF_VERSION: ScoreLeafVersion = 2;

/**
 * Hashes the day's daily scores into the scratch table as leaves of `version`, page by page in id order;
 * returns how many. The next page is asked for before this one is hashed, and a page's INSERT runs while
 * the next is hashed.
 * @throws ComponentsMissing for version 2 when a score lacks its components (written before migration 014)
 */
async function hashDayLeaves(
  tx: Queryable,
  day: string,
  version: ScoreLeafVersion,
  pageRows: number,
  threads: number | undefined,
): Promise<number> {
  type ScoreRow = LeafRow & { id: number };
  const page = (after: number) =>
    tx.query<ScoreRow>(
      `SELECT s.id, ${LEAF_COLUMNS} FROM scores s WHERE s.trigger = 'daily' AND s.day = $1 AND s.id > $2 ORDER BY s.id LIMIT $3`,
      [day, after, pageRows],
    );
  const hasher = createLeafHasher(threads);
  let inserting: Promise<unknown> = Promise.resolve();
  let count = 0;
  try {
    for (let next: Promise<{ rows: ScoreRow[] }> | null = page(0); next; ) {
      const { rows }: { rows: ScoreRow[] } = await next;
      next = rows.length === pageRows ? page(Number(rows[rows.length - 1].id)) : null;
      // Awaited below or at the next page's end: this keeps its failure from going unhandled meanwhile.
      next?.catch(() => undefined);
      if (rows.length === 0) break;
      const leaves = await hasher.hash(rows.map((r) => leafOf(r, day, version)));
      await inserting;
      inserting = tx.query(
        `INSERT INTO ${SCRATCH} (leaf) SELECT substring($1::bytea FROM i * 32 + 1 FOR 32) FROM generate_series(0, $2 - 1) AS i`,
        [leaves, rows.length],
      );
      inserting.catch(() => undefined);
      count += rows.length;
    }
    await inserting;
    return count;
  } finally {
    await hasher.close();
  }
}

/** The scratch table's leaf hashes in ascending order, `pageRows` a fetch, through a cursor of the transaction. */
async function* sortedLeaves(tx: Queryable, pageRows: number): AsyncGenerator<Buffer> {
  await tx.query(`DECLARE sorted_leaves NO SCROLL CURSOR FOR SELECT leaf FROM ${SCRATCH} ORDER BY leaf`);
  for (;;) {
    const { rows } = await tx.query<{ leaf: Uint8Array }>(`FETCH ${pageRows} FROM sorted_leaves`);
    if (rows.length === 0) break;
    yield Buffer.concat(rows.map((r) => r.leaf));
    if (rows.length < pageRows) break;
  }
  await tx.query("CLOSE sorted_leaves");
}

/** `score_tree_chunks` of one day, inside the build's transaction. */
function chunkStore(tx: Queryable, day: string): TreeChunkStore {
  return {
    async write(chunk, nodes, minLeaf) {
      await tx.query("INSERT INTO score_tree_chunks (day, chunk, nodes, min_leaf) VALUES ($1, $2, $3, $4)", [day, chunk, nodes, minLeaf]);
    },
    async read(chunks) {
      const { rows } = await tx.query<{ chunk: number; nodes: Uint8Array }>(
        "SELECT chunk, nodes FROM score_tree_chunks WHERE day = $1 AND chunk = ANY($2::int[])",
        [day, chunks],
      );
      return new Map(rows.map((r) => [Number(r.chunk), r.nodes]));
    },
  };
}

/** The score and its day's anchor, if any: the first of a proof's queries. */
type ProofScoreRow = LeafRow & {
  trigger: "daily" | "change";
  day: string | null;
  root: Hex | null;
  leaf_count: number | null;
  leaf_version: number | null;
  status: string | null;
  tx_hash: Hex | null;
  block_number: number | null;
  chain_id: number | null;
  contract: Address | null;
  anchored_at: number | null;
};

/**
 * The heap index of `$2` in the day's tree of `$3` leaves, if it is a leaf of it, and the chunk size (chunk 0's
 * length): the fence (the lowest chunk whose smallest leaf hash is at most the leaf's; leaf hashes fall as
 * chunks rise) gives the one chunk to search, searched in the database (migration 011).
 */
const LEAF_INDEX_SQL = `WITH fenced AS (
    SELECT chunk, nodes, (SELECT octet_length(nodes) / 32 FROM score_tree_chunks WHERE day = $1 AND chunk = 0) AS chunk_nodes
    FROM score_tree_chunks WHERE day = $1 AND min_leaf IS NOT NULL AND min_leaf <= $2 ORDER BY min_leaf DESC, chunk LIMIT 1
  )
  SELECT chunk_nodes, score_tree_leaf_index(nodes, chunk, chunk_nodes, $3, $2) AS index FROM fenced`;

/** The proof's nodes, in order: 32 bytes at each (chunk, offset), read out of line without the rest of the chunk. */
const SIBLINGS_SQL = `SELECT substring(c.nodes FROM u.off * 32 + 1 FOR 32) AS node
  FROM unnest($2::int[], $3::int[]) WITH ORDINALITY AS u(chunk, off, ord) JOIN score_tree_chunks c ON c.day = $1 AND c.chunk = u.chunk ORDER BY u.ord`;

/**
 * The anchor repository over `db` (PostgreSQL or PGlite).
 * @example const anchors = createAnchorRepository(db); await anchors.unfinalDays();
 */
export function createAnchorRepository(db: Db, options: AnchorRepositoryOptions = {}): AnchorRepository {
  const chunkNodes = options.chunkNodes ?? TREE_CHUNK_NODES;
  const pageRows = options.pageRows ?? TREE_PAGE_ROWS;
  return {
    async storeDayTree(day, builtAt) {
      return db.transaction(async (tx): Promise<DayTreeOutcome> => {
        // A second instance waits here until the first commits, then finds the day built.
        await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [TREE_LOCK_CLASS, day]);
        if ((await tx.query("SELECT 1 FROM score_anchors WHERE day = $1", [day])).rows.length > 0) return { type: "exists" };
        await tx.query(`CREATE TEMP TABLE ${SCRATCH} (leaf bytea NOT NULL) ON COMMIT DROP`);
        let leafVersion = CURRENT_LEAF_VERSION;
        let leafCount: number;
        try {
          leafCount = await hashDayLeaves(tx, day, leafVersion, pageRows, options.threads);
        } catch (error) {
          if (!(error instanceof ComponentsMissing)) throw error;
          // Scores of the day stored before migration 014: the day is of version 1, as it would have been.
          await tx.query(`TRUNCATE ${SCRATCH}`);
          leafVersion = 1;
          leafCount = await hashDayLeaves(tx, day, leafVersion, pageRows, options.threads);
        }
        if (leafCount === 0) return { type: "empty" };
        const built = await buildChunkedScoreTree(leafCount, sortedLeaves(tx, pageRows), chunkNodes, chunkStore(tx, day));
        await tx.query(
          "INSERT INTO score_anchors (day, root, leaf_count, leaf_version, status, built_at) VALUES ($1, $2, $3, $4, 'pending', $5)",
          [day, built.root, leafCount, leafVersion, builtAt],
        );
        return { type: "stored", ...built, leafVersion };
      });
    },

    async getDay(day) {
      const { rows } = await db.query<AnchorDbRow>("SELECT * FROM score_anchors WHERE day = $1", [day]);
      return rows[0] ? anchorRow(rows[0]) : null;
    },

    async unfinalDays() {
      const { rows } = await db.query<AnchorDbRow>("SELECT * FROM score_anchors WHERE final_at IS NULL ORDER BY day");
      return rows.map(anchorRow);
    },

    async setPendingTx(day, expected, next) {
      const { rowCount } = await db.query(
        `UPDATE score_anchors SET tx_hash = $3, raw_tx = $4, chain_id = $5, contract = $6
         WHERE day = $1 AND status = 'pending' AND tx_hash IS NOT DISTINCT FROM $2`,
        [day, expected, next?.txHash ?? null, next?.rawTx ?? null, next?.chainId ?? null, next?.contract ?? null],
      );
      return rowCount === 1;
    },

    async setMined(day, mined) {
      // The signed bytes stay while the anchor is not final: a reorganisation that drops it has them sent again as they are.
      await db.query(
        `UPDATE score_anchors
         SET status = 'mined', tx_hash = $2, block_number = $3, chain_id = $4, contract = $5, mined_at = $6, anchored_at = $7,
           final_at = $8, raw_tx = CASE WHEN $8::bigint IS NULL AND tx_hash = $2 THEN raw_tx END
         WHERE day = $1`,
        [day, mined.txHash, mined.blockNumber, mined.chainId, mined.contract, mined.minedAt, mined.anchoredAt, mined.finalAt],
      );
    },

    async setDropped(day, txHash) {
      const { rowCount } = await db.query(
        `UPDATE score_anchors SET status = 'pending', block_number = NULL, mined_at = NULL, anchored_at = NULL
         WHERE day = $1 AND status = 'mined' AND tx_hash = $2 AND final_at IS NULL`,
        [day, txHash],
      );
      return rowCount === 1;
    },

    async anchoringLag() {
      const { rows } = await db.query<{ days: number; oldest_day: string | null; oldest_built_at: string | null }>(
        `SELECT count(*)::int AS days, min(day) AS oldest_day,
           (SELECT built_at FROM score_anchors WHERE status <> 'mined' ORDER BY day LIMIT 1) AS oldest_built_at
         FROM score_anchors WHERE status <> 'mined'`,
      );
      const [r] = rows;
      return { days: Number(r.days), oldestDay: r.oldest_day, oldestBuiltAt: nullableNumber(r.oldest_built_at) };
    },

    // Three queries: the score and its day's anchor; the leaf's index (its chunk found by the fence, searched); the proof's nodes.
    async scoreProof(scoreId) {
      const { rows } = await db.query<ProofScoreRow>(
        `SELECT ${LEAF_COLUMNS}, s.trigger, s.day,
           a.root, a.leaf_count, a.leaf_version, a.status, a.tx_hash, a.block_number, a.chain_id, a.contract, a.anchored_at
         FROM scores s LEFT JOIN score_anchors a ON s.trigger = 'daily' AND a.day = s.day WHERE s.id = $1`,
        [scoreId],
      );
      const r = rows[0];
      if (!r) return null;
      if (r.trigger !== "daily" || r.day === null) return { trigger: "change", proof: null };
      const day = r.day;
      if (r.root === null || r.leaf_count === null || r.leaf_version === null) return { trigger: "daily", proof: null, day, tree: "none" };
      const leafVersion = leafVersionOf(r.leaf_version);
      let leafValues: AnyScoreLeafValues;
      try {
        leafValues = leafOf(r, day, leafVersion);
      } catch (error) {
        // A version-2 day holds only scores with components: one without is not one of its leaves.
        if (error instanceof ComponentsMissing) return { trigger: "daily", proof: null, day, tree: "without the score" };
        throw error;
      }
      const leaf = scoreLeafHash(leafValues);
      const leafBytes = Buffer.from(leaf.slice(2), "hex");
      const fence = await db.query<{ chunk_nodes: number; index: number | null }>(LEAF_INDEX_SQL, [day, leafBytes, r.leaf_count]);
      const found = fence.rows[0];
      // A daily score stored after its day's tree (not one of its leaves) has no proof.
      if (!found || found.index === null) return { trigger: "daily", proof: null, day, tree: "without the score" };
      const layout = scoreTreeLayout(Number(r.leaf_count), Number(found.chunk_nodes));
      const index = Number(found.index);
      const path = proofIndices(index).map((i) => layout.locate(i));
      const siblings =
        path.length === 0
          ? []
          : (await db.query<{ node: Uint8Array }>(SIBLINGS_SQL, [day, path.map((p) => p.chunk), path.map((p) => p.offset)])).rows;
      if (siblings.length !== path.length || siblings.some((s) => s.node.length !== 32)) {
        throw new BaseError("score_tree_incomplete", `the stored tree of ${day} lacks nodes of score ${scoreId}'s proof`);
      }
      const { tx_hash: txHash, block_number: blockNumber, chain_id: chainId, contract } = r;
      const mined = r.status === "mined" && txHash !== null && blockNumber !== null && chainId !== null && contract !== null;
      return {
        trigger: "daily",
        proof: {
          scoreId,
          agentId: r.agent_id,
          day,
          leafVersion,
          leaf,
          leafValues,
          proof: siblings.map((s) => bytesToHex(s.node)),
          root: r.root,
          anchor: mined
            ? { txHash, blockNumber: Number(blockNumber), chainId: Number(chainId), contract, anchoredAt: nullableNumber(r.anchored_at) }
            : null,
        },
      };
    },

    async latestAnchoredScore(agentId) {
      // The agent's daily scores newest day first (scores_daily_idx), the first whose day is mined.
      const { rows } = await db.query<{
        claimed_at: string | null;
        released_at: string | null;
        score_id: number | null;
        latest_day: string | null;
      }>(
        `SELECT (SELECT claimed_at FROM agents WHERE id = $1) AS claimed_at, (SELECT released_at FROM agents WHERE id = $1) AS released_at,
           (SELECT s.id FROM scores s JOIN score_anchors a ON a.day = s.day AND a.status = 'mined'
            WHERE s.agent_id = $1 AND s.trigger = 'daily' ORDER BY s.day DESC LIMIT 1) AS score_id,
           (SELECT s.day FROM scores s WHERE s.agent_id = $1 AND s.trigger = 'daily' ORDER BY s.day DESC LIMIT 1) AS latest_day`,
        [agentId],
      );
      const [r] = rows;
      return {
        agentExists: r.claimed_at !== null,
        scoreId: nullableNumber(r.score_id),
        latestDailyDay: r.latest_day,
        claimedAt: nullableNumber(r.claimed_at),
        releasedAt: nullableNumber(r.released_at),
      };
    },
  };
}
