/**
 * Deploys Vrai's contracts to a network and writes `deployments/<network>.json`.
 *
 *   npx hardhat run scripts/deploy.ts --network localhost
 *
 * Configuration (environment):
 * - `DEPLOY_IDENTITY_REGISTRY`: address of an existing ERC-8004 identity registry (the canonical one on public
 *   networks) to reuse instead of deploying `AgentIdentity`.
 * - `DEPLOY_IDENTITY_REGISTRY_BLOCK`: the block that registry was deployed in, recorded so the indexer reads its
 *   transfers from there. Unset: found on the chain (the first block with its code), which needs a node that
 *   answers `eth_getCode` at past blocks.
 * - `DEPLOY_REPUTATION_REGISTRY`: address of an existing ERC-8004 reputation registry (the canonical one on public
 *   networks, for the identity registry's agents), recorded for Vrai's feedback. Unset: on a local network the reference
 *   `ReputationRegistryUpgradeable` is deployed behind its proxy for the identity registry; elsewhere none is recorded.
 * - `DEPLOY_ANCHORERS`, `DEPLOY_VERIFIERS`, `DEPLOY_PLATFORM`: comma-separated addresses granted the anchorer,
 *   verifier and platform roles. Unset on a local network (hardhat, localhost): the deployer gets every role.
 * - `DEPLOY_OVERWRITE=1`: replace an existing deployment file (refused otherwise).
 */
import fs from "node:fs";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import type { Address } from "viem";
import type { DeploymentJson } from "../src/chain/deployment";
import { BaseError } from "../src/errors";
import { deployReferenceReputation, type ReferenceDeployer } from "./erc8004-reference";

/** Networks where the deployer gets every role unless told otherwise. */
const LOCAL_NETWORKS = new Set(["hardhat", "localhost"]);

/**
 * Where one contract lives. `reused` contracts were not deployed by this run: their hash is null and their block the
 * one they were deployed in (src/chain/deployment.ts's reader accepts null there, from files written before).
 */
export type DeployedContract = {
  address: string;
  blockNumber: number | null;
  txHash: string | null;
  reused: boolean;
  /** The contract deployed at this address when this run deployed it. */
  contractName?: string;
};

/** The content of `deployments/<network>.json`: all of what src/chain/deployment.ts reads, every field filled. */
export type Deployment = {
  network: string;
  chainId: number;
  deployedAt: string;
  deployer: string;
  contracts: {
    IdentityRegistry: DeployedContract;
    AnchorRegistry: DeployedContract;
    Registry: DeployedContract;
    /** The ERC-8004 reputation registry Vrai gives feedback to, for the identity registry's agents (absent: none). */
    ReputationRegistry?: DeployedContract;
  };
  roles: {
    AnchorRegistry: { DEFAULT_ADMIN_ROLE: string[]; ANCHORER_ROLE: string[]; VERIFIER_ROLE: string[] };
    Registry: { DEFAULT_ADMIN_ROLE: string[]; PLATFORM_ROLE: string[] };
  };
};

export type DeployOptions = {
  /** Existing ERC-8004 identity registry to reuse; `AgentIdentity` is deployed when absent. */
  identityRegistry?: string;
  /** The block `identityRegistry` was deployed in; found on the chain when absent. */
  identityRegistryBlock?: number;
  /** Existing ERC-8004 reputation registry to record; when absent, the reference one is deployed on a local network. */
  reputationRegistry?: string;
  /** Accounts granted each role; when absent, the deployer on a local network, nobody elsewhere. */
  anchorers?: string[];
  verifiers?: string[];
  platform?: string[];
  /** Replace an existing deployment file. */
  overwrite?: boolean;
  /** Directory of deployment files; `deployments/` at the repository root by default. */
  outDir?: string;
  /** Progress lines; silent by default. */
  log?: (line: string) => void;
};

/** A deployment file already exists and overwriting was not asked for. */
export class DeploymentExistsError extends BaseError {
  constructor(readonly file: string) {
    super("deployment_exists", `${file} already exists: set DEPLOY_OVERWRITE=1 to replace it`);
  }
}

/** A deployment option is invalid (bad address, no code at a reused registry). */
export class DeployConfigError extends BaseError {
  constructor(message: string) {
    super("deploy_config_invalid", message);
  }
}

/**
 * Deploys the identity registry (unless reused), `AnchorRegistry` and `Registry`, grants roles and writes the
 * deployment file. Refuses, before sending any transaction, when the file exists and `overwrite` is not set.
 * @returns The deployment written to `<outDir>/<network>.json`, and that file's path.
 * @example
 * const { deployment } = await deployVrai(hre, { outDir: "deployments" });
 * console.log(deployment.contracts.Registry.address);
 */
