/**
 * The first step of a verification that starts from an ERC-8004 Reputation Registry (issue #27): the latest `vraiScore`
 * feedback a publisher (Vrai's account, as the verifier knows it) gave an identity token and has not revoked, read from
 * the registry's storage; its `NewFeedback` (the feedbackURI and feedbackHash, which the registry does not store); the
 * file fetched from that URI, its keccak256 checked against the hash, and its fields against what the chain says.
 * What the file names (a Vrai agent's daily score of a day) is then verified as any daily score (src/sdk/verify.ts).
 */
import { createPublicClient, http, isAddressEqual, keccak256, type Address, type Hex } from "viem";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { caip10, parseFeedbackFile, VRAI_SCORE_TAG, type FeedbackFile } from "../chain/feedback-file";
import { latestStandingFeedback, newFeedbackLogs } from "../chain/reputation-registry";
import { shortMessageOf } from "../chain/short-message";

/** Where to start: an agent's ERC-8004 identity, the reputation registry, and the publisher whose feedback is Vrai's. */
export type Erc8004Start = {
  identityRegistry: Address;
  tokenId: bigint;
  reputationRegistry: Address;
  /** Vrai's publisher account: only its feedback is read (anyone may give feedback; only Vrai's is Vrai's score). */
  publisher: Address;
  /** JSON-RPC of the registries' chain. */
  rpcUrl: string;
  /** The identity's chain, when the verifier names it: the RPC must serve it. */
  chainId?: number;
  /** Where the search for the feedback's NewFeedback starts (default: block 0; an RPC that limits log ranges needs more). */
  fromBlock?: bigint;
};

/** The feedback found, as the registry and its file say it. */
export type FoundFeedback = {
  chainId: number;
  reputationRegistry: Address;
  feedbackIndex: bigint;
  value: bigint;
  valueDecimals: number;
  tag2: string;
  feedbackURI: string;
  feedbackHash: Hex;
  txHash: Hex;
  blockNumber: bigint;
  file: FeedbackFile;
};

/** The step's checks, and the feedback when it held (else the verification stops there). */
export type FeedbackLookup = { found: FoundFeedback | null; checks: Array<{ ok: boolean; message: string }> };

/**
 * Finds and checks Vrai's latest `vraiScore` feedback about `start`'s token. Never throws for what it finds.
 * @example
 * const { found, checks } = await readVraiFeedback({ identityRegistry, tokenId: 0n, reputationRegistry, publisher, rpcUrl }, fetch);
 */
export async function readVraiFeedback(start: Erc8004Start, doFetch: typeof fetch): Promise<FeedbackLookup> {
  const checks: FeedbackLookup["checks"] = [];
  const fail = (message: string): FeedbackLookup => {
    checks.push({ ok: false, message });
    return { found: null, checks };
  };
  const client = createPublicClient({ transport: http(start.rpcUrl, { retryCount: 0 }) });
  const about = `token ${start.tokenId} of ${start.identityRegistry}`;
  let chainId: number;
  let identityRegistry: Address;
  try {
    chainId = await client.getChainId();
    identityRegistry = await client.readContract({
      address: start.reputationRegistry,
      abi: reputationRegistryAbi,
      functionName: "getIdentityRegistry",
    });
  } catch (error) {
    return fail(`reputation registry ${start.reputationRegistry} unreadable at ${start.rpcUrl}: ${shortMessageOf(error)}`);
  }
  if (start.chainId !== undefined && start.chainId !== chainId)
    return fail(`the identity is on chain ${start.chainId}, the RPC ${start.rpcUrl} serves chain ${chainId}`);
  if (!isAddressEqual(identityRegistry, start.identityRegistry))
    return fail(
      `reputation registry ${start.reputationRegistry} keeps feedback about the agents of ${identityRegistry}, ` +
        `not of ${start.identityRegistry}`,
    );
  const of = { agentId: start.tokenId, client: start.publisher };
  const standing = await latestStandingFeedback(client, start.reputationRegistry, { ...of, tag1: VRAI_SCORE_TAG });
  if (!standing) return fail(`no ${VRAI_SCORE_TAG} feedback by ${start.publisher} about ${about} stands (none given, or all revoked)`);
  const log = (await newFeedbackLogs(client, start.reputationRegistry, { ...of, fromBlock: start.fromBlock })).find(
    (l) => l.feedbackIndex === standing.feedbackIndex,
  );
  if (!log)
    return fail(
      `feedback ${standing.feedbackIndex} of ${start.publisher} about ${about} has no NewFeedback log from block ${start.fromBlock ?? 0n}`,
    );

  let bytes: Uint8Array;
  try {
    const response = await doFetch(log.feedbackURI);
    if (!response.ok) return fail(`feedback file ${log.feedbackURI} answered ${response.status}`);
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    return fail(`feedback file ${log.feedbackURI} unreachable: ${(error as Error).message}`);
  }
  const hash = keccak256(bytes);
  if (hash !== log.feedbackHash.toLowerCase())
    return fail(`feedback file altered: ${log.feedbackURI} hashes to ${hash}, the feedbackHash given on chain is ${log.feedbackHash}`);
  let file: FeedbackFile;
  try {
    file = parseFeedbackFile(bytes);
  } catch (error) {
    return fail(`feedback file ${log.feedbackURI}: ${(error as Error).message}`);
  }
  const differing = [
    ["agentRegistry", file.agentRegistry, caip10(chainId, start.identityRegistry)],
    ["agentId", String(file.agentId), start.tokenId.toString()],
    ["clientAddress", file.clientAddress, caip10(chainId, start.publisher)],
    ["value", String(file.value), standing.value.toString()],
    ["valueDecimals", String(file.valueDecimals), String(standing.valueDecimals)],
    ["tag1", file.tag1, standing.tag1],
    ["tag2", file.tag2, standing.tag2],
  ].filter(([, inFile, onChain]) => inFile.toLowerCase() !== onChain.toLowerCase());
  if (differing.length > 0)
    return fail(`feedback file: ${differing.map(([field, inFile, onChain]) => `${field} ${inFile} (on chain: ${onChain})`).join(", ")}`);
  checks.push({
    ok: true,
    message:
      `feedback ${standing.feedbackIndex} by ${start.publisher} about ${about}: ` +
      `${VRAI_SCORE_TAG} ${standing.value} (method ${standing.tag2}), ` +
      `agent ${file.vraiAgentId}'s daily score of ${file.day}; its file's keccak256 is the feedbackHash given on chain`,
  });
  return {
    found: {
      chainId,
      reputationRegistry: start.reputationRegistry,
      feedbackIndex: standing.feedbackIndex,
      value: standing.value,
      valueDecimals: standing.valueDecimals,
      tag2: standing.tag2,
      feedbackURI: log.feedbackURI,
      feedbackHash: log.feedbackHash,
      txHash: log.txHash,
      blockNumber: log.blockNumber,
      file,
    },
    checks,
  };
}
