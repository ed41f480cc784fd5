/**
 * An ERC-8004 Reputation Registry as Vrai uses it: the account that gives feedback (a signer and the registry), and the
 * reads that find a client's feedback on chain: the `NewFeedback` logs (the only place its URI and hash are kept, the
 * standard stores neither) and the latest feedback of a tag that stands (not revoked).
 */
import { getAddress, type Address, type Chain, type Hex, type PublicClient, type Transport } from "viem";
import { reputationRegistryAbi } from "./abi/reputationRegistry";
import { createKeySigner, type AccountLocks, type TxSigner } from "./signer";

/** The account that gives Vrai's feedback, and the registry it gives it to. */
export type FeedbackWriter = {
  publicClient: PublicClient<Transport, Chain | undefined>;
  /** The publisher's account: its transactions one at a time, with every other writer of the same key. */
  signer: TxSigner;
  /** The reputation registry's address. */
  registry: Address;
};

/**
 * A writer signing with `privateKey` over HTTP JSON-RPC at `rpcUrl`, giving feedback to the reputation registry at
 * `registry`; `locks` are the process's account locks, shared with any other writer of the same key.
 * @example
 * createFeedbackWriter({ privateKey: "0x…", rpcUrl: "http://127.0.0.1:8545", registry: "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63" })
 */
export function createFeedbackWriter(
  options: { privateKey: Hex; rpcUrl: string; registry: Address },
  locks?: AccountLocks,
): FeedbackWriter {
  const signer = createKeySigner(options, locks);
  return { publicClient: signer.publicClient, signer, registry: getAddress(options.registry) };
}

/** A feedback given, as its `NewFeedback` log says it. */
export type GivenFeedback = {
  agentId: bigint;
  client: Address;
  feedbackIndex: bigint;
  value: bigint;
  valueDecimals: number;
  tag1: string;
  tag2: string;
  endpoint: string;
  feedbackURI: string;
  feedbackHash: Hex;
  blockNumber: bigint;
  txHash: Hex;
};

/**
 * Every feedback `client` gave token `agentId` in `registry` from block `fromBlock` (default 0) to the head, oldest
 * first, from the registry's mined `NewFeedback` logs (an RPC that limits log ranges needs a recent `fromBlock`).
 * @example const given = await newFeedbackLogs(publicClient, registry, { agentId: 0n, client: publisher });
 */
export async function newFeedbackLogs(
  client: PublicClient<Transport, Chain | undefined>,
  registry: Address,
  filter: { agentId: bigint; client: Address; fromBlock?: bigint },
): Promise<GivenFeedback[]> {
  const logs = await client.getContractEvents({
    address: registry,
    abi: reputationRegistryAbi,
    eventName: "NewFeedback",
    args: { agentId: filter.agentId, clientAddress: filter.client },
    fromBlock: filter.fromBlock ?? 0n,
    toBlock: "latest",
    strict: true,
  });
  return logs.flatMap((log) =>
    log.blockNumber === null || log.transactionHash === null
      ? []
      : [
          {
            agentId: log.args.agentId,
            client: log.args.clientAddress,
            feedbackIndex: log.args.feedbackIndex,
            value: log.args.value,
            valueDecimals: log.args.valueDecimals,
            tag1: log.args.tag1,
            tag2: log.args.tag2,
            endpoint: log.args.endpoint,
            feedbackURI: log.args.feedbackURI,
            feedbackHash: log.args.feedbackHash,
            blockNumber: log.blockNumber,
            txHash: log.transactionHash,
          },
        ],
  );
}

/** A feedback as the registry keeps it (`readFeedback`), with its index. */
export type StoredFeedback = {
  feedbackIndex: bigint;
  value: bigint;
  valueDecimals: number;
  tag1: string;
  tag2: string;
  isRevoked: boolean;
};

/** `readFeedback(agentId, client, feedbackIndex)` of `registry`. */
export async function readFeedback(
  client: PublicClient<Transport, Chain | undefined>,
  registry: Address,
  at: { agentId: bigint; client: Address; feedbackIndex: bigint },
): Promise<StoredFeedback> {
  const [value, valueDecimals, tag1, tag2, isRevoked] = await client.readContract({
    address: registry,
    abi: reputationRegistryAbi,
    functionName: "readFeedback",
    args: [at.agentId, at.client, at.feedbackIndex],
  });
  return { feedbackIndex: at.feedbackIndex, value, valueDecimals, tag1, tag2, isRevoked };
}

/**
 * The latest feedback of `tag1` that `client` gave token `agentId` and has not revoked, read from the registry's storage
 * newest first; null when there is none.
 * @example const latest = await latestStandingFeedback(publicClient, registry, { agentId: 0n, client: publisher, tag1: "vraiScore" });
 */
export async function latestStandingFeedback(
  client: PublicClient<Transport, Chain | undefined>,
  registry: Address,
  of: { agentId: bigint; client: Address; tag1: string },
): Promise<StoredFeedback | null> {
  const last = await client.readContract({
    address: registry,
    abi: reputationRegistryAbi,
    functionName: "getLastIndex",
    args: [of.agentId, of.client],
  });
  for (let feedbackIndex = last; feedbackIndex >= 1n; feedbackIndex--) {
    const feedback = await readFeedback(client, registry, { agentId: of.agentId, client: of.client, feedbackIndex });
    if (!feedback.isRevoked && feedback.tag1 === of.tag1) return feedback;
  }
  return null;
}
