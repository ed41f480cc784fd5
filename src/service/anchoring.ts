/**
 * Daily on-chain anchoring of Vrai scores.
 *
 * After the daily recompute of day D (V9) the day's tree (`chain/score-tree`) is built and stored
 * (`store/anchors`: leaves of version 2 from now on, days stored before keep version 1), and its root is
 * anchored with `AnchorRegistry.anchorRoot(root, leafCount, kind)`, the kind of the day's leaf version: one
 * transaction a day, whatever the number of agents. This module decides what happens when; SQL is the
 * repository's, the clients the writer's. A score's proof is served only once its day's root is mined. An anchor is final
 * once `confirmations` blocks are on it: until then each pass reads its receipt again, and a transaction a reorganisation
 * dropped is sent again (issue #30).
 */
import { encodeFunctionData, TransactionReceiptNotFoundError, type Hex } from "viem";
import type { Logger } from "pino";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import type { AnchorWriter } from "../chain/anchor-writer";
import { receiptWithin } from "../chain/receipt";
import { SCORE_LEAF_VERSIONS } from "../chain/score-tree";
import { resumeStoredTx } from "../chain/signer";
import { BaseError } from "../errors";
import { dayStart, firstDailyAt, toRfc3339 } from "../method";
import { shortMessageOf } from "../chain/short-message";
import { retry } from "../retry";
import type { AnchorRepository, DayAnchorRow, ScoreAnchor, ScoreProof } from "../store/anchors";
import type { Clock } from "./clock";
import { agentUnclaimedError, NotFoundError } from "./errors";

/** Where an anchoring attempt left a day. */
export type AnchorOutcome =
  /** Mined, and final: `confirmations` blocks on it. */
  | { type: "mined"; day: string; txHash: Hex; blockNumber: number }
  /** Mined (recorded, its proofs served), with fewer blocks on it than asked: read again at the next pass. */
  | { type: "confirming"; day: string; txHash: Hex; blockNumber: number; confirmations: number }
  | { type: "waiting"; day: string; txHash: Hex }
  | { type: "off"; day: string };

/** Where the anchoring stands, for the health route and the metrics. */
export type AnchoringStatus = {
  /** Whether this instance anchors (it has a writer); days may be anchored by another instance. */
  writing: boolean;
  /** Days whose tree is stored and whose root is not anchored yet, the oldest of them, and when its tree was built. */
  unanchoredDays: number;
  oldestUnanchoredDay: string | null;
  oldestBuiltAt: number | null;
  /** When this instance's last anchoring attempt failed, if its last attempt did (the error is in its log). */
  failingSince: number | null;
};

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
  /** Where the anchoring stands: the days not anchored yet (from the store, whoever anchors), this instance's failures. */
  status(): Promise<AnchoringStatus>;
  /** Resumes anchoring left pending by a previous run. */
  start(): void;
  /**
   * Stops retrying and waits for an attempt in progress, which no longer waits for its transaction's receipt: that
   * transaction stays stored, and `start()` (the next run's) reads its receipt again.
   */
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
  /** Told each day whose anchor it saw final (what comes after a day's anchor: its ERC-8004 feedback). */
  onMined?: (day: string) => void;
  /**
   * Blocks on an anchor, its own included, before it is final (default 1: final once mined). Until then each pass
   * reads its receipt again; one a reorganisation dropped is sent again.
   */
  confirmations?: number;
  /** The longest wait between two attempts while the chain fails or a transaction waits (default `MAX_RETRY_MS`). */
  maxRetryMs?: number;
};

/** First retry after a failed attempt (at most the longest); doubled at each failure up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 5_000;
const MAX_RETRY_MS = 300_000;
/** `vrai serve`'s longest wait between two attempts (ANCHOR_RETRY_MAX_MS). */
export const DEFAULT_ANCHOR_RETRY_MAX_MS = MAX_RETRY_MS;
/**
 * `vrai serve`'s blocks on an anchor before it is final (ANCHOR_CONFIRMATIONS), as the indexer's CONFIRMATIONS: a
 * reorganisation deeper than this is not looked for.
 */
export const DEFAULT_ANCHOR_CONFIRMATIONS = 2;
/** How long one attempt waits for its transaction's receipt before leaving it to the next attempt. */
const RECEIPT_TIMEOUT_MS = 120_000;

