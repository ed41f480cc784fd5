/**
 * The chain indexer: follows one chain from the deployment block, reads the followed contracts' logs in block
 * ranges that adapt to the node, writes each range with its checkpoint and its Network Score mirror in one
 * transaction, detects reorgs by block hash and rolls back to the common ancestor (re-mirroring in the same
 * transaction), keeps the SDK Derived Scores current, and reports ERC-8004 identity transfers (and agentURI changes) at once: those of the
 * deployment's identity registry from its deployment block, and those of every other identity registry of the chain
 * that backs an active ERC-8004 proof from the first pass after the proof was stored (V6: a proof accepted on any
 * registry is re-checked at once when its token moves).
 *
 * Invariant: what is stored for a chain always equals a fresh index of the canonical chain up to the checkpoint (of
 * the deployment's contracts; another identity registry's transfers are stored from the pass that first follows it).
 * Every range is read as logs then headers of its blocks (one batch); a log whose block hash is not its block's
 * hash means the chain moved while reading, and the range is read again. The next range's header batch includes
 * the block before it, whose hash must be the stored checkpoint's: otherwise the chain reorganised, and the
 * indexer walks its stored block hashes back to the newest one the chain still has.
 */
import type { Logger } from "pino";
import type { Address } from "viem";
import type { FollowedDeployment } from "../chain/deployment";
import { BaseError } from "../errors";
import { executorId } from "../method";
import { realSleep, retry } from "../retry";
import type { Clock } from "../service/clock";
import type { DerivedScores } from "../service/derived-scores";
import type { NetworkScores } from "../service/network-scores";
import { erc8004RegistriesWithProofs } from "../service/proofs/kinds";
import type { ChainEvent, ChainStore, Checkpoint, IndexedRange } from "../store/chain-store";
import { ChainMovedError, IndexerConfigError, RpcRangeError } from "./errors";
import { decodeChainEvent, FOLLOWED_TOPICS, type FollowedContracts } from "./events";
import type { BlockHeader, ChainRpc } from "./rpc";

/** Block range sizes for `eth_getLogs`: start, smallest and largest. Halved on a range error, doubled after a full range. */
export type RangePolicy = { initial: number; max: number };
export const DEFAULT_RANGE: RangePolicy = { initial: 1_000, max: 10_000 };

export type IndexerDeps = {
  store: ChainStore;
  /** Recomputes the SDK Derived Scores of the executors the written ranges marked dirty (the service's `createDerivedScores`). */
  derivedScores: Pick<DerivedScores, "recomputeDirty">;
  /** Replays the Part N Network Score mirror inside the transaction of each range and rollback (the service's `createNetworkScores`). */
  networkScores: NetworkScores;
  rpc: ChainRpc;
  deployment: FollowedDeployment;
  /** Blocks behind the head considered final enough to index (0 on a local chain). */
  confirmations: number;
  clock: Clock;
  logger: Logger;
  /** V6: an ERC-8004 identity token moved; re-check the proof it backs (the server wires `proofs.recheckErc8004`). */
  onIdentityTransfer?: (chainId: number, registry: Address, agentId: bigint) => Promise<unknown>;
  /** Issue #27: an ERC-8004 identity's agentURI changed (`URIUpdated`); read its registration file again (`registrations.refreshIdentity`). */
  onIdentityUriUpdated?: (chainId: number, registry: Address, agentId: bigint) => Promise<unknown>;
  range?: RangePolicy;
  /** Wait between polls once at the head. */
  pollIntervalMs?: number;
  /** Longest wait between retries of a failing loop. */
  maxBackoffMs?: number;
  /**
   * Recompute dirty derived scores at least this often during a long backfill (seconds of `clock`; each pass reads every record of the
   * executors touched, so not too often).
   */
  derivedEverySeconds?: number;
  /** Log backfill progress (blocks done and to do, events/s) at most this often; default 5,000 ms. */
  progressEveryMs?: number;
};

/** What one pass towards the head did. */
export type SyncResult =
  | { type: "synced"; ranges: number; events: number; checkpoint: number }
  | { type: "reorg"; from: number; ancestor: number };

