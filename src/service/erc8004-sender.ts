/**
 * The sends of Vrai's ERC-8004 feedback (issue #27), from the outbox (src/store/erc8004-feedback.ts), exactly once:
 *
 * - A feedback is given by one `giveFeedback` transaction, signed at the publisher's next nonce and stored before it is
 *   broadcast (src/chain/signer.ts). Before any (re)send, the registry is asked first: a `NewFeedback` of the publisher
 *   for the token with this feedback's hash, from the block the first send was signed at, is this feedback given, and
 *   is recorded (its index) instead of sending again. A stored transaction no block holds is rebroadcast as it is (same
 *   nonce: it can be mined once at most); a new one is signed only when that nonce went to another transaction and the
 *   feedback is not on chain. So a crash between send and record, at any point, leaves one feedback.
 * - A feedback asked to be revoked (replaced, publishing off, the proof removed) is revoked by `revokeFeedback` once it is
 *   given, the same way (`readFeedback(...).isRevoked` is the registry's answer); a feedback of an agent and tag is given
 *   only once the older one's revocation is made, so the registry holds one standing feedback of Vrai's per tag.
 * - A feedback the registry refuses (the publisher owns or operates the token, the token does not exist) is dropped with
 *   the registry's reason; any other failure is retried with backoff, 5 s doubling to 5 min.
 */
import {
  BaseError as ViemBaseError,
  ContractFunctionRevertedError,
  encodeFunctionData,
  isAddressEqual,
  parseEventLogs,
  TransactionReceiptNotFoundError,
  type Hex,
  type TransactionReceipt,
} from "viem";
import type { Logger } from "pino";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { newFeedbackLogs, readFeedback, type FeedbackWriter } from "../chain/reputation-registry";
import { shortMessageOf } from "../chain/short-message";
import { receiptWithin } from "../chain/receipt";
import { resumeStoredTx } from "../chain/signer";
import type { Erc8004FeedbackRepository, FeedbackRow } from "../store/erc8004-feedback";
import type { Clock } from "./clock";

/** What one step of a feedback did. */
export type SendOutcome =
  | { type: "given"; id: string; feedbackIndex: bigint; txHash: Hex; sent: boolean }
  | { type: "revoked"; id: string; sent: boolean }
  | { type: "dropped"; id: string; reason: string }
  | { type: "waiting"; id: string; txHash: Hex; retryAt: number }
  | { type: "failed"; id: string; error: string; retryAt: number };

export type FeedbackSender = {
  /**
   * Makes every send due now, oldest day first, until none is left that can be made now. Once `signal` aborts (the
   * service stopping), a step waiting for its transaction's receipt is left waiting at once (its transaction stays
   * stored, for the next start) and the pass ends.
   */
  sendDue(signal?: AbortSignal): Promise<SendOutcome[]>;
};

/** First retry after a failed attempt (seconds); doubled at each failure up to `MAX_RETRY_S`. */
const FIRST_RETRY_S = 5;
const MAX_RETRY_S = 300;
/** How long a step waits for its transaction's receipt before leaving it to the next pass. */
const RECEIPT_TIMEOUT_MS = 120_000;
/** When a transaction not mined yet is looked at again (seconds). */
const WAITING_RETRY_S = 30;
/** Feedbacks read per query. */
const BATCH = 50;

/** A failure the sender reports as it is (no stack): the registry's state is not what the step needs yet. */
class SendError extends Error {}

/** The registry's reason when `error` is a revert of its call (viem's ContractFunctionRevertedError), else null. */
function revertReason(error: unknown): string | null {
  if (!(error instanceof ViemBaseError)) return null;
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
  return reverted instanceof ContractFunctionRevertedError ? (reverted.reason ?? reverted.shortMessage) : null;
}

/**
 * The sender of `writer`'s feedback from `outbox`. A feedback planned for another client or registry than the writer's
 * (the configuration changed) is dropped; one given by another client cannot be revoked by this one and is left failing.
 * @example const sender = createFeedbackSender({ outbox, writer, clock, logger });
 */
