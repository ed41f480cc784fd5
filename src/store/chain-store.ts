/**
 * The repository of the chain tables (migration 002): every SQL statement over them, parameterised, bulk writes as
 * `unnest` of arrays (one statement per table per batch). Works on PostgreSQL and PGlite. It stores facts and
 * reads them back; the A-part rules that turn records into SDK Derived Scores run in src/service/derived-scores.ts,
 * the Part N replay of settlements into the Network Score mirror in src/service/network-scores.ts.
 */
import type { Address, Hex } from "viem";
import { BaseError } from "../errors";
import { executorId, type DerivedResult, type ProofKind, type RecordSource, type RiskLevel, type Verdict } from "../method";
import type { Db, Queryable } from "./db";

export type Checkpoint = { chainId: number; registry: string; blockNumber: number; blockHash: string };

/** Where a log sits in the chain. */
export type LogPosition = { blockNumber: number; logIndex: number; txHash: Hex };

/**
 * A decoded log of a followed contract (src/indexer/events.ts decodes them), as the repository stores it: declared
 * here, below the indexer, because store/ imports no indexer/.
 */
export type ChainEvent = LogPosition &
  (
    | {
        type: "proof";
        agentId: bigint;
        submitter: Address;
        traceRoot: Hex;
        success: boolean;
        riskLevel: RiskLevel;
        policyViolations: number;
      }
    | { type: "settlement"; orderId: Hex; executorId: bigint; requesterId: bigint; verdict: Verdict }
    | { type: "scoreAdjusted"; agentId: bigint; orderId: Hex; party: "executor" | "requester"; delta: number; score: number }
    | { type: "anchor"; digest: Hex; kind: Hex; isRoot: boolean; leafCount: number | null; role: "anchorer" | "verifier" }
    | { type: "transfer"; registry: Address; from: Address; to: Address; agentId: bigint }
    /** ERC-8004: the token's agentURI changed (its registration file is read again); reported, not stored. */
    | { type: "uriUpdated"; registry: Address; agentId: bigint; uri: string }
  );

/** A block header as kept for reorg detection and settlement times. */
export type IndexedBlock = { number: number; hash: string; parentHash: string; timestamp: number };

/** One range of the chain, decoded and checked, ready to be written with its checkpoint. */
export type IndexedRange = {
  chainId: number;
  registry: string;
  /** Executor DID of an agent id of this chain's identity registry. */
  executorOf(agentId: bigint): string;
  events: readonly ChainEvent[];
  /** The range's first block: the checkpoint must be the block before it. */
  from: number;
  /** Headers of the blocks with events and of the range's last block. */
  headers: readonly IndexedBlock[];
  /** The range's last block: the new checkpoint. */
  to: IndexedBlock;
};

/** A stored `ProofSubmitted` record, and whether an account with the verifier role anchored its traceRoot on its chain. */
export type OnchainRecordRow = {
  executor: string;
  txHash: string;
  blockNumber: number;
  logIndex: number;
  success: boolean;
  riskLevel: RiskLevel;
  policyViolations: number;
  traceRoot: string;
  verifierAnchored: boolean;
};

/** A stored self-reported record, in the order it was received. */
export type SelfReportedRow = {
  executor: string;
  txHash: string;
  success: boolean;
  riskLevel: RiskLevel;
  policyViolations: number;
  traceRoot: string;
};

/** A stored SDK Derived Score (METHOD F1 result) and the record source it was computed from. */
export type StoredDerived = { result: DerivedResult; source: RecordSource; computedAt: number };

/** A stored `OrderSettled`: its two parties as executor DIDs, its verdict, and its block's time. */
export type SettlementRow = { executor: string; requester: string; verdict: Verdict; settledAt: number };

/** An agent's mirrored Platform Network Score (METHOD part N), in tenths, and the settlements it was replayed from. */
export type NetworkScoreRow = { executor: string; score: number; settlements: number; lastSettledAt: number };
export type MismatchRow = { executor: string; blockNumber: number; mirrored: number; onchain: number; detectedAt: number };
export type CheckpointRow = Checkpoint & { updatedAt: number };

/** Reads of the records the SDK Derived Scores are computed from, on the pool or inside a transaction. */
export type ChainRecordReads = {
  /** The on-chain records of `executors`, by executor then chain order. */
  onchainRecords(executors: readonly string[]): Promise<OnchainRecordRow[]>;
  /** The self-reported records of `executors`, by executor then arrival. */
  selfReportedRecords(executors: readonly string[]): Promise<SelfReportedRow[]>;
};

