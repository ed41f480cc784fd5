import { expect } from "chai";
import { encodeAbiParameters, getAbiItem, getAddress, pad, parseAbiParameters, toEventSelector, toHex, type Address, type Hex } from "viem";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { registryAbi } from "../chain/abi/registry";
import { decodeChainEvent, FOLLOWED_TOPICS, type FollowedContracts } from "./events";
import type { RawLog } from "./rpc";

const CONTRACTS: FollowedContracts = {
  registry: "0x00000000000000000000000000000000000000Aa",
  anchorRegistry: "0x00000000000000000000000000000000000000bB",
  identityRegistry: "0x00000000000000000000000000000000000000cc",
};
const TX: Hex = `0x${"ab".repeat(32)}`;
const AT = { blockNumber: 7, logIndex: 2, txHash: TX };
const SUBMITTER: Address = "0x1111111111111111111111111111111111111111";
const OWNER: Address = "0x2222222222222222222222222222222222222222";
const word = (n: bigint | number): Hex => pad(toHex(n));
const bytes32 = (n: number): Hex => pad(toHex(n), { size: 32 });
const selector = {
  ProofSubmitted: toEventSelector(getAbiItem({ abi: registryAbi, name: "ProofSubmitted" })),
  OrderSettled: toEventSelector(getAbiItem({ abi: registryAbi, name: "OrderSettled" })),
  NetworkScoreAdjusted: toEventSelector(getAbiItem({ abi: registryAbi, name: "NetworkScoreAdjusted" })),
  Anchored: toEventSelector(getAbiItem({ abi: anchorRegistryAbi, name: "Anchored" })),
  RootAnchored: toEventSelector(getAbiItem({ abi: anchorRegistryAbi, name: "RootAnchored" })),
  Transfer: toEventSelector(getAbiItem({ abi: identityRegistryAbi, name: "Transfer" })),
  URIUpdated: toEventSelector(getAbiItem({ abi: identityRegistryAbi, name: "URIUpdated" })),
};
const logOf = (address: Address, topics: Hex[], data: Hex = "0x"): RawLog => ({
  address,
  topics,
  data,
  blockNumber: toHex(AT.blockNumber),
  blockHash: bytes32(99),
  transactionHash: TX,
  logIndex: toHex(AT.logIndex),
});
const proofLog = (success: boolean, riskLevel: number, policyViolations: number) =>
  logOf(
    CONTRACTS.registry,
    [selector.ProofSubmitted, word(5n), pad(SUBMITTER), bytes32(1)],
    encodeAbiParameters(parseAbiParameters("bool, uint8, uint32"), [success, riskLevel, policyViolations]),
  );

