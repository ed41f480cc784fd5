import { ethers } from "hardhat";
import type { BaseContract, Signer } from "ethers";
import type { AgentIdentity } from "../../typechain-types";
import identityArtifact from "../fixtures/erc8004/IdentityRegistryUpgradeable.json";
import minimalArtifact from "../fixtures/erc8004/HardhatMinimalUUPS.json";
import proxyArtifact from "../fixtures/erc8004/ERC1967Proxy.json";

/** The compiled reference `IdentityRegistryUpgradeable` (test/fixtures/erc8004/, from ../shared/vectors/erc8004/reference/). */
export const REFERENCE_IDENTITY_ARTIFACT = identityArtifact;

/**
 * Deploys the reference ERC-8004 identity registry behind its ERC1967 proxy, as its repository's tests do
 * (test/fixtures/erc8004/README.md): the proxy starts on `HardhatMinimalUUPS`, then the deployer (the proxy's
 * owner) upgrades it to `IdentityRegistryUpgradeable` and initialises it.
 * @returns the proxy, typed with AgentIdentity's ABI for the functions both have (the reference's own ABI is used underneath)
 */
export async function deployReferenceIdentity(deployer?: Signer): Promise<AgentIdentity> {
  const signer = deployer ?? (await ethers.getSigners())[0];
  const deploy = async (artifact: { abi: unknown[]; bytecode: string }, args: unknown[]) => {
    const contract = await new ethers.ContractFactory(artifact.abi as never, artifact.bytecode, signer).deploy(...args);
    await contract.waitForDeployment();
    return contract;
  };
  const minimal = await deploy(minimalArtifact, []);
  const proxy = await deploy(proxyArtifact, [
    await minimal.getAddress(),
    minimal.interface.encodeFunctionData("initialize", [ethers.ZeroAddress]),
  ]);
  const implementation = await deploy(identityArtifact, []);
  const asMinimal = new ethers.Contract(await proxy.getAddress(), minimalArtifact.abi, signer);
  await (await asMinimal.upgradeToAndCall(await implementation.getAddress(), implementation.interface.encodeFunctionData("initialize", []))).wait();
  return new ethers.Contract(await proxy.getAddress(), identityArtifact.abi, signer) as BaseContract as AgentIdentity;
}
