/**
 * The reference ERC-8004 registries (the ones public networks run), compiled, from test/fixtures/erc8004/, and their
 * deployment behind an ERC1967 proxy as the fixtures' README says: the identity registry for tests, the reputation
 * registry for tests and for `vrai dev`'s local chain (scripts/deploy.ts), where Vrai's feedback can be tried.
 */
import fs from "node:fs";
import path from "node:path";
import { encodeDeployData, encodeFunctionData, parseAbi, zeroAddress, type Abi, type Address, type Hex } from "viem";

type Artifact = { abi: Abi; bytecode: Hex };

function artifact(name: string): Artifact {
  const { abi, bytecode } = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "test", "fixtures", "erc8004", `${name}.json`), "utf8"));
  return { abi, bytecode };
}

/** The compiled reference identity registry. */
export const REFERENCE_IDENTITY = artifact("IdentityRegistryUpgradeable");
/** The compiled reference reputation registry. */
export const REFERENCE_REPUTATION = artifact("ReputationRegistryUpgradeable");

const PROXY_ADMIN_ABI = parseAbi([
  "function initialize(address)",
  "function initialize()",
  "function upgradeToAndCall(address, bytes) payable",
]);

/** How the caller reaches its chain: deploys creation code, and sends a call, each mined before it resolves. */
export type ReferenceDeployer = {
  deploy(creationCode: Hex): Promise<{ address: Address; blockNumber: number }>;
  send(to: Address, data: Hex): Promise<void>;
};

/**
 * Deploys `HardhatMinimalUUPS` and the `ERC1967Proxy` on it, then `implementation`, and upgrades the proxy to it with
 * `initialize` (as the proxy's owner, the deployer: the one-step proxy constructor reverts).
 * @returns the proxy and the block it was deployed in (the first block with its code)
 */
async function deployBehindProxy(io: ReferenceDeployer, implementation: Artifact, initialize: Hex) {
  const minimal = artifact("HardhatMinimalUUPS");
  const proxy = artifact("ERC1967Proxy");
  const placeholder = await io.deploy(minimal.bytecode);
  const initializeMinimal = encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "initialize", args: [zeroAddress] });
  const deployed = await io.deploy(
    encodeDeployData({ abi: proxy.abi, bytecode: proxy.bytecode, args: [placeholder.address, initializeMinimal] }),
  );
  const code = await io.deploy(implementation.bytecode);
  await io.send(
    deployed.address,
    encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "upgradeToAndCall", args: [code.address, initialize] }),
  );
  return deployed;
}

/**
 * The reference identity registry behind its proxy, initialized with `initialize()`.
 * @example const { address } = await deployReferenceIdentity({ deploy, send });
 */
export function deployReferenceIdentity(io: ReferenceDeployer): Promise<{ address: Address; blockNumber: number }> {
  return deployBehindProxy(io, REFERENCE_IDENTITY, encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "initialize", args: [] }));
}

/**
 * The reference reputation registry behind its proxy, initialized with `initialize(identityRegistry)` (reinitializer 2,
 * by the proxy's owner): the feedback it keeps is about the agents of that identity registry.
 * @example const { address } = await deployReferenceReputation({ deploy, send }, identityRegistry);
 */
export function deployReferenceReputation(
  io: ReferenceDeployer,
  identityRegistry: Address,
): Promise<{ address: Address; blockNumber: number }> {
  const initialize = encodeFunctionData({ abi: PROXY_ADMIN_ABI, functionName: "initialize", args: [identityRegistry] });
  return deployBehindProxy(io, REFERENCE_REPUTATION, initialize);
}
