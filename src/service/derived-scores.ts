/**
 * The SDK Derived Score (scoreType `sdk-derived`, METHOD part A) of executors: their A1 records read through the
 * chain repository, scored with the method's rules (`deriveScores`, F1), and the results written back through it.
 * The indexer recomputes the executors its ranges marked dirty; a self-reported summary recomputes its executor in
 * the transaction that stores it.
 */
import { countRecords, deriveScores, scoreCounts, type DerivedResult, type ProofRecord, type RecordSource } from "../method";
import type { ChainRecordReads, ChainStore, ChainStoreTx } from "../store/chain-store";

/** An A1 record as an executor's listing shows it: in A2 order, `duplicate` for a later record of an already counted txHash (A2.3). */
export type ListedRecord = ProofRecord & { duplicate: boolean };

/** An executor's SDK Derived Score as last computed; for an executor never scored, the score of no records (A2.4) from source `none`. */
export type CurrentDerived = { source: RecordSource | "none"; result: DerivedResult; computedAt: number | null };

/** A page of a listing: `limit` items from `offset`. */
export type Page = { limit: number; offset: number };

export type DerivedScores = {
  /**
   * Recomputes and stores the derived score of `executors` inside `tx`, from their records as stored in it. An
   * executor left without records has no stored score (as in a fresh index).
   */
  recompute(tx: ChainStoreTx, executors: readonly string[], at: number): Promise<void>;
  /**
   * Recomputes up to `limit` (default 1,000) executors marked dirty, in one transaction.
   * @returns how many it took: 0 once none is left
   */
  recomputeDirty(at: number, limit?: number): Promise<number>;
  /** The stored derived score of `executor`, or the score of no records (A2.4) when none is stored. */
  current(executor: string): Promise<CurrentDerived>;
  /** The records `executor`'s score is computed from, in A2 order (A2.1 selected source), `page` of them, and how many there are. */
  listRecords(executor: string, page: Page): Promise<{ records: ListedRecord[]; count: number }>;
};

/** Recomputes read every record of the executors they take: this many a transaction keeps each one short. */
const DIRTY_BATCH = 1000;

/**
 * The A1 records of `executors` as the method takes them: on-chain ones, verified when an account with the verifier
 * role anchored their traceRoot (A6); self-reported ones, never verified (A6), only for executors without an
 * on-chain record, since those would be ignored (A2.1).
 */
async function loadRecords(reads: ChainRecordReads, executors: readonly string[]): Promise<ProofRecord[]> {
  const records: ProofRecord[] = (await reads.onchainRecords(executors)).map((r) => ({
    txHash: r.txHash,
    executor: r.executor,
    success: r.success,
    riskLevel: r.riskLevel,
    policyViolations: r.policyViolations,
    verified: r.verifierAnchored,
    traceRoot: r.traceRoot,
    source: "onchain",
    blockNumber: r.blockNumber,
    logIndex: r.logIndex,
  }));
  const withOnchain = new Set(records.map((r) => r.executor));
  const selfReportedOnly = executors.filter((e) => !withOnchain.has(e));
  if (selfReportedOnly.length > 0) {
    for (const r of await reads.selfReportedRecords(selfReportedOnly)) {
      records.push({
        txHash: r.txHash,
        executor: r.executor,
        success: r.success,
        riskLevel: r.riskLevel,
        policyViolations: r.policyViolations,
        verified: false,
        traceRoot: r.traceRoot,
        source: "self-reported",
      });
    }
  }
  return records;
}

/**
 * The derived scores of the executors of `store`.
 * @example await createDerivedScores({ store: createChainStore(db) }).current("did:erc8004:31337:0x…:7")
 */
export function createDerivedScores(deps: { store: ChainStore }): DerivedScores {
  const { store } = deps;

  async function recompute(tx: ChainStoreTx, executors: readonly string[], at: number): Promise<void> {
    if (executors.length === 0) return;
    const sorted = [...new Set(executors)].sort();
    // Serialises recomputes of the same executor (the indexer and a self-reported summary).
    await tx.lockExecutors(sorted);
    const records = await loadRecords(tx, sorted);
    const results = deriveScores(records);
    const sourceOf = new Map<string, RecordSource>();
    for (const r of records) sourceOf.set(r.executor, r.source);
    const scores: Array<{ executor: string; result: DerivedResult; source: RecordSource }> = [];
    for (const executor of sorted) {
      const source = sourceOf.get(executor);
      if (source !== undefined) scores.push({ executor, result: results[executor], source });
    }
    await tx.replaceDerived(sorted, scores, at);
  }

  async function recomputeDirty(at: number, limit = DIRTY_BATCH): Promise<number> {
    return store.transaction(async (tx) => {
      const executors = await tx.takeDirty(limit);
      await recompute(tx, executors, at);
      return executors.length;
    });
  }

  async function current(executor: string): Promise<CurrentDerived> {
    const stored = await store.getDerived(executor);
    if (stored) return { source: stored.source, result: stored.result, computedAt: stored.computedAt };
    return { source: "none", result: scoreCounts(countRecords([], 0)), computedAt: null };
  }

  async function listRecords(executor: string, page: Page): Promise<{ records: ListedRecord[]; count: number }> {
    const all = await loadRecords(store, [executor]);
    // A2.3: txHash compared case-insensitively, the first in order counted.
    const seen = new Set<string>();
    const listed = all.map((r) => {
      const key = r.txHash.toLowerCase();
      const duplicate = seen.has(key);
      seen.add(key);
      return { ...r, duplicate };
    });
    return { records: listed.slice(page.offset, page.offset + page.limit), count: listed.length };
  }

  return { recompute, recomputeDirty, current, listRecords };
}
