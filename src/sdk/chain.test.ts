import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import {
  BaseError as ViemBaseError,
  ContractFunctionRevertedError,
  decodeEventLog,
  getAddress,
  keccak256,
  stringToHex,
  type Address,
} from "viem";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { executorId } from "../method";
import { startTestChain, type TestChain } from "../test-helpers/chain";
import { readDeployment, readNetworkScore, registryAbi, registryAddressOf, submitProof } from "./chain";
import { deriveScore } from "./derive";

describe("SDK submitProof and readNetworkScore on the in-process chain", () => {
  let chain: TestChain;
  let identity: Address;
  let registry: Address;
  const owner = () => chain.walletClients[1];
  const stranger = () => chain.walletClients[2];
  const platform = () => chain.walletClients[3];

  before(async () => {
    chain = await startTestChain();
    identity = (await chain.deployContract("AgentIdentity")).address;
    registry = (await chain.deployContract("Registry", [chain.accounts[0].address, identity])).address;
    const role = await chain.publicClient.readContract({ address: registry, abi: registryAbi, functionName: "PLATFORM_ROLE" });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({
        address: registry,
        abi: registryAbi,
        functionName: "grantRole",
        args: [role, chain.accounts[3].address],
      }),
    });
    for (const uri of ["ipfs://executor", "ipfs://requester"]) {
      await chain.publicClient.waitForTransactionReceipt({
        hash: await owner().writeContract({ address: identity, abi: identityRegistryAbi, functionName: "register", args: [uri] }),
      });
    }
  });
  after(() => chain.close());

  it("submits a proof record that the Registry emits as ProofSubmitted, and derives the agent's score from it", async () => {
    const traceRoot = keccak256(stringToHex("trace of task 1"));
    const proof = await submitProof(
      { wallet: owner(), publicClient: chain.publicClient },
      { registry, agentId: 0n, success: true, riskLevel: "high", policyViolations: 0, traceRoot },
    );
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: proof.txHash });
    expect(Number(receipt.blockNumber)).to.equal(proof.blockNumber);
    const log = receipt.logs.find((l) => l.logIndex === proof.logIndex)!;
    const event = decodeEventLog({ abi: registryAbi, data: log.data, topics: log.topics });
    expect(event.eventName).to.equal("ProofSubmitted");
    expect(event.args).to.deep.include({
      agentId: 0n,
      submitter: chain.accounts[1].address,
      traceRoot,
      success: true,
      riskLevel: 2,
      policyViolations: 0,
    });

    const executor = executorId(chain.chain.id, identity, 0n);
    const derived = deriveScore([
      { ...proof, executor, success: true, riskLevel: "high", policyViolations: 0, verified: false, traceRoot, source: "onchain" },
    ]);
    expect(derived[executor]).to.include({ scoreType: "sdk-derived", total: 1, score: 55, cap: 55 });
    expect(derived[executor].flags).to.deep.equal(["NO_VERIFIED_PROOFS"]);
  });

  it("throws the Registry's revert for a sender that does not control the agent, before sending", async () => {
    const error = await submitProof(
      { wallet: stranger(), publicClient: chain.publicClient },
      {
        registry,
        agentId: 0n,
        success: true,
        riskLevel: "low",
        policyViolations: 0,
        traceRoot: keccak256(stringToHex("x")),
      },
    ).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ViemBaseError);
    const revert = (error as ViemBaseError).walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError;
    expect(revert.data?.errorName).to.equal("RegistryNotAgentController");
    expect(revert.data?.args).to.deep.equal([chain.accounts[2].address, 0n]);
  });

  it("refuses a risk level outside A1 without sending anything", async () => {
    const before = await chain.publicClient.getTransactionCount({ address: chain.accounts[1].address });
    const error = await submitProof(
      { wallet: owner(), publicClient: chain.publicClient },
      {
        registry,
        agentId: 0n,
        success: true,
        riskLevel: "extreme" as "low",
        policyViolations: 0,
        traceRoot: keccak256(stringToHex("x")),
      },
    ).catch((e: unknown) => e);
    expect((error as Error).message).to.contain("riskLevel");
    expect(await chain.publicClient.getTransactionCount({ address: chain.accounts[1].address })).to.equal(before);
  });

  it("reads the network score in tenths and as a value, 0 before any settlement", async () => {
    expect(await readNetworkScore(chain.publicClient, registry, 0n)).to.deep.equal({
      scoreType: "platform-network",
      score: 0,
      value: 0,
      settlements: 0,
      lastSettledAt: 0,
    });
    const hash = await platform().writeContract({
      address: registry,
      abi: registryAbi,
      functionName: "settle",
      args: [keccak256(stringToHex("order 1")), 0n, 1n, keccak256(stringToHex("intent")), 1, keccak256(stringToHex("completion"))],
    });
    const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
    const block = await chain.publicClient.getBlock({ blockNumber: receipt.blockNumber });
    // Part N: FULFILLED gives the executor +30 and the requester +15 tenths.
    expect(await readNetworkScore(chain.publicClient, registry, 0n)).to.deep.equal({
      scoreType: "platform-network",
      score: 30,
      value: 3,
      settlements: 1,
      lastSettledAt: Number(block.timestamp),
    });
    expect(await readNetworkScore(chain.publicClient, registry, 1n)).to.include({ score: 15, value: 1.5, settlements: 1 });
  });

  it("reads the Registry address from a deployment file", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-sdk-"));
    try {
      const file = path.join(dir, "localhost.json");
      const lower = registry.toLowerCase();
      fs.writeFileSync(
        file,
        JSON.stringify({
          network: "localhost",
          chainId: 31337,
          contracts: { IdentityRegistry: { address: identity }, AnchorRegistry: { address: identity }, Registry: { address: lower } },
        }),
      );
      expect(registryAddressOf(readDeployment(file))).to.equal(getAddress(registry));
      fs.writeFileSync(file, JSON.stringify({ contracts: {} }));
      expect(() => readDeployment(file)).to.throw("contracts.Registry.address is not an address");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