export async function deployVrai(
  hre: HardhatRuntimeEnvironment,
  options: DeployOptions = {},
): Promise<{ deployment: Deployment; file: string }> {
  const log = options.log ?? (() => {});
  const network = hre.network.name;
  const file = path.join(options.outDir ?? path.join(__dirname, "..", "deployments"), `${network}.json`);
  if (fs.existsSync(file) && !options.overwrite) throw new DeploymentExistsError(file);

  const { ethers } = hre;
  const [deployer] = await ethers.getSigners();
  const chainId = Number((await ethers.provider.getNetwork()).chainId);
  const isLocal = LOCAL_NETWORKS.has(network);
  const roleHolders = (accounts: string[] | undefined) =>
    (accounts ?? (isLocal ? [deployer.address] : [])).map((account) => checkedAddress(ethers, account));
  const anchorers = roleHolders(options.anchorers);
  const verifiers = roleHolders(options.verifiers);
  const platform = roleHolders(options.platform);

  let identityRegistry: DeployedContract;
  if (options.identityRegistry !== undefined) {
    const address = checkedAddress(ethers, options.identityRegistry);
    if ((await ethers.provider.getCode(address)) === "0x") {
      throw new DeployConfigError(`no contract at identity registry ${address} on ${network}`);
    }
    const blockNumber = await identityRegistryBlock(hre, address, options.identityRegistryBlock);
    identityRegistry = { address, blockNumber, txHash: null, reused: true };
    log(`IdentityRegistry reused at ${address} (deployed in block ${blockNumber})`);
  } else {
    identityRegistry = await deployContract(hre, "AgentIdentity", []);
    log(`AgentIdentity deployed at ${identityRegistry.address}`);
  }
  const anchorRegistry = await deployContract(hre, "AnchorRegistry", [deployer.address]);
  log(`AnchorRegistry deployed at ${anchorRegistry.address}`);
  const registry = await deployContract(hre, "Registry", [deployer.address, identityRegistry.address]);
  log(`Registry deployed at ${registry.address}`);
  const reputationRegistry = await reputationRegistryOf(hre, identityRegistry.address, options.reputationRegistry, isLocal);
  if (reputationRegistry) log(`ReputationRegistry ${reputationRegistry.reused ? "reused" : "deployed"} at ${reputationRegistry.address}`);

  const anchors = await ethers.getContractAt("AnchorRegistry", anchorRegistry.address);
  const scores = await ethers.getContractAt("Registry", registry.address);
  await grantRole(anchors, await anchors.ANCHORER_ROLE(), anchorers);
  await grantRole(anchors, await anchors.VERIFIER_ROLE(), verifiers);
  await grantRole(scores, await scores.PLATFORM_ROLE(), platform);
  log(`roles granted: ${anchorers.length} anchorer(s), ${verifiers.length} verifier(s), ${platform.length} platform`);

  // Checked against the one reader's schema (src/chain/deployment.ts): a value of another type than it reads does not compile.
  const deployment: Deployment = {
    network,
    chainId,
    deployedAt: new Date().toISOString(),
    deployer: deployer.address,
    contracts: {
      IdentityRegistry: identityRegistry,
      AnchorRegistry: anchorRegistry,
      Registry: registry,
      ...(reputationRegistry && { ReputationRegistry: reputationRegistry }),
    },
    roles: {
      AnchorRegistry: { DEFAULT_ADMIN_ROLE: [deployer.address], ANCHORER_ROLE: anchorers, VERIFIER_ROLE: verifiers },
      Registry: { DEFAULT_ADMIN_ROLE: [deployer.address], PLATFORM_ROLE: platform },
    },
  } satisfies DeploymentJson;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(deployment, null, 2)}\n`);
  log(`wrote ${file}`);
  return { deployment, file };
}

/** Reads the deployment options from the environment variables documented at the top of this file. */
export function deployOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): DeployOptions {
  const list = (value: string | undefined) =>
    value === undefined || value.trim() === ""
      ? undefined
      : value
          .split(",")
          .map((item) => item.trim())
          .filter((item) => item !== "");
  const identityRegistry = env.DEPLOY_IDENTITY_REGISTRY?.trim();
  const block = env.DEPLOY_IDENTITY_REGISTRY_BLOCK?.trim();
  if (block !== undefined && block !== "" && !/^\d+$/.test(block)) {
    throw new DeployConfigError(`DEPLOY_IDENTITY_REGISTRY_BLOCK is not a block number: ${JSON.stringify(block)}`);
  }
  const reputationRegistry = env.DEPLOY_REPUTATION_REGISTRY?.trim();
  return {
    identityRegistry: identityRegistry === "" ? undefined : identityRegistry,
    reputationRegistry: reputationRegistry === "" ? undefined : reputationRegistry,
    identityRegistryBlock: block === undefined || block === "" ? undefined : Number(block),
    anchorers: list(env.DEPLOY_ANCHORERS),
    verifiers: list(env.DEPLOY_VERIFIERS),
    platform: list(env.DEPLOY_PLATFORM),
    overwrite: env.DEPLOY_OVERWRITE === "1",
  };
}

async function deployContract(hre: HardhatRuntimeEnvironment, name: string, args: unknown[]): Promise<DeployedContract> {
  const contract = await hre.ethers.deployContract(name, args);
  await contract.waitForDeployment();
  const tx = contract.deploymentTransaction();
  const receipt = tx === null ? null : await tx.wait();
  if (receipt === null) throw new BaseError("deploy_failed", `${name}: no deployment receipt`);
  return {
    address: await contract.getAddress(),
    blockNumber: receipt.blockNumber,
    txHash: receipt.hash,
    reused: false,
    contractName: name,
  };
}

/**
 * The ERC-8004 reputation registry of the deployment: `given` when set (it must have code), else on a local network the
 * reference one deployed behind its proxy for `identityRegistry` (its `initialize(identityRegistry)` by the deployer,
 * who owns the proxy), else none.
 */
async function reputationRegistryOf(
  hre: HardhatRuntimeEnvironment,
  identityRegistry: string,
  given: string | undefined,
  isLocal: boolean,
): Promise<DeployedContract | undefined> {
  const { ethers } = hre;
  if (given !== undefined) {
    const address = checkedAddress(ethers, given);
    if ((await ethers.provider.getCode(address)) === "0x") {
      throw new DeployConfigError(`no contract at reputation registry ${address} on ${hre.network.name}`);
    }
    return { address, blockNumber: null, txHash: null, reused: true };
  }
  if (!isLocal) return undefined;
  const [deployer] = await ethers.getSigners();
  const mined = async (request: { to?: string; data: string }) => {
    const receipt = await (await deployer.sendTransaction(request)).wait();
    if (receipt === null || receipt.status !== 1)
      throw new BaseError("deploy_failed", "ReputationRegistry: a deployment transaction reverted");
    return receipt;
  };
  const deployedBy = new Map<string, string>();
  const io: ReferenceDeployer = {
    async deploy(data) {
      const receipt = await mined({ data });
      if (receipt.contractAddress === null) throw new BaseError("deploy_failed", "ReputationRegistry: no contract deployed");
      const address = checkedAddress(ethers, receipt.contractAddress) as Address;
      deployedBy.set(address, receipt.hash);
      return { address, blockNumber: receipt.blockNumber };
    },
    send: async (to, data) => void (await mined({ to, data })),
  };
  const proxy = await deployReferenceReputation(io, checkedAddress(ethers, identityRegistry) as Address);
  return {
    address: proxy.address,
    blockNumber: proxy.blockNumber,
    txHash: deployedBy.get(proxy.address) ?? null,
    reused: false,
    contractName: "ReputationRegistryUpgradeable",
  };
}

/**
 * The block a reused identity registry was deployed in: `given` when set (checked to be on the chain), else the first
 * block with code at `address`, by bisection over `eth_getCode` at past blocks (its transfers cannot be older).
 */
async function identityRegistryBlock(hre: HardhatRuntimeEnvironment, address: string, given: number | undefined): Promise<number> {
  const { provider } = hre.ethers;
  const head = await provider.getBlockNumber();
  if (given !== undefined) {
    if (given > head) throw new DeployConfigError(`identity registry block ${given} is after the chain's head ${head}`);
    return given;
  }
  let [low, high] = [0, head];
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    let code: string;
    try {
      code = await provider.getCode(address, middle);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new DeployConfigError(
        `cannot read the code of ${address} at block ${middle} (${why}): set DEPLOY_IDENTITY_REGISTRY_BLOCK to its deployment block`,
      );
    }
    if (code === "0x") low = middle + 1;
    else high = middle;
  }
  return low;
}

type RoleAdmin = { grantRole(role: string, account: string): Promise<{ wait(): Promise<unknown> }> };

async function grantRole(contract: RoleAdmin, role: string, accounts: string[]): Promise<void> {
  for (const account of accounts) await (await contract.grantRole(role, account)).wait();
}

function checkedAddress(ethers: HardhatRuntimeEnvironment["ethers"], value: string): string {
  if (!ethers.isAddress(value)) throw new DeployConfigError(`not an address: ${JSON.stringify(value)}`);
  return ethers.getAddress(value);
}

if (require.main === module) {
  const hre = require("hardhat") as HardhatRuntimeEnvironment;
  deployVrai(hre, { ...deployOptionsFromEnv(), log: (line) => console.log(line) }).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
