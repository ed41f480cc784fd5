/**
 * The account and chain that anchor score roots with `AnchorRegistry.anchorRoot`: a signer (src/chain/signer.ts) and
 * the public client of its chain. Where the registry's address comes from (configuration, a deployment file) is the
 * composition root's business.
 */
import { getAddress, type Address, type Chain, type Hex, type PublicClient, type Transport } from "viem";
import { createKeySigner, type AccountLocks, type TxSigner } from "./signer";

/** The account and chain that anchor roots, and the AnchorRegistry. */
export type AnchorWriter = {
  publicClient: PublicClient<Transport, Chain | undefined>;
  /** The anchorer's account: its transactions one at a time, with every other writer of the same key. */
  signer: TxSigner;
  /** The AnchorRegistry address. */
  contract: Address;
};

/**
 * A writer signing with `privateKey` over HTTP JSON-RPC at `rpcUrl`, anchoring to the AnchorRegistry at `registry`;
 * `locks` are the process's account locks, shared with any other writer of the same key (a lock of its own otherwise);
 * `timeoutMs` bounds each JSON-RPC request (`createKeySigner`).
 * @example
 * createAnchorWriter({ privateKey: "0x…", rpcUrl: "http://127.0.0.1:8545", registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3" })
 */
export function createAnchorWriter(
  options: { privateKey: Hex; rpcUrl: string; registry: Address; timeoutMs?: number },
  locks?: AccountLocks,
): AnchorWriter {
  const signer = createKeySigner(options, locks);
  return { publicClient: signer.publicClient, signer, contract: getAddress(options.registry) };
}
