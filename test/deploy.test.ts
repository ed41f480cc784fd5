import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "./helpers/expect";
import hre, { ethers } from "hardhat";
import { DeployConfigError, DeploymentExistsError, deployOptionsFromEnv, deployVrai, type Deployment } from "../scripts/deploy";
import { getAddress } from "viem";
import { readDeployment, readFollowedDeployment } from "../src/chain/deployment";
import referenceReputation from "./fixtures/erc8004/ReputationRegistryUpgradeable.json";
import { deployReferenceIdentity, deployReferenceReputation } from "./helpers/erc8004Reference";

/** The error `promise` rejects with; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  expect.fail("expected a rejection");
}

/** Mines `count` blocks one by one (hardhat_mine's reserved blocks answer no code at past blocks). */
async function mineBlocks(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await hre.network.provider.send("evm_mine", []);
}

describe("scripts/deploy", () => {
  let outDir: string;
  beforeEach(() => {
    outDir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-deploy-"));
  });
  afterEach(() => {
    fs.rmSync(outDir, { recursive: true, force: true });
  });

  it("deploys the three contracts, grants every role to the deployer on a local network and writes the file", async () => {
    const [deployer] = await ethers.getSigners();
    const { deployment, file } = await deployVrai(hre, { outDir });
    expect(file).to.equal(path.join(outDir, "hardhat.json"));
    const written = JSON.parse(fs.readFileSync(file, "utf8")) as Deployment;
    expect(written).to.deep.equal(deployment);
    expect(written.network).to.equal("hardhat");
    expect(written.chainId).to.equal(31337);
    expect(Number.isNaN(Date.parse(written.deployedAt))).to.equal(false);
    for (const name of ["IdentityRegistry", "AnchorRegistry", "Registry"] as const) {
      const entry = written.contracts[name];
      const receipt = await ethers.provider.getTransactionReceipt(entry.txHash!);
      expect(receipt!.contractAddress, name).to.equal(entry.address);
      expect(receipt!.blockNumber, name).to.equal(entry.blockNumber);
      expect(entry.reused, name).to.equal(false);
    }
    expect(written.contracts.IdentityRegistry.contractName).to.equal("AgentIdentity");

    const anchors = await ethers.getContractAt("AnchorRegistry", written.contracts.AnchorRegistry.address);
    const registry = await ethers.getContractAt("Registry", written.contracts.Registry.address);
    expect(await anchors.hasRole(await anchors.ANCHORER_ROLE(), deployer.address)).to.equal(true);
    expect(await anchors.hasRole(await anchors.VERIFIER_ROLE(), deployer.address)).to.equal(true);
    expect(await anchors.hasRole(await anchors.DEFAULT_ADMIN_ROLE(), deployer.address)).to.equal(true);
    expect(await registry.hasRole(await registry.PLATFORM_ROLE(), deployer.address)).to.equal(true);
    expect(await registry.identityRegistry()).to.equal(written.contracts.IdentityRegistry.address);
    expect(written.roles).to.deep.equal({
      AnchorRegistry: { DEFAULT_ADMIN_ROLE: [deployer.address], ANCHORER_ROLE: [deployer.address], VERIFIER_ROLE: [deployer.address] },
      Registry: { DEFAULT_ADMIN_ROLE: [deployer.address], PLATFORM_ROLE: [deployer.address] },
    });
  });

  it("refuses to overwrite an existing deployment file, before sending any transaction", async () => {
    const { file } = await deployVrai(hre, { outDir });
    const before = fs.readFileSync(file, "utf8");
    const blockBefore = await ethers.provider.getBlockNumber();
    const error = await rejection(deployVrai(hre, { outDir }));
    expect(error).to.be.instanceOf(DeploymentExistsError);
    expect(error.message).to.include("DEPLOY_OVERWRITE=1");
    expect(await ethers.provider.getBlockNumber()).to.equal(blockBefore);
    expect(fs.readFileSync(file, "utf8")).to.equal(before);
  });

  it("overwrites when told to", async () => {
    const first = await deployVrai(hre, { outDir });
    const second = await deployVrai(hre, { outDir, overwrite: true });
    expect(second.deployment.contracts.Registry.address).to.not.equal(first.deployment.contracts.Registry.address);
    expect(JSON.parse(fs.readFileSync(second.file, "utf8")).contracts.Registry.address).to.equal(
      second.deployment.contracts.Registry.address,
    );
  });

  it("deploys the reference reputation registry behind its proxy for the identity registry on a local network", async () => {
    const { deployment, file } = await deployVrai(hre, { outDir });
    const reputation = deployment.contracts.ReputationRegistry!;
    expect(reputation.reused).to.equal(false);
    expect(reputation.contractName).to.equal("ReputationRegistryUpgradeable");
    const receipt = await ethers.provider.getTransactionReceipt(reputation.txHash!);
    expect(receipt!.contractAddress).to.equal(reputation.address);
    expect(receipt!.blockNumber).to.equal(reputation.blockNumber);
    const registry = await ethers.getContractAt(referenceReputation.abi, reputation.address);
    expect(await registry.getIdentityRegistry()).to.equal(deployment.contracts.IdentityRegistry.address);
    expect(await registry.getVersion()).to.equal("2.0.0");
    expect(readDeployment(file).contracts.ReputationRegistry?.address).to.equal(reputation.address);
  });

  it("records a given reputation registry as reused, refusing an address without code", async () => {
    const [, someone] = await ethers.getSigners();
    const identity = await deployReferenceIdentity();
    const existing = await deployReferenceReputation(getAddress(await identity.getAddress()));
    const address = await existing.getAddress();
    const { deployment } = await deployVrai(hre, { outDir, reputationRegistry: address.toLowerCase() });
    expect(deployment.contracts.ReputationRegistry).to.deep.equal({ address, blockNumber: null, txHash: null, reused: true });
    const noCode = await rejection(deployVrai(hre, { outDir, overwrite: true, reputationRegistry: someone.address }));
    expect(noCode).to.be.instanceOf(DeployConfigError);
    expect(noCode.message).to.equal(`no contract at reputation registry ${someone.address} on hardhat`);
  });

  it("reuses an existing identity registry and grants the configured roles only", async () => {
    const [deployer, anchorer, verifier, platform] = await ethers.getSigners();
    const canonical = await ethers.deployContract("AgentIdentity");
    const address = await canonical.getAddress();
    const deployedIn = (await canonical.deploymentTransaction()!.wait())!.blockNumber;
    await mineBlocks(5);
    const { deployment } = await deployVrai(hre, {
      outDir,
      identityRegistry: address.toLowerCase(),
      anchorers: [anchorer.address],
      verifiers: [verifier.address],
      platform: [platform.address],
    });
    expect(deployment.contracts.IdentityRegistry).to.deep.equal({ address, blockNumber: deployedIn, txHash: null, reused: true });
    const anchors = await ethers.getContractAt("AnchorRegistry", deployment.contracts.AnchorRegistry.address);
    const registry = await ethers.getContractAt("Registry", deployment.contracts.Registry.address);
    expect(await registry.identityRegistry()).to.equal(address);
    expect(await anchors.hasRole(await anchors.ANCHORER_ROLE(), anchorer.address)).to.equal(true);
    expect(await anchors.hasRole(await anchors.ANCHORER_ROLE(), deployer.address)).to.equal(false);
    expect(await anchors.hasRole(await anchors.VERIFIER_ROLE(), verifier.address)).to.equal(true);
    expect(await anchors.hasRole(await anchors.VERIFIER_ROLE(), deployer.address)).to.equal(false);
    expect(await registry.hasRole(await registry.PLATFORM_ROLE(), platform.address)).to.equal(true);
    expect(await registry.hasRole(await registry.PLATFORM_ROLE(), deployer.address)).to.equal(false);
  });

  it("records the block the reference registry's proxy was deployed in, so the indexer reads its transfers from there", async () => {
    const before = await ethers.provider.getBlockNumber();
    const reference = await deployReferenceIdentity();
    await mineBlocks(5);
    const { deployment, file } = await deployVrai(hre, { outDir, identityRegistry: await reference.getAddress() });
    // One transaction a block: the placeholder implementation, then the proxy.
    expect(deployment.contracts.IdentityRegistry.blockNumber).to.equal(before + 2);
    expect(deployment.contracts.AnchorRegistry.blockNumber).to.be.greaterThan(before + 8);
    expect(readFollowedDeployment(file).startBlock).to.equal(before + 2);
  });

  it("records a given deployment block of the reused registry, refusing one after the head", async () => {
    const canonical = await ethers.deployContract("AgentIdentity");
    const identityRegistry = await canonical.getAddress();
    const { deployment } = await deployVrai(hre, { outDir, identityRegistry, identityRegistryBlock: 1 });
    expect(deployment.contracts.IdentityRegistry.blockNumber).to.equal(1);
    const head = await ethers.provider.getBlockNumber();
    const error = await rejection(deployVrai(hre, { outDir, overwrite: true, identityRegistry, identityRegistryBlock: head + 1 }));
    expect(error).to.be.instanceOf(DeployConfigError);
    expect(error.message).to.equal(`identity registry block ${head + 1} is after the chain's head ${head}`);
  });

  it("refuses an identity registry address without code, and an invalid address", async () => {
    const [, someone] = await ethers.getSigners();
    const noCode = await rejection(deployVrai(hre, { outDir, identityRegistry: someone.address }));
    expect(noCode).to.be.instanceOf(DeployConfigError);
    expect(noCode.message).to.include("no contract");
    const notAddress = await rejection(deployVrai(hre, { outDir, anchorers: ["0x1234"] }));
    expect(notAddress).to.be.instanceOf(DeployConfigError);
    expect(notAddress.message).to.include("not an address");
    expect(fs.existsSync(path.join(outDir, "hardhat.json"))).to.equal(false);
  });

  it("reads its options from the environment", () => {
    expect(
      deployOptionsFromEnv({
        DEPLOY_IDENTITY_REGISTRY: " 0x8004A169FB4a3325136EB29fA0ceB6D2e539a432 ",
        DEPLOY_IDENTITY_REGISTRY_BLOCK: "36000000",
        DEPLOY_REPUTATION_REGISTRY: "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63",
        DEPLOY_ANCHORERS: "0x1, 0x2,",
        DEPLOY_VERIFIERS: "",
        DEPLOY_PLATFORM: "0x3",
        DEPLOY_OVERWRITE: "1",
      }),
    ).to.deep.equal({
      identityRegistry: "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432",
      identityRegistryBlock: 36_000_000,
      reputationRegistry: "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63",
      anchorers: ["0x1", "0x2"],
      verifiers: undefined,
      platform: ["0x3"],
      overwrite: true,
    });
    expect(deployOptionsFromEnv({})).to.deep.equal({
      identityRegistry: undefined,
      identityRegistryBlock: undefined,
      reputationRegistry: undefined,
      anchorers: undefined,
      verifiers: undefined,
      platform: undefined,
      overwrite: false,
    });
    expect(() => deployOptionsFromEnv({ DEPLOY_IDENTITY_REGISTRY_BLOCK: "-1" })).to.throw(
      DeployConfigError,
      'DEPLOY_IDENTITY_REGISTRY_BLOCK is not a block number: "-1"',
    );
  });
});
