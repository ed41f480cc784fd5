/**
 * The chain scores as the API and the agent page read and write them: an agent's or an executor DID's SDK Derived
 * Score (`sdk-derived`, METHOD part A) with its records, and its Platform Network Score (`platform-network`, part N)
 * mirrored from the Registry, each labelled with its scoreType and never mixed with the other or the Vrai score;
 * legacy self-reported summaries (A1 records, used only while the executor has no on-chain record, A2.1); the
 * indexer's health. Times are Unix seconds: the caller formats them.
 */
import { validateRecord, type DerivedResult, type RecordSource } from "../method";
import type { ChainStore, MismatchRow } from "../store/chain-store";
import type { Clock } from "./clock";
import type { CurrentDerived, DerivedScores, ListedRecord, Page } from "./derived-scores";
import { NotFoundError } from "./errors";
import { erc8004Executor } from "./proofs/kinds";
import type { AgentRow, StoreTx } from "./ports";

/** An executor's SDK Derived Score with `page` of the records it is computed from; `agentId` when asked for by agent. */
export type DerivedScoreView = {
  scoreType: "sdk-derived";
  executor: string;
  agentId?: string;
  source: RecordSource | "none";
  result: DerivedResult;
  computedAt: number | null;
  recordCount: number;
  records: ListedRecord[];
};

/** An executor's mirrored Platform Network Score (`tenths` as the Registry keeps it) and its kept disagreement with the chain. */
export type NetworkScoreView = {
  scoreType: "platform-network";
  executor: string;
  agentId?: string;
  tenths: number;
  score: number;
  settlements: number;
  /** Null before the first settlement. */
  lastSettledAt: number | null;
  mismatch: MismatchRow | null;
};

/** What posting self-reported summaries stored, and the derived score recomputed with them. */
export type SummariesPosted = {
  scoreType: "sdk-derived";
  executor: string;
  agentId: string;
  accepted: number;
  source: RecordSource | "none";
  result: DerivedResult;
  computedAt: number | null;
};

/** The indexer's checkpoints, and the network score mirrors that disagree with the chain (`mismatch` while any does). */
export type IndexerHealth = {
  status: "ok" | "mismatch";
  checkpoints: Array<{ chainId: number; registry: string; blockNumber: number; updatedAt: number }>;
  mismatches: MismatchRow[];
};

/** What the agent page's `sdk-derived` and `platform-network` panels show of an agent linked to an ERC-8004 identity. */
export type AgentScorePanels = { executor: string; derived: CurrentDerived; network: { tenths: number; settlements: number } };

export type ChainScores = {
  /** @throws NotFoundError `agent_not_found`, or `agent_not_linked` when the agent has no active erc8004 proof */
  agentDerivedScore(agentId: string, page: Page): Promise<DerivedScoreView>;
  executorDerivedScore(executor: string, page: Page): Promise<DerivedScoreView>;
  /** @throws NotFoundError `agent_not_found`, or `agent_not_linked` when the agent has no active erc8004 proof */
  agentNetworkScore(agentId: string): Promise<NetworkScoreView>;
  executorNetworkScore(executor: string): Promise<NetworkScoreView>;
  /**
   * Stores self-reported summaries for the ERC-8004 executor of `agent` (authenticated by the caller) and recomputes
   * its derived score, in one transaction.
   * @param summaries A1 records without `executor`, `source`, `verified`, `blockNumber` and `logIndex` (set here)
   * @throws NotFoundError `agent_not_linked`; InvalidInputError `invalid_record` naming the first bad summary and field (A1)
   */
  postSummaries(agent: AgentRow, summaries: ReadonlyArray<Record<string, unknown>>): Promise<SummariesPosted>;
  indexerHealth(): Promise<IndexerHealth>;
  /** The panels' data of a Vrai agent, or null when it is not linked to an ERC-8004 identity. */
  agentPanels(agentId: string): Promise<AgentScorePanels | null>;
};

/**
 * The chain score use-cases over the chain repository.
 * @param deps.agents where Vrai agents are looked up (the service store's reads)
 * @example const view = await createChainScores({ store, derivedScores, agents: service.store.read, clock }).agentNetworkScore("ag_1")
 */