/**
 * The repository inside one transaction of `ChainStore.transaction`. Ranges and rollbacks are written here only: the
 * caller mirrors the network scores of the executors they return in the same transaction
 * (src/service/network-scores.ts), so a range commits whole or not at all.
 */
export type ChainStoreTx = ChainRecordReads & {
  /**
   * Writes one range: its rows, the block hashes seen, the executors whose derived score changed, and the checkpoint.
   * A restart resumes right after the last committed range with no gap and no duplicate.
   * @returns the executors the range's settlements name, either side, each once: their network score mirror is stale
   * @throws CheckpointMovedError when the range does not start right after the stored checkpoint
   */
  writeRange(range: IndexedRange, at: number): Promise<string[]>;
  /**
   * Deletes everything above block `ancestor` (a reorg's common ancestor) and sets the checkpoint there; the
   * executors whose records or anchors went are marked dirty.
   * @returns the executors the deleted settlements named, either side, each once: their network score mirror is stale
   */
  rollbackTo(chainId: number, registry: string, ancestor: { number: number; hash: string }, at: number): Promise<string[]>;
  /** The stored settlements of chain `chainId` that name any of `executors`, either side, in chain order. */
  settlementsOf(chainId: number, executors: readonly string[]): Promise<SettlementRow[]>;
  /** Replaces the network score mirror of `executors` by `scores` (on chain `chainId`); an executor missing from `scores` has none. */
  replaceNetworkScores(chainId: number, executors: readonly string[], scores: readonly NetworkScoreRow[]): Promise<void>;
  /**
   * Waits for the derived-score locks of `executors` until the transaction ends (PostgreSQL; PGlite has one
   * connection). Pass them sorted and without repeats: every transaction then takes them in one order, so none
   * waits on another in a cycle.
   */
  lockExecutors(sortedExecutors: readonly string[]): Promise<void>;
  /** Takes up to `limit` executors marked dirty (their derived score must be recomputed), clearing the marks. */
  takeDirty(limit: number): Promise<string[]>;
  /** Replaces the stored derived scores of `executors` by `scores`; an executor missing from `scores` has none. */
  replaceDerived(
    executors: readonly string[],
    scores: ReadonlyArray<{ executor: string; result: DerivedResult; source: RecordSource }>,
    at: number,
  ): Promise<void>;
  /** Stores self-reported records of `agentId`'s executor, keeping their order. */
  insertSelfReported(agentId: string, records: readonly SelfReportedRow[], at: number): Promise<void>;
};

export type ChainStore = ChainRecordReads & {
  getCheckpoint(chainId: number): Promise<Checkpoint | null>;
  /** The first checkpoint of a chain, before its deployment block: written once, before anything else for the chain. */
  initCheckpoint(cp: Checkpoint, at: number): Promise<void>;
  /** Stored block hashes, newest first, for finding the common ancestor after a reorg. */
  recentBlocks(chainId: number, limit: number): Promise<Array<{ number: number; hash: string }>>;
  getDerived(executor: string): Promise<StoredDerived | null>;
  getNetworkScore(executor: string): Promise<NetworkScoreRow | null>;
  /** Records the comparison of mirrored and on-chain scores: a disagreement is kept until the next agreement. */
  recordComparison(
    chainId: number,
    blockNumber: number,
    compared: ReadonlyArray<{ executor: string; mirrored: number; onchain: number }>,
    at: number,
  ): Promise<void>;
  /** The kept disagreement of `executor`'s mirrored network score, if any. */
  getMismatch(executor: string): Promise<MismatchRow | null>;
  listMismatches(): Promise<MismatchRow[]>;
  listCheckpoints(): Promise<CheckpointRow[]>;
  /** The subject of `agentId`'s latest active proof of `kind`, or null when it holds none. */
  activeProofSubject(agentId: string, kind: ProofKind): Promise<string | null>;
  /** The distinct first `length` characters of the subjects of active proofs of `kind` that start with `prefix`. */
  activeSubjectHeads(kind: ProofKind, prefix: string, length: number): Promise<string[]>;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: ChainStoreTx) => Promise<T>): Promise<T>;
};

/** The checkpoint is not where this range starts (another instance wrote, or a rollback happened): read it again. */
export class CheckpointMovedError extends BaseError {
  constructor(message: string) {
    super("checkpoint_moved", message, { status: 503, retryable: true });
  }
}

