import { ethers } from "hardhat";
import type { Signer } from "ethers";
import type { AgentIdentity } from "../../typechain-types";

/** EIP-712 types of the ERC-8004 agent wallet proof, as the canonical registry defines them. */
export const AGENT_WALLET_SET_TYPES = {
  AgentWalletSet: [
    { name: "agentId", type: "uint256" },
    { name: "newWallet", type: "address" },
    { name: "owner", type: "address" },
    { name: "deadline", type: "uint256" },
  ],
};

/** Signs, as `signer`, the proof that `newWallet` accepts to be the wallet of `agentId` owned by `owner`. */
export async function signAgentWallet(
  identity: AgentIdentity,
  signer: Signer,
  message: { agentId: bigint; newWallet: string; owner: string; deadline: bigint },
): Promise<string> {
  const domain = {
    name: "ERC8004IdentityRegistry",
    version: "1",
    chainId: (await ethers.provider.getNetwork()).chainId,
    verifyingContract: await identity.getAddress(),
  };
  return signer.signTypedData(domain, AGENT_WALLET_SET_TYPES, message);
}