export function createChainScores(deps: {
  store: ChainStore;
  derivedScores: DerivedScores;
  agents: Pick<StoreTx, "getAgent">;
  clock: Clock;
}): ChainScores {
  const { store, derivedScores, agents, clock } = deps;

  /** The ERC-8004 executor a Vrai agent is linked to by its active erc8004 proof, or null. */
  async function executorLinkedTo(agentId: string): Promise<string | null> {
    const subject = await store.activeProofSubject(agentId, "erc8004");
    return subject === null ? null : erc8004Executor(subject);
  }

  async function linkedExecutor(agentId: string): Promise<string> {
    const executor = await executorLinkedTo(agentId);
    if (!executor)
      throw new NotFoundError(
        "agent_not_linked",
        `agent ${agentId} has no ERC-8004 identity: prove one (kind erc8004) to link its on-chain records`,
      );
    return executor;
  }

  async function executorOfAgent(agentId: string): Promise<string> {
    if (!(await agents.getAgent(agentId))) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    return linkedExecutor(agentId);
  }

  async function derivedView(executor: string, page: Page, agentId?: string): Promise<DerivedScoreView> {
    const current = await derivedScores.current(executor);
    const { records, count } = await derivedScores.listRecords(executor, page);
    return {
      scoreType: "sdk-derived",
      executor,
      ...(agentId ? { agentId } : {}),
      source: current.source,
      result: current.result,
      computedAt: current.computedAt,
      recordCount: count,
      records,
    };
  }

  async function networkView(executor: string, agentId?: string): Promise<NetworkScoreView> {
    const row = await store.getNetworkScore(executor);
    const mismatch = await store.getMismatch(executor);
    const tenths = row?.score ?? 0;
    return {
      scoreType: "platform-network",
      executor,
      ...(agentId ? { agentId } : {}),
      tenths,
      score: tenths / 10,
      settlements: row?.settlements ?? 0,
      lastSettledAt: row && row.lastSettledAt > 0 ? row.lastSettledAt : null,
      mismatch,
    };
  }

  async function postSummaries(agent: AgentRow, summaries: ReadonlyArray<Record<string, unknown>>): Promise<SummariesPosted> {
    const executor = await linkedExecutor(agent.id);
    // A1: a bad summary refuses the whole request, naming it; a summary is self-reported, so never verified (A6).
    const records = summaries.map((r, i) =>
      validateRecord({ ...r, executor, source: "self-reported", verified: false, blockNumber: undefined, logIndex: undefined }, i),
    );
    const at = clock.now();
    await store.transaction(async (tx) => {
      await tx.insertSelfReported(agent.id, records, at);
      await derivedScores.recompute(tx, [executor], at);
    });
    const current = await derivedScores.current(executor);
    return {
      scoreType: "sdk-derived",
      executor,
      agentId: agent.id,
      accepted: records.length,
      source: current.source,
      result: current.result,
      computedAt: current.computedAt,
    };
  }

  async function indexerHealth(): Promise<IndexerHealth> {
    const mismatches = await store.listMismatches();
    const checkpoints = (await store.listCheckpoints()).map((c) => ({
      chainId: c.chainId,
      registry: c.registry,
      blockNumber: c.blockNumber,
      updatedAt: c.updatedAt,
    }));
    return { status: mismatches.length > 0 ? "mismatch" : "ok", checkpoints, mismatches };
  }

  async function agentPanels(agentId: string): Promise<AgentScorePanels | null> {
    const executor = await executorLinkedTo(agentId);
    if (!executor) return null;
    const derived = await derivedScores.current(executor);
    const network = await store.getNetworkScore(executor);
    return { executor, derived, network: { tenths: network?.score ?? 0, settlements: network?.settlements ?? 0 } };
  }

  return {
    agentDerivedScore: async (agentId, page) => derivedView(await executorOfAgent(agentId), page, agentId),
    executorDerivedScore: (executor, page) => derivedView(executor, page),
    agentNetworkScore: async (agentId) => networkView(await executorOfAgent(agentId), agentId),
    executorNetworkScore: (executor) => networkView(executor),
    postSummaries,
    indexerHealth,
    agentPanels,
  };
}
