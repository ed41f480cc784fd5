/**
 * The anchor repository: the tables of migration 003 (`score_anchors`, one row a day; `score_proofs`, one
 * row a daily score), on PostgreSQL or PGlite. SQL only: the tree is built by `chain/score-tree`, and the
 * anchoring service decides what is written when.
 */
import { bytesToHex, type Address, type Hex } from "viem";
import { proofElements, type ScoreLeafValues, type ScoreTree } from "../chain/score-tree";
import type { Db } from "./db";

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

/** A score as the proof lookup finds it: absent (`null`), without a proof yet (or never: a change score), or with one. */
export type ScoreProofLookup =
  | null
  | { trigger: "daily" | "change"; proof: null }
  | { trigger: "daily"; proof: ScoreProof };

/** The signed anchoring transaction of a day, stored before it is broadcast. */
export type PendingAnchorTx = { txHash: Hex; rawTx: Hex; chainId: number; contract: Address };

/** Where and when a day's root was seen anchored on chain. */
export type MinedAnchor = { txHash: Hex; blockNumber: number; chainId: number; contract: Address; minedAt: number };

/** The anchoring tables. */
export type AnchorRepository = {
  /** The daily scores of `day` as leaf values, in id order, with their ids. */
  dayLeaves(day: string): Promise<{ ids: number[]; values: ScoreLeafValues[] }>;
  /**
   * Stores a day's root (pending) and every score's leaf and proof in one transaction; false, storing
   * nothing, when the day already has a tree (another instance built it first).
   */
  insertTree(day: string, ids: readonly number[], tree: ScoreTree, builtAt: number): Promise<boolean>;
  /** The day's root and anchoring state; `null` before its tree is stored. */
  getDay(day: string): Promise<DayAnchorRow | null>;
  /** Days whose root is not yet seen mined, oldest first. */
  unminedDays(): Promise<DayAnchorRow[]>;
  /**
   * Records the signed transaction about to be broadcast (or clears it: `null`), if the day's transaction
   * is still `expected` (compare-and-set: two instances never both send). Returns whether it was recorded.
   */
  setPendingTx(day: string, expected: Hex | null, next: PendingAnchorTx | null): Promise<boolean>;
  /** Marks the day mined by the given transaction; its signed transaction is no longer kept. */
  setMined(day: string, mined: MinedAnchor): Promise<void>;
  /** A score with its proof and anchor; `null` when the score does not exist. */
  scoreProof(scoreId: number): Promise<ScoreProofLookup>;
};

/** Rows per INSERT of proofs: one statement carries ids, offsets and two binary blobs. */
const PROOF_BATCH = 20_000;
/** Scores read per query while gathering a day's leaves. */
const LEAF_PAGE = 50_000;

/** A `score_anchors` row; the hex columns hold only what this repository wrote. */
type AnchorDbRow = {
  day: string; root: Hex; leaf_count: number; status: "pending" | "mined"; built_at: number; chain_id: number | null;
  contract: Address | null; tx_hash: Hex | null; raw_tx: Hex | null; block_number: number | null; mined_at: number | null;
};

// Drivers may hand bigint columns (built_at, block_number, mined_at) back as strings: converted here, once.
const anchorRow = (r: AnchorDbRow): DayAnchorRow => ({
  day: r.day, root: r.root, leafCount: Number(r.leaf_count), status: r.status, builtAt: Number(r.built_at), chainId: r.chain_id,
  contract: r.contract, txHash: r.tx_hash, rawTx: r.raw_tx,
  blockNumber: r.block_number === null ? null : Number(r.block_number), minedAt: r.mined_at === null ? null : Number(r.mined_at),
});

