/**
 * The reference ERC-8004 identity registry (`IdentityRegistryUpgradeable`, the one public networks run), compiled,
 * from the project's test data in test/fixtures/erc8004/, and its deployment behind its ERC1967 proxy as the
 * fixtures' README says, for tests on a chain reached through viem or JSON-RPC.
 */
import fs from "node:fs";
import path from "node:path";
import { encodeDeployData, encodeFunctionData, parseAbi, zeroAddress, type Abi, type Address, type Hex } from "viem";
import { PROJECT_ROOT } from "../project-root";

type Artifact = { abi: Abi; bytecode: Hex };

function artifact(name: string): Artifact {
  const { abi, bytecode } = JSON.parse(fs.readFileSync(path.join(PROJECT_ROOT, "test", "fixtures", "erc8004", `${name}.json`), "utf8"));
  return { abi, bytecode };
}

/** The compiled reference identity registry. */
export const REFERENCE_IDENTITY = artifact("IdentityRegistryUpgradeable");

const PROXY_ADMIN_ABI = parseAbi([
  "function initialize(address)",
  "function initialize()",
  "function upgradeToAndCall(address, bytes) payable",
]);

/** How a test reaches its chain: deploys creation code, and sends a call, each mined before it resolves. */
export type ReferenceDeployer = {
  deploy(creationCode: Hex): Promise<{ address: Address; blockNumber: number }>;
  send(to: Address, data: Hex): Promise<void>;
};

/**
 * Deploys `HardhatMinimalUUPS`, the `ERC1967Proxy` on it, then `IdentityRegistryUpgradeable`, and upgrades the proxy
 * to it with `initialize()` (as its owner, the deployer: the one-step proxy constructor reverts).
 * @returns the proxy (the identity registry) and the block it was deployed in (the first block with its code)
 * @example const { address } = await deployReferenceIdentity({ deploy, send });
 */
export async function deployReferenceIdentity(io: ReferenceDeployer): Promise<{ address: Address; blockNumber: number }> {
  const minimal = artifact("HardhatMinimalUUPS");
  const proxy = artifact("ERC1967Proxy");
  const placeholder = await io.deploy(minimal.bytecode);
  const initializeMinimal = encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "initialize", args: [zeroAddress] });
  const registry = await io.deploy(
    encodeDeployData({ abi: proxy.abi, bytecode: proxy.bytecode, args: [placeholder.address, initializeMinimal] }),
  );
  const implementation = await io.deploy(REFERENCE_IDENTITY.bytecode);
  const initialize = encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "initialize", args: [] });
  await io.send(
    registry.address,
    encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "upgradeToAndCall", args: [implementation.address, initialize] }),
  );
  return registry;
}
