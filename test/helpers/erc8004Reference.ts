import { ethers } from "hardhat";
import type { BaseContract, Contract, TransactionRequest } from "ethers";
import { getAddress, type Address } from "viem";
import type { AgentIdentity } from "../../typechain-types";
import {
  deployReferenceIdentity as deployIdentityBehindProxy,
  deployReferenceReputation as deployReputationBehindProxy,
  type ReferenceDeployer,
} from "../../src/test-helpers/erc8004-reference";
import referenceIdentity from "../fixtures/erc8004/IdentityRegistryUpgradeable.json";
import referenceReputation from "../fixtures/erc8004/ReputationRegistryUpgradeable.json";

/** Deploys from the first signer, which owns the proxies, each transaction mined before the next. */
async function firstSigner(): Promise<{ signer: Awaited<ReturnType<typeof ethers.getSigners>>[number]; io: ReferenceDeployer }> {
  const [signer] = await ethers.getSigners();
  const mined = async (request: TransactionRequest) => {
    const receipt = await (await signer.sendTransaction(request)).wait();
    if (receipt === null || receipt.status !== 1) throw new Error("reference registry deployment reverted");
    return receipt;
  };
  const io: ReferenceDeployer = {
    async deploy(data) {
      const receipt = await mined({ data });
      if (receipt.contractAddress === null) throw new Error("no contract deployed");
      return { address: getAddress(receipt.contractAddress), blockNumber: receipt.blockNumber };
    },
    send: async (to, data) => void (await mined({ to, data })),
  };
  return { signer, io };
}

/**
 * Deploys the reference ERC-8004 identity registry behind its ERC1967 proxy (src/test-helpers/erc8004-reference.ts,
 * as its README says), from the first signer, which owns the proxy.
 * @returns the proxy, typed with AgentIdentity's ABI for the functions both have (the reference's own ABI is used underneath)
 */
export async function deployReferenceIdentity(): Promise<AgentIdentity> {
  const { signer, io } = await firstSigner();
  const { address } = await deployIdentityBehindProxy(io);
  return new ethers.Contract(address, referenceIdentity.abi, signer) as BaseContract as AgentIdentity;
}

/**
 * Deploys the reference ERC-8004 reputation registry behind its ERC1967 proxy, initialized with `identityRegistry`,
 * from the first signer, which owns the proxy.
 * @returns the proxy, with the reference's ABI
 */
export async function deployReferenceReputation(identityRegistry: Address): Promise<Contract> {
  const { signer, io } = await firstSigner();
  const { address } = await deployReputationBehindProxy(io, identityRegistry);
  return new ethers.Contract(address, referenceReputation.abi, signer);
}