describe("chain events: logs of the followed contracts decoded", () => {
  it("asks eth_getLogs for the seven followed topics", () => {
    expect(FOLLOWED_TOPICS).to.deep.equal(Object.values(selector));
  });

  it("decodes a ProofSubmitted record, its three data words read directly", () => {
    expect(decodeChainEvent(proofLog(true, 2, 3), CONTRACTS)).to.deep.equal({
      ...AT,
      type: "proof",
      agentId: 5n,
      submitter: SUBMITTER,
      traceRoot: bytes32(1),
      success: true,
      riskLevel: "high",
      policyViolations: 3,
    });
    expect(decodeChainEvent(proofLog(false, 3, 0), CONTRACTS)).to.include({ success: false, riskLevel: "critical", policyViolations: 0 });
  });

  it("decodes a settlement (verdict NONE as LEGACY, METHOD part N) and its score adjustment", () => {
    const settled = (verdict: number) =>
      logOf(
        CONTRACTS.registry,
        [selector.OrderSettled, bytes32(10), word(5n), word(6n)],
        encodeAbiParameters(parseAbiParameters("bytes32, uint8, bytes32"), [bytes32(11), verdict, bytes32(12)]),
      );
    expect(decodeChainEvent(settled(1), CONTRACTS)).to.deep.equal({
      ...AT,
      type: "settlement",
      orderId: bytes32(10),
      executorId: 5n,
      requesterId: 6n,
      verdict: "FULFILLED",
    });
    expect(decodeChainEvent(settled(0), CONTRACTS)).to.include({ verdict: "LEGACY" });
    expect(decodeChainEvent(settled(3), CONTRACTS)).to.include({ verdict: "VIOLATED" });
    const adjusted = logOf(
      CONTRACTS.registry,
      [selector.NetworkScoreAdjusted, word(6n), bytes32(10)],
      encodeAbiParameters(parseAbiParameters("bytes32, uint8, int16, uint16"), [bytes32(13), 1, -10, 40]),
    );
    expect(decodeChainEvent(adjusted, CONTRACTS)).to.deep.equal({
      ...AT,
      type: "scoreAdjusted",
      agentId: 6n,
      orderId: bytes32(10),
      party: "requester",
      delta: -10,
      score: 40,
    });
  });

  it("decodes anchors of a digest and of a tree root, with the anchoring account's role", () => {
    const anchored = logOf(
      CONTRACTS.anchorRegistry,
      [selector.Anchored, bytes32(20)],
      encodeAbiParameters(parseAbiParameters("bytes32, uint8"), [bytes32(21), 1]),
    );
    expect(decodeChainEvent(anchored, CONTRACTS)).to.deep.equal({
      ...AT,
      type: "anchor",
      digest: bytes32(20),
      kind: bytes32(21),
      isRoot: false,
      leafCount: null,
      role: "verifier",
    });
    const root = logOf(
      CONTRACTS.anchorRegistry,
      [selector.RootAnchored, bytes32(22)],
      encodeAbiParameters(parseAbiParameters("bytes32, uint64, uint8"), [bytes32(21), 1_000n, 0]),
    );
    expect(decodeChainEvent(root, CONTRACTS)).to.deep.equal({
      ...AT,
      type: "anchor",
      digest: bytes32(22),
      kind: bytes32(21),
      isRoot: true,
      leafCount: 1_000,
      role: "anchorer",
    });
  });

  it("decodes an identity token transfer, naming its registry", () => {
    const moved = logOf(CONTRACTS.identityRegistry, [selector.Transfer, pad(OWNER), pad(SUBMITTER), word(5n)]);
    expect(decodeChainEvent(moved, CONTRACTS)).to.deep.equal({
      ...AT,
      type: "transfer",
      registry: getAddress(CONTRACTS.identityRegistry),
      from: OWNER,
      to: SUBMITTER,
      agentId: 5n,
    });
  });

  it("decodes a transfer of another followed identity registry (V6: it backs a proof), and ignores one of a registry not followed", () => {
    const other: Address = "0x00000000000000000000000000000000000000Dd";
    const moved = logOf(other, [selector.Transfer, pad(OWNER), pad(SUBMITTER), word(6n)]);
    expect(decodeChainEvent(moved, CONTRACTS)).to.equal(null);
    const following = { ...CONTRACTS, otherIdentityRegistries: new Set([other.toLowerCase()]) };
    expect(decodeChainEvent(moved, following)).to.deep.equal({
      ...AT,
      type: "transfer",
      registry: getAddress(other),
      from: OWNER,
      to: SUBMITTER,
      agentId: 6n,
    });
  });

  it("decodes an agentURI change (ERC-8004 URIUpdated) of a followed identity registry, naming its registry (issue #27)", () => {
    const data = encodeAbiParameters(parseAbiParameters("string"), ["https://agent.example.org/registration.json"]);
    const updated = logOf(CONTRACTS.identityRegistry, [selector.URIUpdated, word(5n), pad(OWNER)], data);
    expect(decodeChainEvent(updated, CONTRACTS)).to.deep.equal({
      ...AT,
      type: "uriUpdated",
      registry: getAddress(CONTRACTS.identityRegistry),
      agentId: 5n,
      uri: "https://agent.example.org/registration.json",
    });
    const other: Address = "0x00000000000000000000000000000000000000Dd";
    expect(decodeChainEvent({ ...updated, address: other }, CONTRACTS)).to.equal(null);
    expect(decodeChainEvent({ ...updated, address: CONTRACTS.registry }, CONTRACTS)).to.equal(null);
  });

  it("ignores a followed topic from a contract that does not define it, an unknown topic, and a log without topics", () => {
    expect(decodeChainEvent({ ...proofLog(true, 0, 0), address: CONTRACTS.anchorRegistry }, CONTRACTS)).to.equal(null);
    expect(decodeChainEvent(logOf(CONTRACTS.registry, [bytes32(404)]), CONTRACTS)).to.equal(null);
    expect(decodeChainEvent(logOf(CONTRACTS.registry, []), CONTRACTS)).to.equal(null);
  });
});
