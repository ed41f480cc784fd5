/**
 * Daily on-chain anchoring of Vrai scores.
 *
 * After the daily recompute of day D (V9) the day's tree (`chain/score-tree`) is built and stored
 * (`store/anchors`: leaves of version 2 from now on, days stored before keep version 1), and its root is
 * anchored with `AnchorRegistry.anchorRoot(root, leafCount, kind)`, the kind of the day's leaf version: one
 * transaction a day, whatever the number of agents. This module decides what happens when; SQL is the
 * repository's, the clients the writer's. A score's proof is served only once its day's root is mined.
 */
import { encodeFunctionData, keccak256, TransactionReceiptNotFoundError, WaitForTransactionReceiptTimeoutError, type Hex } from "viem";
import type { Logger } from "pino";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import type { AnchorWriter } from "../chain/anchor-writer";
import { SCORE_LEAF_VERSIONS } from "../chain/score-tree";
import { shortMessageOf } from "../chain/short-message";
import { BaseError } from "../errors";
import { dayStart, firstDailyAt, toRfc3339 } from "../method";
import { retry } from "../retry";
import type { AnchorRepository, DayAnchorRow, ScoreAnchor, ScoreProof } from "../store/anchors";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";

/** Where an anchoring attempt left a day. */
export type AnchorOutcome =
  | { type: "mined"; day: string; txHash: Hex; blockNumber: number }
  | { type: "waiting"; day: string; txHash: Hex }
  | { type: "off"; day: string };

/** The daily anchoring of score roots, and the proofs derived from the trees it stored. */
export type Anchoring = {
  /** Builds and stores the tree of `day`'s daily scores, once; returns its root (null: no score that day). */
  buildDay(day: string): Promise<{ root: Hex; leafCount: number } | null>;
  /**
   * Anchors every day not yet mined, oldest first, and returns where each stands; a failure stops the pass.
   * A failure or a day left waiting is retried in the background until every day is mined.
   */
  anchorDue(): Promise<AnchorOutcome[]>;
  /** The scheduler's hook after the daily recompute of `day` (V9): store its tree, then anchor. */
  afterDaily(day: string): Promise<void>;
  /** A daily score's proof and its day's anchor, once the root is mined (`proof_not_ready` before). */
  proofOf(scoreId: number): Promise<ScoreProof & { anchor: ScoreAnchor }>;
  /** The proof of the agent's latest daily score whose day's root is mined. */
  latestProofOf(agentId: string): Promise<ScoreProof & { anchor: ScoreAnchor }>;
  /** Resumes anchoring left pending by a previous run. */
  start(): void;
  /** Stops retrying and waits for an attempt in progress. */
  stop(): Promise<void>;
};

/** What the anchoring needs: its tables, a clock, a logger and, to anchor at all, a writer. */
export type AnchoringDeps = {
  anchors: AnchorRepository;
  clock: Clock;
  logger: Logger;
  /** Absent: anchoring is off, trees are still stored and proofs served. */
  writer?: AnchorWriter;
  /** How long one attempt waits for its transaction's receipt (default `RECEIPT_TIMEOUT_MS`). */
  receiptTimeoutMs?: number;
};

/** First retry after a failed attempt; doubled at each failure up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 5_000;
const MAX_RETRY_MS = 300_000;
/** How long one attempt waits for its transaction's receipt before leaving it to the next attempt. */
const RECEIPT_TIMEOUT_MS = 120_000;

/** A transaction was mined, a root found anchored: where. */
type OnChain = { txHash: Hex; blockNumber: number };

/** What one pass over the unmined days reached; a failure stops the pass where it happened. */
type Pass = { outcomes: AnchorOutcome[]; failed: false } | { outcomes: AnchorOutcome[]; failed: true; error: unknown };

/** Thrown to `retry` by a pass that left a day's transaction waiting for its receipt: not a failure, so not logged as one. */
const WAITING = new BaseError("anchor_waiting", "an anchoring transaction is not mined yet");

/**
 * The daily anchoring: `afterDaily(day)` builds and stores the day's tree, then anchors every root not
 * yet mined, oldest first. Failed attempts are retried in the background (backoff from 5 s to 5 min)
 * until mined; `start()` resumes after a restart. Idempotent per day: a root already anchored on chain as
 * the day's batch (a `RootAnchored` of the root with the day's kind and leaf count, by either role) counts as
 * mined, the signed transaction is stored before it is broadcast and rebroadcast as is, so a day is anchored
 * by one transaction.
 * @example const anchoring = createAnchoring({ anchors: createAnchorRepository(db), clock: systemClock, logger, writer });
 */