/** One statement inserts a batch of proofs: ids, offsets and lengths as arrays, leaves and proofs as two binary blobs. */
const INSERT_PROOFS = `INSERT INTO score_proofs (score_id, day, leaf, proof)
  SELECT u.id, $1, substring($3::bytea FROM ((u.ord - 1) * 32 + 1)::int FOR 32), substring($4::bytea FROM u.off + 1 FOR u.len)
  FROM unnest($2::bigint[], $5::int[], $6::int[]) WITH ORDINALITY AS u(id, off, len, ord)`;

/** The parameters of `INSERT_PROOFS` for leaves `from` to `to`. */
function proofBatchParams(day: string, ids: readonly number[], tree: ScoreTree, from: number, to: number): unknown[] {
  const { leaves, proofs, offsets, lengths } = tree.proofBatch(from, to);
  return [day, ids.slice(from, to), leaves, proofs, offsets, lengths];
}

/**
 * The anchor repository over `db` (PostgreSQL or PGlite).
 * @example const anchors = createAnchorRepository(db); await anchors.unminedDays();
 */
export function createAnchorRepository(db: Db): AnchorRepository {
  return {
    async dayLeaves(day) {
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

    async insertTree(day, ids, tree, builtAt) {
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

    async getDay(day) {
      const { rows } = await db.query<AnchorDbRow>("SELECT * FROM score_anchors WHERE day = $1", [day]);
      return rows[0] ? anchorRow(rows[0]) : null;
    },

    async unminedDays() {
      const { rows } = await db.query<AnchorDbRow>("SELECT * FROM score_anchors WHERE status <> 'mined' ORDER BY day");
      return rows.map(anchorRow);
    },

    async setPendingTx(day, expected, next) {
      const { rowCount } = await db.query(
        "UPDATE score_anchors SET tx_hash = $3, raw_tx = $4, chain_id = $5, contract = $6 WHERE day = $1 AND status = 'pending' AND tx_hash IS NOT DISTINCT FROM $2",
        [day, expected, next?.txHash ?? null, next?.rawTx ?? null, next?.chainId ?? null, next?.contract ?? null],
      );
      return rowCount === 1;
    },

    async setMined(day, mined) {
      await db.query(
        "UPDATE score_anchors SET status = 'mined', tx_hash = $2, block_number = $3, chain_id = $4, contract = $5, mined_at = $6, raw_tx = NULL WHERE day = $1",
        [day, mined.txHash, mined.blockNumber, mined.chainId, mined.contract, mined.minedAt],
      );
    },

    async scoreProof(scoreId) {
      const { rows } = await db.query<{
        agent_id: string; method: string; sha256: string; trigger: "daily" | "change"; day: string | null; leaf: Uint8Array | null; proof: Uint8Array | null;
        root: Hex | null; status: string | null; tx_hash: Hex | null; block_number: number | null; chain_id: number | null; contract: Address | null;
      }>(
        `SELECT s.agent_id, s.method, s.sha256, s.trigger, s.day, p.leaf, p.proof, a.root, a.status, a.tx_hash, a.block_number, a.chain_id, a.contract
         FROM scores s LEFT JOIN score_proofs p ON p.score_id = s.id LEFT JOIN score_anchors a ON a.day = p.day WHERE s.id = $1`,
        [scoreId],
      );
      const r = rows[0];
      if (!r) return null;
      if (r.leaf === null || r.proof === null || r.root === null || r.day === null) return { trigger: r.trigger, proof: null };
      const { tx_hash: txHash, block_number: blockNumber, chain_id: chainId, contract } = r;
      const mined = r.status === "mined" && txHash !== null && blockNumber !== null && chainId !== null && contract !== null;
      return {
        trigger: "daily",
        proof: {
          scoreId, leaf: bytesToHex(r.leaf), leafValues: [r.agent_id, r.day, r.method, `0x${r.sha256}`], proof: proofElements(r.proof), root: r.root, day: r.day,
          anchor: mined ? { txHash, blockNumber: Number(blockNumber), chainId: Number(chainId), contract } : null,
        },
      };
    },
  };
}
