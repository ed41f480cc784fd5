/**
 * The transactions one account sends from this process (the anchoring of score roots, Vrai's ERC-8004 feedback): each
 * signed at the account's next nonce, stored by its sender before it leaves, then handed to the node, one at a time per
 * account. The nonce is the node's count of the account's transactions, those waiting in its pool included
 * (`eth_getTransactionCount` at `pending`), read under the account's lock, which is held until the transaction has been
 * handed over: two writers of one key (the anchorer's and the publisher's may be the same) never sign two transactions of
 * one nonce. A transaction stored and never handed over (a crash between) leaves its nonce to the next one; its sender
 * learns it when its rebroadcast is answered "nonce too low", and signs anew.
 */
import {
  createPublicClient,
  createWalletClient,
  http,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { keccak256, TransactionReceiptNotFoundError } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { shortMessageOf } from "./short-message";

/** A transaction signed, and the hash it will be known by. */
export type SignedTransaction = { txHash: Hex; rawTx: Hex; nonce: number };

/** An account's transactions, one at a time. */
export type TxSigner = {
  address: Address;
  publicClient: PublicClient<Transport, Chain | undefined>;
  /**
   * Signs a call of `to` with `data` at the account's next nonce (gas estimated by the node: a call that reverts throws
   * here, nothing signed), hands it to `record`, which stores it before it leaves (false: it was not stored, nothing is
   * sent), then sends it.
   * @returns the transaction, and whether it was sent (`record` stored it)
   */
  send(
    call: { to: Address; data: Hex },
    record: (tx: SignedTransaction) => Promise<boolean>,
  ): Promise<SignedTransaction & { sent: boolean }>;
};

/** One lock per account: whatever holds an account's lock is the only one signing and sending for it in this process. */
export type AccountLocks = { run<T>(account: Address, work: () => Promise<T>): Promise<T> };

/**
 * The account locks of a process: the composition root makes one and hands it to every signer, so one key configured
 * twice (anchoring and publishing) signs one transaction at a time.
 * @example const locks = createAccountLocks(); await locks.run(address, async () => sign());
 */
export function createAccountLocks(): AccountLocks {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run(account, work) {
      const key = account.toLowerCase();
      const run = (tails.get(key) ?? Promise.resolve()).then(work);
      const tail = run.catch(() => undefined);
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return run;
    },
  };
}

/**
 * A signer over a wallet client with a local account and the public client of its chain, under `locks` (the process's,
 * shared with every other signer of the account; a lock of its own otherwise).
 * @example const signer = createTxSigner({ walletClient, publicClient }, locks);
 */
export function createTxSigner(
  clients: { walletClient: WalletClient<Transport, Chain | undefined, Account>; publicClient: PublicClient<Transport, Chain | undefined> },
  locks: AccountLocks = createAccountLocks(),
): TxSigner {
  const { walletClient, publicClient } = clients;
  const account = walletClient.account;
  return {
    address: account.address,
    publicClient,
    send: (call, record) =>
      locks.run(account.address, async () => {
        const request = await walletClient.prepareTransactionRequest({ account, chain: null, to: call.to, data: call.data });
        const rawTx = await walletClient.signTransaction({ ...request, account, chain: null });
        const signed: SignedTransaction = { txHash: keccak256(rawTx), rawTx, nonce: request.nonce };
        if (!(await record(signed))) return { ...signed, sent: false };
        await publicClient.sendRawTransaction({ serializedTransaction: rawTx });
        return { ...signed, sent: true };
      }),
  };
}

/** How long one JSON-RPC request may take by default (viem's), before its retries. */
export const DEFAULT_RPC_TIMEOUT_MS = 10_000;

/**
 * A signer for `privateKey` over HTTP JSON-RPC at `rpcUrl`, under `locks`; each request times out after `timeoutMs`
 * (default `DEFAULT_RPC_TIMEOUT_MS`) and is retried 3 times (viem's) before the call fails.
 * @example const signer = createKeySigner({ privateKey: "0x…", rpcUrl: "http://127.0.0.1:8545" }, locks);
 */
export function createKeySigner(options: { privateKey: Hex; rpcUrl: string; timeoutMs?: number }, locks?: AccountLocks): TxSigner {
  const transport = http(options.rpcUrl, { timeout: options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS });
  return createTxSigner(
    {
      walletClient: createWalletClient({ transport, account: privateKeyToAccount(options.privateKey) }),
      publicClient: createPublicClient({ transport }),
    },
    locks,
  );
}

/**
 * Where a transaction stored before it was sent stands: `mined` (successful) or `reverted` in a block; else rebroadcast
 * as it is (same nonce, so it can never be mined twice) and `pending` in the pool, or `lost` when the node answers that
 * its nonce is used: another transaction of the account took it, so it will never be mined. `refusal` is the node's
 * answer to a rebroadcast it refused (one "already known" stays pending).
 */
export async function resumeStoredTx(
  client: PublicClient<Transport, Chain | undefined>,
  tx: { txHash: Hex; rawTx: Hex },
): Promise<{ state: "mined" | "reverted" | "pending" | "lost"; refusal?: string }> {
  const receipt = await client.getTransactionReceipt({ hash: tx.txHash }).catch((error: unknown) => {
    if (error instanceof TransactionReceiptNotFoundError) return null;
    throw error;
  });
  if (receipt) return { state: receipt.status === "success" ? "mined" : "reverted" };
  return client.sendRawTransaction({ serializedTransaction: tx.rawTx }).then(
    () => ({ state: "pending" as const }),
    (error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      const lost = /nonce too low|nonce has already been used/i.test(message);
      return { state: lost ? ("lost" as const) : ("pending" as const), refusal: shortMessageOf(error) };
    },
  );
}