export type Indexer = {
  /** Indexes from the checkpoint to the head (minus confirmations) and recomputes the derived scores it touched. */
  syncToHead(signal?: AbortSignal): Promise<SyncResult>;
  /** Follows the chain until `signal` aborts; retryable errors are logged and retried with backoff, others thrown. */
  run(signal: AbortSignal): Promise<void>;
};

type Fetched = { type: "range"; range: IndexedRange; size: number } | { type: "reorg"; at: number };

const PROGRESS_EVERY_MS = 5_000;

/** Creates the indexer of one chain. @example await createIndexer({ store, derivedScores, rpc, deployment, confirmations: 0, clock, logger }).syncToHead() */
export function createIndexer(deps: IndexerDeps): Indexer {
  const { store, rpc, deployment, logger, clock } = deps;
  const { networkScores } = deps;
  const { chainId, contracts } = deployment;
  const policy = deps.range ?? DEFAULT_RANGE;
  const registry = contracts.registry.toLowerCase();
  let rangeSize = policy.initial;

  const executors = new Map<bigint, string>();
  const executorOf = (agentId: bigint) => {
    let id = executors.get(agentId);
    if (id === undefined) {
      id = executorId(chainId, contracts.identityRegistry, agentId);
      executors.set(agentId, id);
    }
    return id;
  };

  async function checkpoint(): Promise<Checkpoint> {
    const stored = await store.getCheckpoint(chainId);
    if (stored) {
      if (stored.registry !== registry)
        throw new IndexerConfigError(`chain ${chainId} was indexed for Registry ${stored.registry}, not ${registry}`);
      return stored;
    }
    const start = deployment.startBlock - 1;
    const header = start >= 0 ? (await rpc.getHeaders([start])).get(start) : null;
    if (start >= 0 && !header)
      throw new IndexerConfigError(`chain ${chainId} has no block ${start}: is the deployment file for this chain?`);
    const initial = { chainId, registry, blockNumber: start, blockHash: header?.hash ?? "" };
    await store.initCheckpoint(initial, clock.now());
    return initial;
  }

  /**
   * The contracts one pass follows: the deployment's, and the other identity registries backing an active ERC-8004
   * proof, read once a pass, after its target. A proof stored later was verified against a head at or past that
   * target (unless its ownerOf read came before the pass began), so the next pass, which follows its registry, reads
   * every transfer after it.
   */
  async function followedContracts(): Promise<{ followed: FollowedContracts; addresses: Address[] }> {
    const deploymentIdentity = contracts.identityRegistry.toLowerCase();
    const others = (await erc8004RegistriesWithProofs(chainId, store.activeSubjectHeads)).filter(
      (address) => address !== deploymentIdentity,
    );
    return {
      followed: { ...contracts, otherIdentityRegistries: new Set(others) },
      addresses: [contracts.registry, contracts.anchorRegistry, contracts.identityRegistry, ...others],
    };
  }

  /** Reads one range from `from`, at most `maxTo`, of `pass`'s contracts, shrinking it on range errors. */
  async function fetchRange(
    from: number,
    maxTo: number,
    parent: { number: number; hash: string },
    pass: { followed: FollowedContracts; addresses: Address[] },
  ): Promise<Fetched> {
    const { followed, addresses } = pass;
    let size = rangeSize;
    for (;;) {
      const to = Math.min(from + size - 1, maxTo);
      let logs: Awaited<ReturnType<ChainRpc["getLogs"]>>;
      try {
        logs = await rpc.getLogs({ fromBlock: from, toBlock: to, addresses, topic0s: FOLLOWED_TOPICS });
      } catch (error) {
        if (!(error instanceof RpcRangeError) || to === from) throw error;
        size = Math.max(1, Math.floor((to - from + 1) / 2));
        rangeSize = size;
        logger.info({ from, to, size }, "log range refused by the node, halving");
        continue;
      }
      const wanted = new Set<number>([to]);
      if (parent.number >= 0) wanted.add(parent.number);
      for (const log of logs) wanted.add(Number(log.blockNumber));
      const headers = await rpc.getHeaders([...wanted].sort((a, b) => a - b));
      if (parent.number >= 0 && headers.get(parent.number)?.hash !== parent.hash) return { type: "reorg", at: parent.number };
      const toHeader = headers.get(to);
      if (!toHeader) throw new ChainMovedError(`block ${to} disappeared while reading ${from}-${to}`);
      const events: ChainEvent[] = [];
      for (const log of logs) {
        if (log.removed) continue;
        if (headers.get(Number(log.blockNumber))?.hash !== log.blockHash)
          throw new ChainMovedError(`block ${Number(log.blockNumber)} changed while reading ${from}-${to}`);
        const event = decodeChainEvent(log, followed);
        if (event) events.push(event);
      }
      events.sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
      if (to - from + 1 === size) rangeSize = Math.min(policy.max, size * 2);
      const kept = [...headers.values()].filter((h): h is BlockHeader => h !== null && h.number >= from);
      return { type: "range", size, range: { chainId, registry, executorOf, events, from, headers: kept, to: toHeader } };
    }
  }

  /**
   * Writes `range` and the network score mirror of the executors its settlements name, in one transaction.
   * @returns those executors
   */
  async function commitRange(range: IndexedRange): Promise<string[]> {
    return store.transaction(async (tx) => {
      const settled = await tx.writeRange(range, clock.now());
      await networkScores.mirror(tx, chainId, settled);
      return settled;
    });
  }

  /** The newest stored block the chain still has, or the block before the deployment when it has none of them. */
  async function commonAncestor(): Promise<{ number: number; hash: string }> {
    const stored = await store.recentBlocks(chainId, 2_000);
    for (let i = 0; i < stored.length; i += 100) {
      const chunk = stored.slice(i, i + 100);
      const canonical = await rpc.getHeaders(chunk.map((b) => b.number));
      const found = chunk.find((b) => canonical.get(b.number)?.hash === b.hash);
      if (found) return found;
    }
    const start = deployment.startBlock - 1;
    const header = start >= 0 ? (await rpc.getHeaders([start])).get(start) : null;
    return { number: start, hash: header?.hash ?? "" };
  }

  /** Deletes everything above the common ancestor and re-mirrors the network scores of the settlements that went, in one transaction. */
  async function rollBack(at: number): Promise<number> {
    const ancestor = await commonAncestor();
    await store.transaction(async (tx) => networkScores.mirror(tx, chainId, await tx.rollbackTo(chainId, registry, ancestor, clock.now())));
    logger.warn({ chainId, at, ancestor: ancestor.number }, "reorg: rolled back to the common ancestor");
    return ancestor.number;
  }

  /** After a committed range: the Network Score mirror checked against the Registry, and moved identities reported. */
  async function afterCommit(range: IndexedRange, settled: readonly string[]): Promise<void> {
    if (settled.length > 0) {
      try {
        const agentIds = settled.map((e) => BigInt(e.slice(e.lastIndexOf(":") + 1)));
        const onchain = await rpc.networkScores(contracts.registry, agentIds, range.to.number);
        const compared = await Promise.all(
          settled.map(async (executor, i) => ({
            executor,
            mirrored: (await store.getNetworkScore(executor))?.score ?? 0,
            onchain: onchain.get(agentIds[i]) ?? 0,
          })),
        );
        for (const c of compared) {
          if (c.mirrored !== c.onchain)
            logger.error({ chainId, block: range.to.number, ...c }, "network score mirror disagrees with Registry.networkScoreOf");
        }
        await store.recordComparison(chainId, range.to.number, compared, clock.now());
      } catch (error) {
        logger.warn({ err: error, block: range.to.number }, "network score check skipped: networkScoreOf unavailable at this block");
      }
    }
    for (const e of range.events) {
      if (e.type === "uriUpdated" && deps.onIdentityUriUpdated) {
        try {
          await deps.onIdentityUriUpdated(chainId, e.registry, e.agentId);
        } catch (error) {
          logger.error({ err: error, registry: e.registry, agentId: e.agentId.toString() }, "registration file read failed");
        }
      }
      if (e.type !== "transfer" || /^0x0{40}$/i.test(e.from) || !deps.onIdentityTransfer) continue;
      try {
        await deps.onIdentityTransfer(chainId, e.registry, e.agentId);
      } catch (error) {
        logger.error({ err: error, registry: e.registry, agentId: e.agentId.toString() }, "identity transfer check failed");
      }
    }
  }

  async function recomputeAllDirty(): Promise<void> {
    while ((await deps.derivedScores.recomputeDirty(clock.now())) > 0);
  }

  async function syncToHead(signal?: AbortSignal): Promise<SyncResult> {
    let cp = await checkpoint();
    const target = (await rpc.blockNumber()) - deps.confirmations;
    const pass = await followedContracts();
    let ranges = 0;
    let events = 0;
    let lastDerived = clock.now();
    if (cp.blockNumber >= target) {
      // At the head: the checkpoint must still be on the chain (a reorg may have made it shorter or different).
      if (cp.blockNumber >= 0 && (await rpc.getHeaders([cp.blockNumber])).get(cp.blockNumber)?.hash !== cp.blockHash) {
        return { type: "reorg", from: cp.blockNumber, ancestor: await rollBack(cp.blockNumber) };
      }
    }
    let parent = { number: cp.blockNumber, hash: cp.blockHash };
    // Backfill progress for the operator: blocks done and to do, events/s, every few seconds.
    const startedMs = Date.now();
    const firstBlock = cp.blockNumber;
    let lastProgressMs = startedMs;
    const progress = (message: string) => {
      const seconds = (Date.now() - startedMs) / 1000;
      logger.info(
        {
          chainId,
          block: cp.blockNumber,
          target,
          blocksDone: cp.blockNumber - firstBlock,
          blocksToDo: target - cp.blockNumber,
          events,
          eventsPerSecond: Math.round(events / Math.max(seconds, 0.001)),
        },
        message,
      );
    };
    let next: Promise<Fetched> | null = cp.blockNumber < target ? fetchRange(cp.blockNumber + 1, target, parent, pass) : null;
    while (next !== null) {
      const fetched = await next;
      next = null;
      if (fetched.type === "reorg") return { type: "reorg", from: fetched.at, ancestor: await rollBack(fetched.at) };
      const { range } = fetched;
      // Read the following range while this one is written.
      parent = { number: range.to.number, hash: range.to.hash };
      if (range.to.number < target && !signal?.aborted) {
        next = fetchRange(range.to.number + 1, target, parent, pass);
        next.catch(() => undefined);
      }
      const settled = await commitRange(range);
      cp = { ...cp, blockNumber: range.to.number, blockHash: range.to.hash };
      ranges++;
      events += range.events.length;
      await afterCommit(range, settled);
      if (Date.now() - lastProgressMs >= (deps.progressEveryMs ?? PROGRESS_EVERY_MS)) {
        lastProgressMs = Date.now();
        progress("backfill progress");
      }
      if (clock.now() - lastDerived >= (deps.derivedEverySeconds ?? 60)) {
        await recomputeAllDirty();
        lastDerived = clock.now();
      }
    }
    await recomputeAllDirty();
    if (lastProgressMs !== startedMs) progress("backfill done");
    return { type: "synced", ranges, events, checkpoint: cp.blockNumber };
  }

  async function run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const result = await retry(() => syncToHead(signal), {
        attempts: Infinity,
        baseDelayMs: 500,
        maxDelayMs: deps.maxBackoffMs ?? 30_000,
        signal,
        retryable: (error) => error instanceof BaseError && error.retryable,
        onRetry: ({ error, attempt, delayMs }) => {
          const { message, code } = error instanceof BaseError ? error : { message: String(error), code: undefined };
          logger.warn({ err: message, code, failures: attempt, waitMs: delayMs }, "indexer pass failed, retrying");
        },
      }).catch((error: unknown) => {
        // Stopped while waiting to retry: not a failure.
        if (signal.aborted) return null;
        throw error;
      });
      if (result?.type === "synced" && result.ranges === 0) await realSleep(deps.pollIntervalMs ?? 1_000, signal).catch(() => undefined);
    }
  }

  return { syncToHead, run };
}
