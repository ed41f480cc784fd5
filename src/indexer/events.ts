/**
 * The chain events the indexer follows, decoded from raw logs into a discriminated union: `Registry` proof records
 * and settlements, `AnchorRegistry` anchors, and the identity registry's ERC-721 `Transfer`s and ERC-8004 `URIUpdated`s.
 */
import { decodeEventLog, getAbiItem, getAddress, toEventSelector, type Address, type Hex } from "viem";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { registryAbi } from "../chain/abi/registry";
import { RISK_LEVELS, type Verdict } from "../method";
import type { ChainEvent, LogPosition } from "../store/chain-store";
import type { RawLog } from "./rpc";

/** The contracts whose logs are read: the deployment file's, and any other ERC-8004 identity registry whose transfers are followed. */
export type FollowedContracts = {
  registry: Address;
  anchorRegistry: Address;
  identityRegistry: Address;
  /** V6: the other identity registries of the chain that back an active ERC-8004 proof, lowercase. */
  otherIdentityRegistries?: ReadonlySet<string>;
};

// IRegistry.Verdict: NONE is a legacy order settled without an Intent (METHOD part N).
const VERDICTS: readonly Verdict[] = ["LEGACY", "FULFILLED", "PARTIAL", "VIOLATED"];
// IAnchorRegistry.AnchorRole.
const ANCHOR_ROLES = ["anchorer", "verifier"] as const;

// Typed from the generated ABIs, so the arguments each one decodes to are typed too.
const EVENTS = {
  ProofSubmitted: getAbiItem({ abi: registryAbi, name: "ProofSubmitted" }),
  OrderSettled: getAbiItem({ abi: registryAbi, name: "OrderSettled" }),
  NetworkScoreAdjusted: getAbiItem({ abi: registryAbi, name: "NetworkScoreAdjusted" }),
  Anchored: getAbiItem({ abi: anchorRegistryAbi, name: "Anchored" }),
  RootAnchored: getAbiItem({ abi: anchorRegistryAbi, name: "RootAnchored" }),
  Transfer: getAbiItem({ abi: identityRegistryAbi, name: "Transfer" }),
  URIUpdated: getAbiItem({ abi: identityRegistryAbi, name: "URIUpdated" }),
};
const SELECTORS = {
  ProofSubmitted: toEventSelector(EVENTS.ProofSubmitted),
  OrderSettled: toEventSelector(EVENTS.OrderSettled),
  NetworkScoreAdjusted: toEventSelector(EVENTS.NetworkScoreAdjusted),
  Anchored: toEventSelector(EVENTS.Anchored),
  RootAnchored: toEventSelector(EVENTS.RootAnchored),
  Transfer: toEventSelector(EVENTS.Transfer),
  URIUpdated: toEventSelector(EVENTS.URIUpdated),
};

/** Every topic0 the indexer asks `eth_getLogs` for. */
export const FOLLOWED_TOPICS: readonly Hex[] = Object.values(SELECTORS);

/**
 * Decodes one log, or returns null for a log of no interest (an unknown topic, or a followed topic emitted by a
 * contract other than the one that defines it).
 */
export function decodeChainEvent(log: RawLog, contracts: FollowedContracts): ChainEvent | null {
  const [topic0, ...argTopics] = log.topics;
  if (topic0 === undefined) return null;
  const address = log.address.toLowerCase();
  const position: LogPosition = { blockNumber: Number(log.blockNumber), logIndex: Number(log.logIndex), txHash: log.transactionHash };
  const { data } = log;
  const topics: [Hex, ...Hex[]] = [topic0, ...argTopics];
  if (address === contracts.registry.toLowerCase()) {
    if (topic0 === SELECTORS.ProofSubmitted && log.topics.length === 4 && log.data.length === 2 + 3 * 64) {
      // The hot path (100,000s of records in a backfill): three static words, read directly instead of through
      // the ABI decoder, which costs ~20 times more; any other shape goes through the decoder and its checks.
      const word = (i: number) => Number.parseInt(log.data.slice(2 + 64 * i, 2 + 64 * (i + 1)), 16);
      const success = word(0),
        risk = word(1),
        violations = word(2);
      if (success <= 1 && risk < RISK_LEVELS.length && violations <= 0xffffffff) {
        return {
          ...position,
          type: "proof",
          agentId: BigInt(log.topics[1]),
          submitter: `0x${log.topics[2].slice(26)}`,
          traceRoot: log.topics[3],
          success: success === 1,
          riskLevel: RISK_LEVELS[risk],
          policyViolations: violations,
        };
      }
    }
    if (topic0 === SELECTORS.ProofSubmitted) {
      const a = decodeEventLog({ abi: [EVENTS.ProofSubmitted], data, topics, strict: true }).args;
      return {
        ...position,
        type: "proof",
        agentId: a.agentId,
        submitter: a.submitter,
        traceRoot: a.traceRoot,
        success: a.success,
        riskLevel: RISK_LEVELS[a.riskLevel],
        policyViolations: a.policyViolations,
      };
    }
    if (topic0 === SELECTORS.OrderSettled) {
      const a = decodeEventLog({ abi: [EVENTS.OrderSettled], data, topics, strict: true }).args;
      return {
        ...position,
        type: "settlement",
        orderId: a.orderId,
        executorId: a.executorId,
        requesterId: a.requesterId,
        verdict: VERDICTS[a.verdict],
      };
    }
    if (topic0 === SELECTORS.NetworkScoreAdjusted) {
      const a = decodeEventLog({ abi: [EVENTS.NetworkScoreAdjusted], data, topics, strict: true }).args;
      return {
        ...position,
        type: "scoreAdjusted",
        agentId: a.agentId,
        orderId: a.orderId,
        party: a.party === 0 ? "executor" : "requester",
        delta: a.delta,
        score: a.score,
      };
    }
  }
  if (address === contracts.anchorRegistry.toLowerCase()) {
    if (topic0 === SELECTORS.Anchored) {
      const a = decodeEventLog({ abi: [EVENTS.Anchored], data, topics, strict: true }).args;
      return { ...position, type: "anchor", digest: a.digest, kind: a.kind, isRoot: false, leafCount: null, role: ANCHOR_ROLES[a.role] };
    }
    if (topic0 === SELECTORS.RootAnchored) {
      const a = decodeEventLog({ abi: [EVENTS.RootAnchored], data, topics, strict: true }).args;
      return {
        ...position,
        type: "anchor",
        digest: a.root,
        kind: a.kind,
        isRoot: true,
        leafCount: Number(a.leafCount),
        role: ANCHOR_ROLES[a.role],
      };
    }
  }
  const identityRegistry = address === contracts.identityRegistry.toLowerCase() || contracts.otherIdentityRegistries?.has(address);
  if (topic0 === SELECTORS.Transfer && identityRegistry) {
    const a = decodeEventLog({ abi: [EVENTS.Transfer], data, topics, strict: true }).args;
    return { ...position, type: "transfer", registry: getAddress(log.address), from: a.from, to: a.to, agentId: a.tokenId };
  }
  if (topic0 === SELECTORS.URIUpdated && identityRegistry) {
    const a = decodeEventLog({ abi: [EVENTS.URIUpdated], data, topics, strict: true }).args;
    return { ...position, type: "uriUpdated", registry: getAddress(log.address), agentId: a.agentId, uri: a.newURI };
  }
  return null;
}