/** Blocks kept for reorg detection: a reorg deeper than this re-indexes from the deployment block. */
export const RETAINED_BLOCKS = 10_000;

const CHAIN_TABLES = [
  "chain_proof_records",
  "chain_anchors",
  "chain_settlements",
  "chain_score_adjustments",
  "chain_identity_transfers",
] as const;

type MismatchSqlRow = { executor: string; block_number: number; mirrored: number; onchain: number; detected_at: number };

function mismatchOf(r: MismatchSqlRow): MismatchRow {
  return { executor: r.executor, blockNumber: r.block_number, mirrored: r.mirrored, onchain: r.onchain, detectedAt: r.detected_at };
}

/**
 * The repository of the chain tables on `db`.
 * @example const checkpoint = await createChainStore(db).getCheckpoint(31337)
 */
export function createChainStore(db: Db): ChainStore {
  async function getCheckpoint(chainId: number): Promise<Checkpoint | null> {
    const { rows } = await db.query<{ registry: string; block_number: number; block_hash: string }>(
      "SELECT registry, block_number, block_hash FROM indexer_checkpoints WHERE chain_id = $1",
      [chainId],
    );
    return rows[0] ? { chainId, registry: rows[0].registry, blockNumber: rows[0].block_number, blockHash: rows[0].block_hash } : null;
  }

  async function setCheckpoint(tx: Queryable, cp: Checkpoint, at: number): Promise<void> {
    await tx.query(
      `INSERT INTO indexer_checkpoints (chain_id, registry, block_number, block_hash, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (chain_id) DO UPDATE
       SET registry = EXCLUDED.registry, block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash,
         updated_at = EXCLUDED.updated_at`,
      [cp.chainId, cp.registry, cp.blockNumber, cp.blockHash, at],
    );
  }

  async function initCheckpoint(cp: Checkpoint, at: number): Promise<void> {
    await setCheckpoint(db, cp, at);
  }

  async function markDirty(tx: Queryable, executors: Iterable<string>): Promise<void> {
    const list = [...new Set(executors)];
    if (list.length > 0) await tx.query("INSERT INTO derived_dirty (executor) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", [list]);
  }

  /** Executors with on-chain records whose traceRoot is one of `digests` (A6: their verified flag follows the anchor). */
  async function markDirtyByTraceRoots(tx: Queryable, chainId: number, digests: readonly string[]): Promise<void> {
    if (digests.length === 0) return;
    await tx.query(
      `INSERT INTO derived_dirty (executor) SELECT DISTINCT executor FROM chain_proof_records WHERE chain_id = $1 AND trace_root = ANY($2::text[])
       ON CONFLICT DO NOTHING`,
      [chainId, digests],
    );
  }

  async function writeRange(tx: Queryable, range: IndexedRange, at: number): Promise<string[]> {
    const { chainId } = range;
    const proofs: Array<ChainEvent & { type: "proof" }> = [];
    const anchors: Array<ChainEvent & { type: "anchor" }> = [];
    const settlements: Array<ChainEvent & { type: "settlement" }> = [];
    const adjustments: Array<ChainEvent & { type: "scoreAdjusted" }> = [];
    const transfers: Array<ChainEvent & { type: "transfer" }> = [];
    for (const e of range.events) {
      if (e.type === "proof") proofs.push(e);
      else if (e.type === "anchor") anchors.push(e);
      else if (e.type === "settlement") settlements.push(e);
      else if (e.type === "scoreAdjusted") adjustments.push(e);
      else if (e.type === "transfer") transfers.push(e);
    }
    const timestampOf = new Map(range.headers.map((h) => [h.number, h.timestamp]));
    const col = <T, V>(rows: readonly T[], f: (row: T) => V) => rows.map(f);
    // The range must start right after the checkpoint: a range read by an instance that lost the lock (or before
    // a rollback) is refused here, inside the transaction, instead of being written twice or over a gap.
    const { rows: current } = await tx.query<{ block_number: number }>(
      "SELECT block_number FROM indexer_checkpoints WHERE chain_id = $1 FOR UPDATE",
      [chainId],
    );
    if (current[0]?.block_number !== range.from - 1) {
      throw new CheckpointMovedError(
        `range ${range.from}-${range.to.number} does not follow checkpoint ${current[0]?.block_number ?? "(none)"} of chain ${chainId}`,
      );
    }
    if (proofs.length > 0) {
      const executors = col(proofs, (p) => range.executorOf(p.agentId));
      await tx.query(
        `INSERT INTO chain_proof_records
           (chain_id, block_number, log_index, tx_hash, executor, agent_id, submitter, trace_root, success, risk_level, policy_violations)
         SELECT $1, * FROM unnest(
           $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::boolean[], $10::text[], $11::bigint[])`,
        [
          chainId,
          col(proofs, (p) => p.blockNumber),
          col(proofs, (p) => p.logIndex),
          col(proofs, (p) => p.txHash.toLowerCase()),
          executors,
          col(proofs, (p) => p.agentId.toString()),
          col(proofs, (p) => p.submitter.toLowerCase()),
          col(proofs, (p) => p.traceRoot.toLowerCase()),
          col(proofs, (p) => p.success),
          col(proofs, (p) => p.riskLevel),
          col(proofs, (p) => p.policyViolations),
        ],
      );
      await markDirty(tx, executors);
    }
    if (anchors.length > 0) {
      await tx.query(
        `INSERT INTO chain_anchors (chain_id, block_number, log_index, tx_hash, digest, kind, is_root, leaf_count, role)
         SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::bigint[], $9::text[])`,
        [
          chainId,
          col(anchors, (a) => a.blockNumber),
          col(anchors, (a) => a.logIndex),
          col(anchors, (a) => a.txHash.toLowerCase()),
          col(anchors, (a) => a.digest.toLowerCase()),
          col(anchors, (a) => a.kind.toLowerCase()),
          col(anchors, (a) => a.isRoot),
          col(anchors, (a) => a.leafCount),
          col(anchors, (a) => a.role),
        ],
      );
      const verifierDigests = anchors.filter((a) => a.role === "verifier").map((a) => a.digest.toLowerCase());
      await markDirtyByTraceRoots(tx, chainId, verifierDigests);
    }
    if (settlements.length > 0) {
      await tx.query(
        `INSERT INTO chain_settlements (chain_id, block_number, log_index, tx_hash, order_id, executor, requester, verdict, settled_at)
         SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[])`,
        [
          chainId,
          col(settlements, (s) => s.blockNumber),
          col(settlements, (s) => s.logIndex),
          col(settlements, (s) => s.txHash.toLowerCase()),
          col(settlements, (s) => s.orderId.toLowerCase()),
          col(settlements, (s) => range.executorOf(s.executorId)),
          col(settlements, (s) => range.executorOf(s.requesterId)),
          col(settlements, (s) => s.verdict),
          col(settlements, (s) => timestampOf.get(s.blockNumber) ?? 0),
        ],
      );
    }
    if (adjustments.length > 0) {
      await tx.query(
        `INSERT INTO chain_score_adjustments (chain_id, block_number, log_index, executor, order_id, party, delta, score)
         SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[])`,
        [
          chainId,
          col(adjustments, (a) => a.blockNumber),
          col(adjustments, (a) => a.logIndex),
          col(adjustments, (a) => range.executorOf(a.agentId)),
          col(adjustments, (a) => a.orderId.toLowerCase()),
          col(adjustments, (a) => a.party),
          col(adjustments, (a) => a.delta),
          col(adjustments, (a) => a.score),
        ],
      );
    }
    if (transfers.length > 0) {
      await tx.query(
        `INSERT INTO chain_identity_transfers (chain_id, block_number, log_index, tx_hash, executor, from_address, to_address)
         SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[])`,
        [
          chainId,
          col(transfers, (t) => t.blockNumber),
          col(transfers, (t) => t.logIndex),
          col(transfers, (t) => t.txHash.toLowerCase()),
          // A transfer of another identity registry than the deployment's names that registry's executor.
          col(transfers, (t) => executorId(chainId, t.registry, t.agentId)),
          col(transfers, (t) => t.from.toLowerCase()),
          col(transfers, (t) => t.to.toLowerCase()),
        ],
      );
    }
    await tx.query(
      `INSERT INTO indexer_blocks (chain_id, block_number, block_hash, parent_hash, timestamp)
       SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[])
       ON CONFLICT (chain_id, block_number) DO UPDATE SET block_hash = EXCLUDED.block_hash, parent_hash = EXCLUDED.parent_hash, timestamp = EXCLUDED.timestamp`,
      [
        chainId,
        col(range.headers, (h) => h.number),
        col(range.headers, (h) => h.hash),
        col(range.headers, (h) => h.parentHash),
        col(range.headers, (h) => h.timestamp),
      ],
    );
    await tx.query("DELETE FROM indexer_blocks WHERE chain_id = $1 AND block_number < $2", [chainId, range.to.number - RETAINED_BLOCKS]);
    await setCheckpoint(tx, { chainId, registry: range.registry, blockNumber: range.to.number, blockHash: range.to.hash }, at);
    return [...new Set(settlements.flatMap((s) => [range.executorOf(s.executorId), range.executorOf(s.requesterId)]))];
  }

  async function settlementsOf(tx: Queryable, chainId: number, executors: readonly string[]): Promise<SettlementRow[]> {
    const { rows } = await tx.query<{ executor: string; requester: string; verdict: Verdict; settled_at: number }>(
      `SELECT executor, requester, verdict, settled_at FROM chain_settlements
       WHERE chain_id = $1 AND (executor = ANY($2::text[]) OR requester = ANY($2::text[])) ORDER BY block_number, log_index`,
      [chainId, executors],
    );
    return rows.map((r) => ({ executor: r.executor, requester: r.requester, verdict: r.verdict, settledAt: r.settled_at }));
  }

  async function replaceNetworkScores(
    tx: Queryable,
    chainId: number,
    executors: readonly string[],
    scores: readonly NetworkScoreRow[],
  ): Promise<void> {
    await tx.query("DELETE FROM network_scores WHERE executor = ANY($1::text[])", [executors]);
    if (scores.length > 0) {
      await tx.query(
        `INSERT INTO network_scores (executor, chain_id, score, settlements, last_settled_at)
         SELECT u.executor, $1, u.score, u.settlements, u.last_settled_at
         FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[]) AS u(executor, score, settlements, last_settled_at)`,
        [
          chainId,
          scores.map((s) => s.executor),
          scores.map((s) => s.score),
          scores.map((s) => s.settlements),
          scores.map((s) => s.lastSettledAt),
        ],
      );
    }
  }

  async function recentBlocks(chainId: number, limit: number): Promise<Array<{ number: number; hash: string }>> {
    const { rows } = await db.query<{ block_number: number; block_hash: string }>(
      "SELECT block_number, block_hash FROM indexer_blocks WHERE chain_id = $1 ORDER BY block_number DESC LIMIT $2",
      [chainId, limit],
    );
    return rows.map((r) => ({ number: r.block_number, hash: r.block_hash }));
  }

  async function rollbackTo(
    tx: Queryable,
    chainId: number,
    registry: string,
    ancestor: { number: number; hash: string },
    at: number,
  ): Promise<string[]> {
    await tx.query(
      `INSERT INTO derived_dirty (executor) SELECT DISTINCT executor FROM chain_proof_records WHERE chain_id = $1 AND block_number > $2
       ON CONFLICT DO NOTHING`,
      [chainId, ancestor.number],
    );
    const { rows: gone } = await tx.query<{ digest: string }>(
      "SELECT digest FROM chain_anchors WHERE chain_id = $1 AND block_number > $2 AND role = 'verifier'",
      [chainId, ancestor.number],
    );
    await markDirtyByTraceRoots(
      tx,
      chainId,
      gone.map((g) => g.digest),
    );
    const { rows: settled } = await tx.query<{ executor: string; requester: string }>(
      "SELECT executor, requester FROM chain_settlements WHERE chain_id = $1 AND block_number > $2",
      [chainId, ancestor.number],
    );
    for (const table of [...CHAIN_TABLES, "indexer_blocks"]) {
      await tx.query(`DELETE FROM ${table} WHERE chain_id = $1 AND block_number > $2`, [chainId, ancestor.number]);
    }
    await tx.query("DELETE FROM network_score_mismatches WHERE chain_id = $1 AND block_number > $2", [chainId, ancestor.number]);
    await setCheckpoint(tx, { chainId, registry, blockNumber: ancestor.number, blockHash: ancestor.hash }, at);
    return [...new Set(settled.flatMap((s) => [s.executor, s.requester]))];
  }

  async function onchainRecords(q: Queryable, executors: readonly string[]): Promise<OnchainRecordRow[]> {
    const { rows } = await q.query<{
      executor: string;
      tx_hash: string;
      block_number: number;
      log_index: number;
      success: boolean;
      risk_level: RiskLevel;
      policy_violations: number;
      trace_root: string;
      verifier_anchored: boolean;
    }>(
      `SELECT r.executor, r.tx_hash, r.block_number, r.log_index, r.success, r.risk_level, r.policy_violations, r.trace_root,
              EXISTS (SELECT 1 FROM chain_anchors a WHERE a.chain_id = r.chain_id AND a.digest = r.trace_root AND a.role = 'verifier') AS verifier_anchored
       FROM chain_proof_records r WHERE r.executor = ANY($1::text[]) ORDER BY r.executor, r.block_number, r.log_index`,
      [executors],
    );
    return rows.map((r) => ({
      executor: r.executor,
      txHash: r.tx_hash,
      blockNumber: Number(r.block_number),
      logIndex: r.log_index,
      success: r.success,
      riskLevel: r.risk_level,
      policyViolations: Number(r.policy_violations),
      traceRoot: r.trace_root,
      verifierAnchored: r.verifier_anchored,
    }));
  }

  async function selfReportedRecords(q: Queryable, executors: readonly string[]): Promise<SelfReportedRow[]> {
    const { rows } = await q.query<{
      executor: string;
      tx_hash: string;
      success: boolean;
      risk_level: RiskLevel;
      policy_violations: number;
      trace_root: string;
    }>(
      `SELECT executor, tx_hash, success, risk_level, policy_violations, trace_root FROM self_reported_records
       WHERE executor = ANY($1::text[]) ORDER BY executor, id`,
      [executors],
    );
    return rows.map((r) => ({
      executor: r.executor,
      txHash: r.tx_hash,
      success: r.success,
      riskLevel: r.risk_level,
      policyViolations: Number(r.policy_violations),
      traceRoot: r.trace_root,
    }));
  }

  /** The repository's statements that run inside a transaction, on `tx`. */
  function inTransaction(tx: Queryable): ChainStoreTx {
    return {
      onchainRecords: (executors) => onchainRecords(tx, executors),
      selfReportedRecords: (executors) => selfReportedRecords(tx, executors),
      writeRange: (range, at) => writeRange(tx, range, at),
      rollbackTo: (chainId, registry, ancestor, at) => rollbackTo(tx, chainId, registry, ancestor, at),
      settlementsOf: (chainId, executors) => settlementsOf(tx, chainId, executors),
      replaceNetworkScores: (chainId, executors, scores) => replaceNetworkScores(tx, chainId, executors, scores),
      async lockExecutors(sortedExecutors) {
        if (db.kind === "pg")
          await tx.query("SELECT pg_advisory_xact_lock(hashtext('vrai.derived'), hashtext(e)) FROM unnest($1::text[]) AS e", [
            sortedExecutors,
          ]);
      },
      async takeDirty(limit) {
        const { rows } = await tx.query<{ executor: string }>(
          "DELETE FROM derived_dirty WHERE executor IN (SELECT executor FROM derived_dirty ORDER BY executor LIMIT $1) RETURNING executor",
          [limit],
        );
        return rows.map((r) => r.executor);
      },
      async replaceDerived(executors, scores, at) {
        await tx.query("DELETE FROM derived_scores WHERE executor = ANY($1::text[])", [executors]);
        if (scores.length > 0) {
          await tx.query(
            `INSERT INTO derived_scores (executor, result, source, computed_at)
             SELECT u.executor, u.result::jsonb, u.source, $1 FROM unnest($2::text[], $3::text[], $4::text[]) AS u(executor, result, source)`,
            [at, scores.map((s) => s.executor), scores.map((s) => JSON.stringify(s.result)), scores.map((s) => s.source)],
          );
        }
      },
      async insertSelfReported(agentId, records, at) {
        await tx.query(
          `INSERT INTO self_reported_records (executor, agent_id, tx_hash, success, risk_level, policy_violations, trace_root, received_at)
           SELECT u.executor, $1, u.tx_hash, u.success, u.risk_level, u.policy_violations, u.trace_root, $2
           FROM unnest($3::text[], $4::text[], $5::boolean[], $6::text[], $7::bigint[], $8::text[])
             WITH ORDINALITY AS u(executor, tx_hash, success, risk_level, policy_violations, trace_root, n)
           ORDER BY u.n`,
          [
            agentId,
            at,
            records.map((r) => r.executor),
            records.map((r) => r.txHash),
            records.map((r) => r.success),
            records.map((r) => r.riskLevel),
            records.map((r) => r.policyViolations),
            records.map((r) => r.traceRoot),
          ],
        );
      },
    };
  }

  async function getDerived(executor: string): Promise<StoredDerived | null> {
    const { rows } = await db.query<{ result: DerivedResult; source: RecordSource; computed_at: number }>(
      "SELECT result, source, computed_at FROM derived_scores WHERE executor = $1",
      [executor],
    );
    return rows[0] ? { result: rows[0].result, source: rows[0].source, computedAt: rows[0].computed_at } : null;
  }

  async function getNetworkScore(executor: string): Promise<NetworkScoreRow | null> {
    const { rows } = await db.query<{ score: number; settlements: number; last_settled_at: number }>(
      "SELECT score, settlements, last_settled_at FROM network_scores WHERE executor = $1",
      [executor],
    );
    return rows[0] ? { executor, score: rows[0].score, settlements: rows[0].settlements, lastSettledAt: rows[0].last_settled_at } : null;
  }

  async function recordComparison(
    chainId: number,
    blockNumber: number,
    compared: ReadonlyArray<{ executor: string; mirrored: number; onchain: number }>,
    at: number,
  ) {
    await db.transaction(async (tx) => {
      for (const c of compared) {
        if (c.mirrored === c.onchain) await tx.query("DELETE FROM network_score_mismatches WHERE executor = $1", [c.executor]);
        else {
          await tx.query(
            `INSERT INTO network_score_mismatches (executor, chain_id, block_number, mirrored, onchain, detected_at) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (executor) DO UPDATE
             SET block_number = EXCLUDED.block_number, mirrored = EXCLUDED.mirrored, onchain = EXCLUDED.onchain,
               detected_at = EXCLUDED.detected_at`,
            [c.executor, chainId, blockNumber, c.mirrored, c.onchain, at],
          );
        }
      }
    });
  }

  async function getMismatch(executor: string): Promise<MismatchRow | null> {
    const { rows } = await db.query<MismatchSqlRow>(
      "SELECT executor, block_number, mirrored, onchain, detected_at FROM network_score_mismatches WHERE executor = $1",
      [executor],
    );
    return rows[0] ? mismatchOf(rows[0]) : null;
  }

  async function listMismatches(): Promise<MismatchRow[]> {
    const { rows } = await db.query<MismatchSqlRow>(
      "SELECT executor, block_number, mirrored, onchain, detected_at FROM network_score_mismatches ORDER BY executor",
    );
    return rows.map(mismatchOf);
  }

  async function listCheckpoints(): Promise<CheckpointRow[]> {
    const { rows } = await db.query<{ chain_id: number; registry: string; block_number: number; block_hash: string; updated_at: number }>(
      "SELECT chain_id, registry, block_number, block_hash, updated_at FROM indexer_checkpoints ORDER BY chain_id",
    );
    return rows.map((r) => ({
      chainId: r.chain_id,
      registry: r.registry,
      blockNumber: r.block_number,
      blockHash: r.block_hash,
      updatedAt: r.updated_at,
    }));
  }

  async function activeProofSubject(agentId: string, kind: ProofKind): Promise<string | null> {
    const { rows } = await db.query<{ subject: string }>(
      "SELECT subject FROM proofs WHERE agent_id = $1 AND kind = $2 AND removed_at IS NULL ORDER BY verified_at DESC LIMIT 1",
      [agentId, kind],
    );
    return rows[0]?.subject ?? null;
  }

  async function activeSubjectHeads(kind: ProofKind, prefix: string, length: number): Promise<string[]> {
    const { rows } = await db.query<{ head: string }>(
      "SELECT DISTINCT left(subject, $3) AS head FROM proofs WHERE kind = $1 AND removed_at IS NULL AND starts_with(subject, $2) ORDER BY head",
      [kind, prefix, length],
    );
    return rows.map((r) => r.head);
  }

  return {
    getCheckpoint,
    initCheckpoint,
    recentBlocks,
    getDerived,
    getNetworkScore,
    recordComparison,
    getMismatch,
    listMismatches,
    listCheckpoints,
    activeProofSubject,
    activeSubjectHeads,
    onchainRecords: (executors) => onchainRecords(db, executors),
    selfReportedRecords: (executors) => selfReportedRecords(db, executors),
    transaction: (fn) => db.transaction((tx) => fn(inTransaction(tx))),
  };
}