export function createAnchoring(deps: AnchoringDeps): Anchoring {
  const { anchors, clock, logger, writer } = deps;
  const receiptTimeoutMs = deps.receiptTimeoutMs ?? RECEIPT_TIMEOUT_MS;
  /** Aborted by `stop()`: ends the retries' wait; a new one after `start()`. */
  let stopping = new AbortController();
  /** The pass in progress. */
  let running: Promise<Pass> | null = null;
  /** The retries after an unsettled pass, until one settles; one at a time. */
  let retrying: Promise<void> | null = null;
  if (!writer) logger.info("anchoring off: no ANCHOR_PRIVATE_KEY (trees are still stored and proofs served)");

  async function buildDay(day: string): Promise<{ root: Hex; leafCount: number } | null> {
    const existing = await anchors.getDay(day);
    if (existing) return { root: existing.root, leafCount: existing.leafCount };
    const started = Date.now();
    const built = await anchors.storeDayTree(day, clock.now());
    switch (built.type) {
      case "empty":
        return null;
      case "stored":
        logger.info(
          { day, root: built.root, leaves: built.leafCount, peakNodesHeld: built.peakNodesHeld, ms: Date.now() - started },
          "score tree stored",
        );
        return { root: built.root, leafCount: built.leafCount };
      case "exists": {
        // Another instance stored the day's tree first: the same scores, so the same tree.
        const stored = await anchors.getDay(day);
        return stored && { root: stored.root, leafCount: stored.leafCount };
      }
    }
  }

  /**
   * Where the day's root is anchored on chain, if it is: the first `RootAnchored` log of the root with the day's
   * kind and leaf count, whoever sent it. A root has one anchor per role (METHOD A6), so an anchor of it as a
   * single digest or as another batch is not the day's: the day's own `anchorRoot` is still sent.
   */
  async function findOnChain(w: AnchorWriter, row: DayAnchorRow): Promise<OnChain | null> {
    if (!(await w.publicClient.readContract({ address: w.contract, abi: anchorRegistryAbi, functionName: "isAnchored", args: [row.root] })))
      return null;
    if (row.txHash) {
      const receipt = await w.publicClient.getTransactionReceipt({ hash: row.txHash }).catch(() => null);
      if (receipt?.status === "success") return { txHash: row.txHash, blockNumber: Number(receipt.blockNumber) };
    }
    const logs = await w.publicClient.getContractEvents({
      address: w.contract,
      abi: anchorRegistryAbi,
      eventName: "RootAnchored",
      args: { root: row.root },
      fromBlock: 0n,
    });
    const kind = SCORE_LEAF_VERSIONS[row.leafVersion].kind;
    const log = logs.find(({ args }) => args.kind === kind && args.leafCount === BigInt(row.leafCount));
    if (!log) return null;
    if (!log.transactionHash || log.blockNumber === null)
      throw new BaseError("anchor_log_pending", `root ${row.root}'s RootAnchored log is not in a mined block yet`, { retryable: true });
    return { txHash: log.transactionHash, blockNumber: Number(log.blockNumber) };
  }

  /** Records the day mined by `found`, with its block's time (what a contract compares), and reports it. */
  async function markMined(w: AnchorWriter, chainId: number, row: DayAnchorRow, found: OnChain): Promise<AnchorOutcome> {
    const block = await w.publicClient.getBlock({ blockNumber: BigInt(found.blockNumber) });
    await anchors.setMined(row.day, { ...found, chainId, contract: w.contract, anchoredAt: Number(block.timestamp), minedAt: clock.now() });
    logger.info({ day: row.day, root: row.root, txHash: found.txHash, blockNumber: found.blockNumber }, "score root anchored");
    return { type: "mined", day: row.day, ...found };
  }

  /** Whether the day's stored transaction may still be mined, rebroadcast as is: same nonce, so it can never anchor twice. */
  async function storedTxMayMine(w: AnchorWriter, day: string, txHash: Hex, rawTx: Hex): Promise<boolean> {
    const receipt = await w.publicClient.getTransactionReceipt({ hash: txHash }).catch((error: unknown) => {
      if (error instanceof TransactionReceiptNotFoundError) return null;
      throw error;
    });
    if (receipt) {
      if (receipt.status === "success") return true;
      logger.warn({ day, txHash }, "anchoring transaction reverted; sending a new one");
      return false;
    }
    return w.publicClient.sendRawTransaction({ serializedTransaction: rawTx }).then(
      () => true,
      (error: unknown) => {
        // "already known": still in the pool, wait for it. "nonce too low": another transaction of this
        // account took its nonce, so it can never be mined (the root is not on chain): send a new one.
        const message = error instanceof Error ? error.message : String(error);
        logger.info({ day, txHash, err: shortMessageOf(error) }, "rebroadcast refused");
        return !/nonce too low|nonce has already been used/i.test(message);
      },
    );
  }

  /** One attempt for one day: mined if the root is on chain, else (re)broadcast its one transaction and wait. */
  async function anchorOne(w: AnchorWriter, chainId: number, row: DayAnchorRow): Promise<AnchorOutcome> {
    const onChain = await findOnChain(w, row);
    if (onChain) return markMined(w, chainId, row, onChain);

    let txHash = row.txHash;
    if (row.txHash && row.rawTx && !(await storedTxMayMine(w, row.day, row.txHash, row.rawTx))) {
      if (!(await anchors.setPendingTx(row.day, row.txHash, null))) return { type: "waiting", day: row.day, txHash: row.txHash };
      txHash = null;
    }
    if (!txHash) {
      const data = encodeFunctionData({
        abi: anchorRegistryAbi,
        functionName: "anchorRoot",
        args: [row.root, BigInt(row.leafCount), SCORE_LEAF_VERSIONS[row.leafVersion].kind],
      });
      const request = await w.walletClient.prepareTransactionRequest({
        account: w.walletClient.account,
        chain: null,
        to: w.contract,
        data,
      });
      const rawTx = await w.walletClient.signTransaction({ ...request, account: w.walletClient.account, chain: null });
      txHash = keccak256(rawTx);
      if (!(await anchors.setPendingTx(row.day, null, { txHash, rawTx, chainId, contract: w.contract }))) {
        return { type: "waiting", day: row.day, txHash };
      }
      await w.publicClient.sendRawTransaction({ serializedTransaction: rawTx });
      logger.info({ day: row.day, root: row.root, leaves: row.leafCount, txHash }, "score root sent");
    }
    try {
      const receipt = await w.publicClient.waitForTransactionReceipt({ hash: txHash, timeout: receiptTimeoutMs });
      if (receipt.status === "success") return markMined(w, chainId, row, { txHash, blockNumber: Number(receipt.blockNumber) });
      const after = await findOnChain(w, { ...row, txHash: null });
      if (after) return markMined(w, chainId, row, after);
      await anchors.setPendingTx(row.day, txHash, null);
      throw new BaseError("anchor_reverted", `anchoring transaction ${txHash} of ${row.day} reverted`, { retryable: true });
    } catch (error) {
      if (error instanceof WaitForTransactionReceiptTimeoutError) return { type: "waiting", day: row.day, txHash };
      throw error;
    }
  }

  /**
   * One pass over the days not yet mined, oldest first, after the pass in progress if any (it may have
   * listed the days before the caller's day was built). A failure ends the pass with the outcomes so far.
   */
  async function passOnce(): Promise<Pass> {
    while (running) await running;
    if (stopping.signal.aborted) return { outcomes: [], failed: false };
    running = (async (): Promise<Pass> => {
      const outcomes: AnchorOutcome[] = [];
      try {
        const days = await anchors.unminedDays();
        if (!writer) return { outcomes: days.map((d) => ({ type: "off", day: d.day })), failed: false };
        if (days.length === 0) return { outcomes, failed: false };
        const chainId = await writer.publicClient.getChainId();
        for (const row of days) outcomes.push(await anchorOne(writer, chainId, row));
        return { outcomes, failed: false };
      } catch (error) {
        return { outcomes, failed: true, error };
      } finally {
        running = null;
      }
    })();
    return running;
  }

  /** Passes again after `first` and each later pass that failed or left a day waiting, backing off from 5 s to 5 min. */
  function retryUntilSettled(first: Promise<Pass>): Promise<void> {
    return (
      retry(
        async (attempt) => {
          const pass = attempt === 1 ? await first : await passOnce();
          if (pass.failed) throw pass.error;
          if (pass.outcomes.some((o) => o.type === "waiting")) throw WAITING;
        },
        {
          attempts: Infinity,
          baseDelayMs: FIRST_RETRY_MS,
          maxDelayMs: MAX_RETRY_MS,
          signal: stopping.signal,
          onRetry: ({ error, delayMs }) => {
            if (error !== WAITING) logger.error({ err: error, retryInMs: delayMs }, "anchoring failed; retrying");
          },
        },
      )
        // Only stop() ends the retries before a pass settles: its abort rejects the wait, which is all it ends.
        .catch(() => undefined)
        .finally(() => {
          retrying = null;
        })
    );
  }

  /**
   * proof_not_ready for a daily score of `day` (`subject` names it), saying when its day's root is expected on chain:
   * the tree is built right after the day's daily recompute, at the day's 00:00 UTC (V9), and its root anchored then.
   */
  async function notReady(subject: string, day: string): Promise<NotFoundError> {
    const row = await anchors.getDay(day);
    const recompute = `that day's daily recompute (from ${toRfc3339(dayStart(day))})`;
    const expected = writer
      ? `it is expected on chain right after ${recompute}, its transaction retried until mined${row?.txHash ? ` (${row.txHash} sent, not mined yet)` : ""}`
      : "this service does not anchor (no ANCHOR_PRIVATE_KEY): it comes when the instance that anchors has it mined";
    if (!row) {
      return new NotFoundError(
        "proof_not_ready",
        `${subject}'s day (${day}) has no tree yet: the tree is built right after ${recompute}, then its root is anchored; ${expected}`,
      );
    }
    return new NotFoundError(
      "proof_not_ready",
      `${subject}'s day (${day}) is not anchored yet: its root ${row.root} is not mined; ${expected}`,
    );
  }

  async function proofOf(scoreId: number): Promise<ScoreProof & { anchor: ScoreAnchor }> {
    const found = await anchors.scoreProof(scoreId);
    if (!found) throw new NotFoundError("score_not_found", `score ${scoreId} does not exist`);
    if (found.trigger !== "daily")
      throw new NotFoundError("score_not_daily", `score ${scoreId} is not a daily score: only daily scores are anchored`);
    if (!found.proof) {
      if (found.tree === "none") throw await notReady(`score ${scoreId}`, found.day);
      throw new NotFoundError(
        "proof_not_ready",
        `score ${scoreId} was stored after its day's (${found.day}) tree was built: it is not one of its leaves, and has no proof`,
      );
    }
    const { proof } = found;
    // Never a proof against a root that is not on chain: a contract could not accept it, and nobody can check it.
    if (!proof.anchor) throw await notReady(`score ${scoreId}`, proof.day);
    return { ...proof, anchor: proof.anchor };
  }

  async function anchorDue(): Promise<AnchorOutcome[]> {
    if (stopping.signal.aborted) return [];
    const passing = passOnce();
    retrying ??= retryUntilSettled(passing);
    return (await passing).outcomes;
  }

  return {
    buildDay,
    anchorDue,
    async afterDaily(day) {
      await buildDay(day);
      await anchorDue();
    },
    proofOf,
    async latestProofOf(agentId) {
      const { scoreId, latestDailyDay, claimedAt } = await anchors.latestAnchoredScore(agentId);
      if (claimedAt === null) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
      if (scoreId !== null) return proofOf(scoreId);
      if (latestDailyDay !== null) throw await notReady(`agent ${agentId}'s latest daily score`, latestDailyDay);
      // As GET /v1/agents/{id}/scores says it (firstDailyAt): no daily score before the first 00:00 UTC after the claim.
      const first = firstDailyAt(claimedAt);
      const when =
        clock.now() < first
          ? `the first is computed at ${toRfc3339(first)}`
          : `the first was due at ${toRfc3339(first)} and comes with the next daily recompute`;
      throw new NotFoundError(
        "proof_not_ready",
        `agent ${agentId} has no daily score yet: ${when} (the first 00:00 UTC after its claim, V9); ` +
          "its proof is served once that day's root is anchored on chain, right after",
      );
    },
    start() {
      if (stopping.signal.aborted) stopping = new AbortController();
      void anchorDue();
    },
    async stop() {
      stopping.abort();
      await running;
      await retrying;
    },
  };
}
