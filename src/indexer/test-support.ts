/** Test support for the indexer: a canonical dump of what it stored, to compare two indexes of the same chain. */
import type { Queryable } from "../store/db";

// Bookkeeping columns that depend on when or in what ranges a run happened, not on the chain.
const TABLES: ReadonlyArray<[table: string, columns: string]> = [
  ["indexer_checkpoints", "chain_id, registry, block_number, block_hash"],
  ["chain_proof_records", "*"],
  ["chain_anchors", "*"],
  ["chain_settlements", "*"],
  ["chain_score_adjustments", "*"],
  ["chain_identity_transfers", "*"],
  ["network_scores", "*"],
  ["network_score_mismatches", "executor, chain_id, block_number, mirrored, onchain"],
  ["derived_scores", "executor, result, source"],
  ["derived_dirty", "*"],
];

/** Every indexed row, each table sorted, as JSON lines: equal dumps mean equal stored state. */
export async function dumpIndexedState(db: Queryable): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [table, columns] of TABLES) {
    const { rows } = await db.query(`SELECT ${columns} FROM ${table}`);
    out[table] = rows.map((r) => JSON.stringify(r)).sort();
  }
  return out;
}
