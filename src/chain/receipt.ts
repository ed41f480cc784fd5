import { TransactionReceiptNotFoundError, type Hex, type PublicClient, type TransactionReceipt } from "viem";
import { realSleep } from "../retry";

/** How often a receipt is asked for while its transaction is not mined, when the client sets no polling interval (viem's default). */
const RECEIPT_POLL_MS = 4_000;

/**
 * `hash`'s receipt once its transaction is mined; null when it was not mined within `timeoutMs`, or as soon as `signal`
 * aborts (a service stopping: a transaction stored before it was sent is read again at the next start). Asks for the
 * receipt at once, then every `pollMs` (default the client's polling interval). Unlike viem's
 * `waitForTransactionReceipt`, whose polling runs on until its own timeout, nothing of it is left once it returns, so
 * a stop does not wait for a transaction that is not being mined.
 * @example const receipt = await receiptWithin(publicClient, txHash, { timeoutMs: 120_000, signal: stopping.signal });
 */
export async function receiptWithin(
  client: Pick<PublicClient, "getTransactionReceipt"> & { pollingInterval?: number },
  hash: Hex,
  options: { timeoutMs: number; signal?: AbortSignal; pollMs?: number },
): Promise<TransactionReceipt | null> {
  const deadline = performance.now() + options.timeoutMs;
  const pollMs = options.pollMs ?? client.pollingInterval ?? RECEIPT_POLL_MS;
  for (;;) {
    if (options.signal?.aborted) return null;
    try {
      return await client.getTransactionReceipt({ hash });
    } catch (error) {
      if (!(error instanceof TransactionReceiptNotFoundError)) throw error;
    }
    const left = deadline - performance.now();
    if (left <= 0) return null;
    const aborted = await realSleep(Math.min(pollMs, left), options.signal).then(
      () => false,
      () => true,
    );
    if (aborted) return null;
  }
}