export function createFeedbackSender(deps: {
  outbox: Erc8004FeedbackRepository;
  writer: FeedbackWriter;
  clock: Clock;
  logger: Logger;
  /** How long a step waits for its transaction's receipt (default `RECEIPT_TIMEOUT_MS`). */
  receiptTimeoutMs?: number;
}): FeedbackSender {
  const { outbox, writer, clock, logger } = deps;
  const client = writer.publicClient;
  const receiptTimeoutMs = deps.receiptTimeoutMs ?? RECEIPT_TIMEOUT_MS;
  const ours = (row: FeedbackRow) => isAddressEqual(row.client, writer.signer.address) && isAddressEqual(row.registry, writer.registry);

  /** This feedback on chain: a NewFeedback of the publisher for the token with its hash, since its first send. */
  async function findGiven(row: FeedbackRow) {
    const logs = await newFeedbackLogs(client, row.registry, {
      agentId: row.tokenId,
      client: row.client,
      fromBlock: row.searchFromBlock ?? 0n,
    });
    return logs.find((log) => log.feedbackHash.toLowerCase() === row.fileHash.toLowerCase()) ?? null;
  }

  async function recordGiven(
    row: FeedbackRow,
    found: { feedbackIndex: bigint; blockNumber: bigint; txHash: Hex },
    sent: boolean,
  ): Promise<SendOutcome> {
    await outbox.setGiven(row.id, { ...found, at: clock.now() });
    logger.info(
      {
        feedback: row.id,
        agent: row.agentId,
        tag: row.tag1,
        value: row.value,
        feedbackIndex: Number(found.feedbackIndex),
        txHash: found.txHash,
      },
      "ERC-8004 feedback given",
    );
    return { type: "given", id: row.id, feedbackIndex: found.feedbackIndex, txHash: found.txHash, sent };
  }

  /** `txHash`'s receipt if a block holds it, else null (an RPC failure throws: never taken for "not mined"). */
  async function receiptIfMined(txHash: Hex): Promise<TransactionReceipt | null> {
    return client.getTransactionReceipt({ hash: txHash }).catch((error: unknown) => {
      if (error instanceof TransactionReceiptNotFoundError) return null;
      throw error;
    });
  }

  /** This feedback's NewFeedback in `receipt`, if it is there. */
  const givenIn = (receipt: TransactionReceipt, row: FeedbackRow): { feedbackIndex: bigint } | null => {
    const event = parseEventLogs({ abi: reputationRegistryAbi, eventName: "NewFeedback", logs: receipt.logs }).find(
      (log) => isAddressEqual(log.address, row.registry) && log.args.feedbackHash.toLowerCase() === row.fileHash.toLowerCase(),
    );
    return event ? { feedbackIndex: event.args.feedbackIndex } : null;
  };

  /** Waits for `txHash`'s receipt; null when it is not mined within the timeout, or once `signal` aborts. */
  const receiptOf = (txHash: Hex, signal: AbortSignal | undefined) =>
    receiptWithin(client, txHash, { timeoutMs: receiptTimeoutMs, signal });

  const waiting = async (row: FeedbackRow, txHash: Hex): Promise<SendOutcome> => {
    const retryAt = clock.now() + WAITING_RETRY_S;
    await outbox.failed(row.id, retryAt, `transaction ${txHash} is not mined yet`);
    return { type: "waiting", id: row.id, txHash, retryAt };
  };

  /** Gives a planned feedback, once: found on chain, its stored transaction resumed, or a new one sent. */
  async function give(row: FeedbackRow, signal: AbortSignal | undefined): Promise<SendOutcome> {
    if (!ours(row)) {
      const reason =
        `planned for client ${row.client} on registry ${row.registry}; ` +
        `this service gives as ${writer.signer.address} on ${writer.registry}`;
      await outbox.drop(row.id, reason);
      return { type: "dropped", id: row.id, reason };
    }
    if (row.giveTxHash !== null) {
      const found = await findGiven(row);
      if (found) return recordGiven(row, found, false);
      const txHash = row.giveTxHash;
      const stored = row.giveRawTx === null ? "lost" : (await resumeStoredTx(client, { txHash, rawTx: row.giveRawTx })).state;
      if (stored === "pending" && !(await receiptOf(txHash, signal))) return waiting(row, txHash);
      // Mined (now or meanwhile): its receipt says whether it gave this feedback; else the registry's logs.
      const receipt = await receiptIfMined(txHash);
      const inReceipt = receipt?.status === "success" ? givenIn(receipt, row) : null;
      if (receipt && inReceipt) return recordGiven(row, { ...inReceipt, blockNumber: receipt.blockNumber, txHash }, false);
      const after = await findGiven(row);
      if (after) return recordGiven(row, after, false);
      if (receipt?.status === "success") throw new SendError(`transaction ${txHash} was mined without this feedback's NewFeedback`);
      // Reverted, or its nonce taken by another transaction: it never will be given; a new one may be sent.
      if (!(await outbox.setGiveTx(row.id, txHash, null))) throw new SendError(`feedback ${row.id} changed while it was resumed`);
      if (row.revokeAskedAt !== null) {
        const reason = `never given before it was withdrawn (${row.revokeReason ?? "revocation asked"})`;
        await outbox.drop(row.id, reason);
        return { type: "dropped", id: row.id, reason };
      }
    }
    const args = [row.tokenId, BigInt(row.value), row.valueDecimals, row.tag1, row.tag2, row.endpoint, row.uri, row.fileHash] as const;
    try {
      await client.simulateContract({
        address: row.registry,
        abi: reputationRegistryAbi,
        functionName: "giveFeedback",
        args,
        account: writer.signer.address,
      });
    } catch (error) {
      const reason = revertReason(error);
      if (reason === null) throw error;
      await outbox.drop(row.id, `the reputation registry refuses it: ${reason}`);
      logger.warn({ feedback: row.id, agent: row.agentId, reason }, "ERC-8004 feedback refused by the registry; dropped");
      return { type: "dropped", id: row.id, reason };
    }
    const searchFromBlock = await client.getBlockNumber();
    const data = encodeFunctionData({ abi: reputationRegistryAbi, functionName: "giveFeedback", args });
    const signed = await writer.signer.send({ to: row.registry, data }, (tx) =>
      outbox.setGiveTx(row.id, null, { txHash: tx.txHash, rawTx: tx.rawTx, searchFromBlock }),
    );
    if (!signed.sent) throw new SendError(`feedback ${row.id} changed before its transaction was stored (another instance, or withdrawn)`);
    logger.info({ feedback: row.id, agent: row.agentId, tag: row.tag1, value: row.value, txHash: signed.txHash }, "ERC-8004 feedback sent");
    const receipt = await receiptOf(signed.txHash, signal);
    if (!receipt) return waiting(row, signed.txHash);
    const given = receipt.status === "success" ? givenIn(receipt, row) : null;
    if (!given) throw new SendError(`giveFeedback transaction ${signed.txHash} reverted`);
    return recordGiven(row, { ...given, blockNumber: receipt.blockNumber, txHash: signed.txHash }, true);
  }

  /** Revokes a given feedback asked to be revoked, once the registry shows it revoked. */
  async function revoke(row: FeedbackRow, signal: AbortSignal | undefined): Promise<SendOutcome> {
    const feedbackIndex = row.feedbackIndex;
    if (feedbackIndex === null) throw new SendError(`feedback ${row.id} is given without an index`);
    const isRevoked = async () =>
      (await readFeedback(client, row.registry, { agentId: row.tokenId, client: row.client, feedbackIndex })).isRevoked;
    const recordRevoked = async (sent: boolean): Promise<SendOutcome> => {
      await outbox.setRevoked(row.id, clock.now());
      logger.info(
        { feedback: row.id, agent: row.agentId, tag: row.tag1, feedbackIndex: Number(feedbackIndex), reason: row.revokeReason },
        "ERC-8004 feedback revoked",
      );
      return { type: "revoked", id: row.id, sent };
    };
    if (await isRevoked()) return recordRevoked(false);
    if (!ours(row))
      throw new SendError(
        `given by ${row.client} on ${row.registry}: only that client revokes it, and this service gives as ${writer.signer.address}`,
      );
    if (row.revokeTxHash !== null && row.revokeRawTx !== null) {
      const stored = await resumeStoredTx(client, { txHash: row.revokeTxHash, rawTx: row.revokeRawTx });
      if (stored.state === "pending" && !(await receiptOf(row.revokeTxHash, signal))) return waiting(row, row.revokeTxHash);
      if (await isRevoked()) return recordRevoked(false);
      if (!(await outbox.setRevokeTx(row.id, row.revokeTxHash, null)))
        throw new SendError(`feedback ${row.id} changed while it was resumed`);
    }
    const data = encodeFunctionData({ abi: reputationRegistryAbi, functionName: "revokeFeedback", args: [row.tokenId, feedbackIndex] });
    const signed = await writer.signer.send({ to: row.registry, data }, (tx) =>
      outbox.setRevokeTx(row.id, null, { txHash: tx.txHash, rawTx: tx.rawTx }),
    );
    if (!signed.sent) throw new SendError(`feedback ${row.id} changed before its revocation was stored (another instance)`);
    if (!(await receiptOf(signed.txHash, signal))) return waiting(row, signed.txHash);
    if (!(await isRevoked())) throw new SendError(`revokeFeedback transaction ${signed.txHash} left feedback ${feedbackIndex} standing`);
    return recordRevoked(true);
  }

  /** One step of `row`, its failure recorded with the next attempt's time. */
  async function step(row: FeedbackRow, signal: AbortSignal | undefined): Promise<SendOutcome> {
    try {
      return row.state === "planned" ? await give(row, signal) : await revoke(row, signal);
    } catch (error) {
      const retryAt = clock.now() + Math.min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** Math.min(row.attempts, 16));
      const message = error instanceof SendError ? error.message : shortMessageOf(error);
      await outbox.failed(row.id, retryAt, message);
      logger.warn({ feedback: row.id, agent: row.agentId, err: message, retryAt }, "ERC-8004 feedback send failed; retrying");
      return { type: "failed", id: row.id, error: message, retryAt };
    }
  }

  return {
    async sendDue(signal) {
      const outcomes: SendOutcome[] = [];
      // A feedback is stepped once per state in a pass: a step that changed nothing is not tried again until the next.
      const stepped = new Set<string>();
      for (;;) {
        const rows = (await outbox.due(clock.now(), BATCH)).filter((row) => !stepped.has(`${row.id}:${row.state}`));
        if (rows.length === 0) return outcomes;
        for (const row of rows) {
          if (signal?.aborted) return outcomes;
          stepped.add(`${row.id}:${row.state}`);
          outcomes.push(await step(row, signal));
        }
      }
    },
  };
}
