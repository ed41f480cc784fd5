/**
 * The Platform Network Score mirror (scoreType `platform-network`, METHOD part N): each agent's score replayed from
 * its stored settlements with the method's verdict arithmetic, as the `Registry` keeps it on chain. The mirror is
 * stored state of the chain, so it is replayed inside the transaction of the range or rollback that changed the
 * settlements and commits with them (the invariant of migration 002); the indexer checks it against the Registry.
 */
import { applyVerdict } from "../method";
import type { ChainStoreTx, NetworkScoreRow } from "../store/chain-store";

export type NetworkScores = {
  /**
   * Replays inside `tx` the network score of each of `executors` from its settlements on chain `chainId` and stores
   * it; an executor left without settlements has no stored score (as in a fresh index).
   * @param executors the executors a range or rollback named (`ChainStoreTx.writeRange`, `rollbackTo`); none is a no-op
   */
  mirror(tx: ChainStoreTx, chainId: number, executors: readonly string[]): Promise<void>;
};

/**
 * The Part N mirror of the network scores.
 * @example await store.transaction(async (tx) => createNetworkScores().mirror(tx, chainId, await tx.writeRange(range, at)))
 */
export function createNetworkScores(): NetworkScores {
  async function mirror(tx: ChainStoreTx, chainId: number, executors: readonly string[]): Promise<void> {
    if (executors.length === 0) return;
    // Part N: from 0, each settlement in chain order, executor then requester, clamped after each adjustment. An
    // executor's score depends on its own settlements only, so those naming it are all the replay needs.
    const scores = new Map<string, NetworkScoreRow>();
    for (const s of await tx.settlementsOf(chainId, executors)) {
      for (const [agent, score] of applyVerdict((agent) => scores.get(agent)?.score ?? 0, s)) {
        const before = scores.get(agent);
        scores.set(agent, { executor: agent, score, settlements: (before?.settlements ?? 0) + 1, lastSettledAt: s.settledAt });
      }
    }
    const wanted = new Set(executors);
    // A counterparty outside `executors` was replayed from some of its settlements only: its stored score stands.
    await tx.replaceNetworkScores(
      chainId,
      executors,
      [...scores.values()].filter((s) => wanted.has(s.executor)),
    );
  }

  return { mirror };
}
