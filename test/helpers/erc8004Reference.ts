import { ethers } from "hardhat";
import type { BaseContract, TransactionRequest } from "ethers";
import { getAddress } from "viem";
import type { AgentIdentity } from "../../typechain-types";
import { deployReferenceIdentity as deployBehindProxy } from "../../src/test-helpers/erc8004-reference";
import referenceIdentity from "../fixtures/erc8004/IdentityRegistryUpgradeable.json";

/**
 * Deploys the reference ERC-8004 identity registry behind its ERC1967 proxy (src/test-helpers/erc8004-reference.ts,
 * as its README says), from the first signer, which owns the proxy.
 * @returns the proxy, typed with AgentIdentity's ABI for the functions both have (the reference's own ABI is used underneath)
 */
export async function deployReferenceIdentity(): Promise<AgentIdentity> {
  const [signer] = await ethers.getSigners();
  const mined = async (request: TransactionRequest) => {
    const receipt = await (await signer.sendTransaction(request)).wait();
    if (receipt === null || receipt.status !== 1) throw new Error("reference registry deployment reverted");
    return receipt;
  };
  const { address } = await deployBehindProxy({
    async deploy(data) {
      const receipt = await mined({ data });
      if (receipt.contractAddress === null) throw new Error("no contract deployed");
      return { address: getAddress(receipt.contractAddress), blockNumber: receipt.blockNumber };
    },
    send: async (to, data) => void (await mined({ to, data })),
  });
  return new ethers.Contract(address, referenceIdentity.abi, signer) as BaseContract as AgentIdentity;
}