/** A transaction was mined, a root found anchored: where. */
type OnChain = { txHash: Hex; blockNumber: number };
/** Where it was seen, with the hash of the block it was seen in (checked before anything is recorded of it). */
type SeenOnChain = OnChain & { blockHash: Hex };

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
  const confirmations = deps.confirmations ?? 1;
  const maxRetryMs = deps.maxRetryMs ?? MAX_RETRY_MS;
  /** When the attempts of this instance started failing; null once one succeeds. */
  let failingSince: number | null = null;
  /** Aborted by `stop()`: ends the retries' wait and a receipt's; a new one after `start()`. */
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
  async function findOnChain(w: AnchorWriter, row: DayAnchorRow): Promise<SeenOnChain | null> {
    if (!(await w.publicClient.readContract({ address: w.contract, abi: anchorRegistryAbi, functionName: "isAnchored", args: [row.root] })))
      return null;
    if (row.txHash) {
      const receipt = await w.publicClient.getTransactionReceipt({ hash: row.txHash }).catch(() => null);
      if (receipt?.status === "success")
        return { txHash: row.txHash, blockNumber: Number(receipt.blockNumber), blockHash: receipt.blockHash };
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
    if (!log.transactionHash || log.blockNumber === null || !log.blockHash)
      throw new BaseError("anchor_log_pending", `root ${row.root}'s RootAnchored log is not in a mined block yet`, { retryable: true });
    return { txHash: log.transactionHash, blockNumber: Number(log.blockNumber), blockHash: log.blockHash };
  }

  /** Blocks on block `blockNumber`, its own included (the head read afresh, not from the client's cache). */
  async function depthOf(w: AnchorWriter, blockNumber: number): Promise<number> {
    if (confirmations <= 1) return 1;
    return Number(await w.publicClient.getBlockNumber({ cacheTime: 0 })) - blockNumber + 1;
  }

  /** The outcome of a day mined by `found`, final or not; what comes after an anchor is told of it once final. */
  function minedOutcome(day: string, found: OnChain, depth: number): AnchorOutcome {
    if (depth < confirmations) return { type: "confirming", day, ...found, confirmations: depth };
    deps.onMined?.(day);
    return { type: "mined", day, ...found };
  }

  /**
   * Records the day mined by `seen`, with its block's time (what a contract compares), final if deep enough (`known`
   * blocks on it, read when not given), and reports it. If that block is no longer the chain's (a reorganisation between
   * the two reads), nothing is recorded: the day is read again at the next pass.
   */
  async function markMined(w: AnchorWriter, chainId: number, row: DayAnchorRow, seen: SeenOnChain, known?: number): Promise<AnchorOutcome> {
    const { blockHash, ...found } = seen;
    const [block, depth] = await Promise.all([
      w.publicClient.getBlock({ blockNumber: BigInt(found.blockNumber) }),
      known ?? depthOf(w, found.blockNumber),
    ]);
    if (block.hash !== blockHash) return { type: "waiting", day: row.day, txHash: found.txHash };
    const now = clock.now();
    const final = depth >= confirmations;
    await anchors.setMined(row.day, {
      ...found,
      chainId,
      contract: w.contract,
      anchoredAt: Number(block.timestamp),
      minedAt: now,
      finalAt: final ? now : null,
    });
    logger.info({ day: row.day, root: row.root, txHash: found.txHash, blockNumber: found.blockNumber, final }, "score root anchored");
    return minedOutcome(row.day, found, depth);
  }

  /**
   * A recorded anchor not final yet, read again: final once deep enough; recorded anew if its transaction is in another
   * block now (or another anchor of the root is on chain); if the root is no longer anchored (a reorganisation dropped
   * the block), the day is pending again and its transaction sent again as it is (or a new one, if its nonce was taken).
   */
  async function confirmMined(w: AnchorWriter, chainId: number, row: DayAnchorRow & { txHash: Hex }): Promise<AnchorOutcome> {
    const receipt = await w.publicClient.getTransactionReceipt({ hash: row.txHash }).catch((error: unknown) => {
      if (error instanceof TransactionReceiptNotFoundError) return null;
      throw error;
    });
    if (receipt?.status === "success") {
      const found = { txHash: row.txHash, blockNumber: Number(receipt.blockNumber), blockHash: receipt.blockHash };
      const depth = await depthOf(w, found.blockNumber);
      // Recorded again once final, or when the transaction is in another block now: that block and its time read afresh.
      if (depth >= confirmations || found.blockNumber !== row.blockNumber) return markMined(w, chainId, row, found, depth);
      return { type: "confirming", day: row.day, txHash: found.txHash, blockNumber: found.blockNumber, confirmations: depth };
    }
    const elsewhere = await findOnChain(w, { ...row, txHash: null });
    if (elsewhere) return markMined(w, chainId, row, elsewhere);
    logger.warn(
      { day: row.day, root: row.root, txHash: row.txHash, blockNumber: row.blockNumber },
      "score root no longer anchored: its block left the chain (a reorganisation); sending its transaction again",
    );
    if (!(await anchors.setDropped(row.day, row.txHash))) return { type: "waiting", day: row.day, txHash: row.txHash };
    return anchorOne(w, chainId, { ...row, status: "pending", blockNumber: null, minedAt: null, anchoredAt: null });
  }

  /** Whether the day's stored transaction may still be mined, rebroadcast as is: same nonce, so it can never anchor twice. */
  async function storedTxMayMine(w: AnchorWriter, day: string, txHash: Hex, rawTx: Hex): Promise<boolean> {
    const { state, refusal } = await resumeStoredTx(w.publicClient, { txHash, rawTx });
    if (state === "reverted") logger.warn({ day, txHash }, "anchoring transaction reverted; sending a new one");
    // "already known": still in the pool, wait for it. "nonce too low": another transaction of this
    // account took its nonce, so it can never be mined (the root is not on chain): send a new one.
    if (refusal !== undefined) logger.info({ day, txHash, err: refusal }, "rebroadcast refused");
    return state === "mined" || state === "pending";
  }

  /** One attempt for one day: mined if the root is on chain, else (re)broadcast its one transaction and wait. */
  async function anchorOne(w: AnchorWriter, chainId: number, row: DayAnchorRow): Promise<AnchorOutcome> {
    if (row.status === "mined" && row.txHash) return confirmMined(w, chainId, { ...row, txHash: row.txHash });
    const onChain = await findOnChain(w, row);
    if (onChain) return markMined(w, chainId, row, onChain);

    let txHash = row.txHash;
    // Without its signed bytes a transaction is not this service's to resume (another sender's anchor a reorganisation
    // dropped): forgotten, as one that can never be mined, and a new one sent.
    if (row.txHash && !(row.rawTx && (await storedTxMayMine(w, row.day, row.txHash, row.rawTx)))) {
      if (!(await anchors.setPendingTx(row.day, row.txHash, null))) return { type: "waiting", day: row.day, txHash: row.txHash };
      txHash = null;
    }
    if (!txHash) {
      const data = encodeFunctionData({
        abi: anchorRegistryAbi,
        functionName: "anchorRoot",
        args: [row.root, BigInt(row.leafCount), SCORE_LEAF_VERSIONS[row.leafVersion].kind],
      });
      // Stored before it is broadcast: a restart finds it and rebroadcasts it as is.
      const signed = await w.signer.send({ to: w.contract, data }, (tx) =>
        anchors.setPendingTx(row.day, null, { txHash: tx.txHash, rawTx: tx.rawTx, chainId, contract: w.contract }),
      );
      txHash = signed.txHash;
      if (!signed.sent) return { type: "waiting", day: row.day, txHash };
      logger.info({ day: row.day, root: row.root, leaves: row.leafCount, txHash }, "score root sent");
    }
    // Not mined within the timeout, or the service stopping: the transaction stays stored, and the next pass reads it again.
    const receipt = await receiptWithin(w.publicClient, txHash, { timeoutMs: receiptTimeoutMs, signal: stopping.signal });
    if (receipt === null) return { type: "waiting", day: row.day, txHash };
    if (receipt.status === "success")
      return markMined(w, chainId, row, { txHash, blockNumber: Number(receipt.blockNumber), blockHash: receipt.blockHash });
    const after = await findOnChain(w, { ...row, txHash: null });
    if (after) return markMined(w, chainId, row, after);
    await anchors.setPendingTx(row.day, txHash, null);
    throw new BaseError("anchor_reverted", `anchoring transaction ${txHash} of ${row.day} reverted`, { retryable: true });
  }

  /**
   * One pass over the days whose anchor is not final yet, oldest first, after the pass in progress if any (it may have
   * listed the days before the caller's day was built). A failure ends the pass with the outcomes so far.
   */
  async function passOnce(): Promise<Pass> {
    while (running) await running;
    if (stopping.signal.aborted) return { outcomes: [], failed: false };
    running = (async (): Promise<Pass> => {
      const outcomes: AnchorOutcome[] = [];
      try {
        const days = await anchors.unfinalDays();
        if (!writer) return { outcomes: days.map((d) => ({ type: "off", day: d.day })), failed: false };
        if (days.length === 0) return { outcomes, failed: false };
        const chainId = await writer.publicClient.getChainId();
        for (const row of days) outcomes.push(await anchorOne(writer, chainId, row));
        failingSince = null;
        return { outcomes, failed: false };
      } catch (error) {
        failingSince ??= clock.now();
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
          if (pass.outcomes.some((o) => o.type === "waiting" || o.type === "confirming")) throw WAITING;
        },
        {
          attempts: Infinity,
          baseDelayMs: Math.min(FIRST_RETRY_MS, maxRetryMs),
          maxDelayMs: maxRetryMs,
          signal: stopping.signal,
          onRetry: ({ error, delayMs }) => {
            if (error !== WAITING)
              logger.error({ err: error, reason: shortMessageOf(error), retryInMs: delayMs }, "anchoring failed; retrying");
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
      const { scoreId, latestDailyDay, claimedAt, releasedAt } = await anchors.latestAnchoredScore(agentId);
      if (claimedAt === null) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
      if (releasedAt !== null) throw agentUnclaimedError(agentId, 404);
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
    async status() {
      const lag = await anchors.anchoringLag();
      return {
        writing: writer !== undefined,
        unanchoredDays: lag.days,
        oldestUnanchoredDay: lag.oldestDay,
        oldestBuiltAt: lag.oldestBuiltAt,
        failingSince,
      };
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
