/**
 * The account and chain that anchor score roots with `AnchorRegistry.anchorRoot`: a wallet client with a
 * local account and a public client over one HTTP JSON-RPC endpoint. Where the registry's address comes
 * from (configuration, a deployment file) is the composition root's business.
 */
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";

/** The account and chain that anchor roots: a wallet client with a local account, and the AnchorRegistry. */
export type AnchorWriter = {
  publicClient: PublicClient<Transport, Chain | undefined>;
  walletClient: WalletClient<Transport, Chain | undefined, Account>;
  /** The AnchorRegistry address. */
  contract: Address;
};

/**
 * A writer signing with `privateKey` over HTTP JSON-RPC at `rpcUrl`, anchoring to the AnchorRegistry at `registry`.
 * @example createAnchorWriter({ privateKey: "0x…", rpcUrl: "http://127.0.0.1:8545", registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3" })
 */
export function createAnchorWriter(options: { privateKey: Hex; rpcUrl: string; registry: Address }): AnchorWriter {
  const transport = http(options.rpcUrl);
  return {
    publicClient: createPublicClient({ transport }),
    walletClient: createWalletClient({ transport, account: privateKeyToAccount(options.privateKey) }),
    contract: getAddress(options.registry),
  };
}
