/**
 * The chain events the indexer follows, decoded from raw logs into a discriminated union: `Registry` proof records
 * and settlements, `AnchorRegistry` anchors, and the identity registry's ERC-721 `Transfer`s.
 */
import { decodeEventLog, getAbiItem, toEventSelector, type AbiEvent, type Address, type Hex } from "viem";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { registryAbi } from "../chain/abi/registry";
import { RISK_LEVELS, type Verdict } from "../method";
import type { ChainEvent, LogPosition } from "../store/chain-store";
import type { RawLog } from "./rpc";

/** The contracts whose logs are read, from the deployment file. */
export type FollowedContracts = { registry: Address; anchorRegistry: Address; identityRegistry: Address };

// IRegistry.Verdict: NONE is a legacy order settled without an Intent (METHOD part N).
const VERDICTS: readonly Verdict[] = ["LEGACY", "FULFILLED", "PARTIAL", "VIOLATED"];
// IAnchorRegistry.AnchorRole.
const ANCHOR_ROLES = ["anchorer", "verifier"] as const;

const event = (abi: readonly unknown[], name: string) => getAbiItem({ abi: abi as never, name: name as never }) as unknown as AbiEvent;
const EVENTS: Record<"ProofSubmitted" | "OrderSettled" | "NetworkScoreAdjusted" | "Anchored" | "RootAnchored" | "Transfer", AbiEvent> = {
  ProofSubmitted: event(registryAbi, "ProofSubmitted"),
  OrderSettled: event(registryAbi, "OrderSettled"),
  NetworkScoreAdjusted: event(registryAbi, "NetworkScoreAdjusted"),
  Anchored: event(anchorRegistryAbi, "Anchored"),
  RootAnchored: event(anchorRegistryAbi, "RootAnchored"),
  Transfer: event(identityRegistryAbi, "Transfer"),
};
const SELECTORS = Object.fromEntries(Object.entries(EVENTS).map(([name, e]) => [name, toEventSelector(e)])) as Record<keyof typeof EVENTS, Hex>;

/** Every topic0 the indexer asks `eth_getLogs` for. */
export const FOLLOWED_TOPICS: readonly Hex[] = Object.values(SELECTORS);

/**
 * Decodes one log, or returns null for a log of no interest (an unknown topic, or a followed topic emitted by a
 * contract other than the one that defines it).
 */
export function decodeChainEvent(log: RawLog, contracts: FollowedContracts): ChainEvent | null {
  const topic0 = log.topics[0];
  const address = log.address.toLowerCase();
  const position: LogPosition = { blockNumber: Number(log.blockNumber), logIndex: Number(log.logIndex), txHash: log.transactionHash };
  const decode = (name: keyof typeof EVENTS) =>
    decodeEventLog({ abi: [EVENTS[name]], data: log.data, topics: log.topics as [Hex, ...Hex[]], strict: true }).args as unknown as Record<string, unknown>;
  if (address === contracts.registry.toLowerCase()) {
    if (topic0 === SELECTORS.ProofSubmitted && log.topics.length === 4 && log.data.length === 2 + 3 * 64) {
      // The hot path (100,000s of records in a backfill): three static words, read directly instead of through
      // the ABI decoder, which costs ~20 times more; any other shape goes through the decoder and its checks.
      const word = (i: number) => Number.parseInt(log.data.slice(2 + 64 * i, 2 + 64 * (i + 1)), 16);
      const success = word(0), risk = word(1), violations = word(2);
      if (success <= 1 && risk < RISK_LEVELS.length && violations <= 0xffffffff) {
        return {
          ...position, type: "proof", agentId: BigInt(log.topics[1]), submitter: `0x${log.topics[2].slice(26)}` as Address, traceRoot: log.topics[3],
          success: success === 1, riskLevel: RISK_LEVELS[risk], policyViolations: violations,
        };
      }
    }
    if (topic0 === SELECTORS.ProofSubmitted) {
      const a = decode("ProofSubmitted");
      return {
        ...position, type: "proof", agentId: a.agentId as bigint, submitter: a.submitter as Address, traceRoot: a.traceRoot as Hex,
        success: a.success as boolean, riskLevel: RISK_LEVELS[a.riskLevel as number], policyViolations: a.policyViolations as number,
      };
    }
    if (topic0 === SELECTORS.OrderSettled) {
      const a = decode("OrderSettled");
      return {
        ...position, type: "settlement", orderId: a.orderId as Hex, executorId: a.executorId as bigint, requesterId: a.requesterId as bigint,
        verdict: VERDICTS[a.verdict as number],
      };
    }
    if (topic0 === SELECTORS.NetworkScoreAdjusted) {
      const a = decode("NetworkScoreAdjusted");
      return {
        ...position, type: "scoreAdjusted", agentId: a.agentId as bigint, orderId: a.orderId as Hex, party: a.party === 0 ? "executor" : "requester",
        delta: a.delta as number, score: a.score as number,
      };
    }
  }
  if (address === contracts.anchorRegistry.toLowerCase()) {
    if (topic0 === SELECTORS.Anchored) {
      const a = decode("Anchored");
      return { ...position, type: "anchor", digest: a.digest as Hex, kind: a.kind as Hex, isRoot: false, leafCount: null, role: ANCHOR_ROLES[a.role as number] };
    }
    if (topic0 === SELECTORS.RootAnchored) {
      const a = decode("RootAnchored");
      return {
        ...position, type: "anchor", digest: a.root as Hex, kind: a.kind as Hex, isRoot: true, leafCount: Number(a.leafCount as bigint),
        role: ANCHOR_ROLES[a.role as number],
      };
    }
  }
  if (address === contracts.identityRegistry.toLowerCase() && topic0 === SELECTORS.Transfer) {
    const a = decode("Transfer");
    return { ...position, type: "transfer", from: a.from as Address, to: a.to as Address, agentId: a.tokenId as bigint };
  }
  return null;
}
