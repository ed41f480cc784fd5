/**
 * A real local EVM chain for mocha tests: the Hardhat network, in-process, driven through viem.
 *
 * Hardhat is loaded from the project root (mocha's working directory), compiles `contracts/`
 * once per process, and exposes its EIP-1193 provider, which viem wraps with `custom(...)`.
 * All `startTestChain()` calls in one process share that one chain; each call snapshots it on
 * start and `close()` reverts to that snapshot, so test files do not see each other's state.
 */
import {
  createPublicClient,
  createWalletClient,
  custom,
  getAddress,
  type Abi,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import {
  deployReferenceIdentity,
  deployReferenceReputation,
  REFERENCE_IDENTITY,
  REFERENCE_REPUTATION,
  type ReferenceDeployer,
} from "./erc8004-reference";

/** How many of the Hardhat network's funded accounts the helper exposes. */
const ACCOUNT_COUNT = 6;

/** A contract the helper deployed: its address and ABI, ready for viem's `readContract` / `writeContract`. */
export type DeployedContract = { address: Address; abi: Abi };

/** A funded signer on the test chain, as a viem wallet client bound to one local account. */
export type TestWalletClient = WalletClient<Transport, Chain, PrivateKeyAccount>;

export type TestChain = {
  /** The chain definition (Hardhat, id 31337). */
  chain: Chain;
  publicClient: PublicClient<Transport, Chain>;
  /** Funded local accounts (Hardhat's default mnemonic's, hardhat.config.ts): they sign messages and transactions locally. */
  accounts: PrivateKeyAccount[];
  /** The accounts' private keys, in the same order: for what takes a key (the anchor writer, `vrai serve`'s configuration). */
  keys: Hex[];
  /** One wallet client per account, in the same order. */
  walletClients: TestWalletClient[];
  /** `walletClients[0]`. */
  walletClient: TestWalletClient;
  /**
   * Deploys the compiled contract `name` (a Hardhat artifact name) and waits for its receipt.
   * @param from index into `accounts` of the deployer (default 0)
   */
  deployContract(name: string, args?: readonly unknown[], options?: { from?: number }): Promise<DeployedContract>;
  /** Deploys an AnchorRegistry administered by account 0 and grants account `anchorer` its anchorer role; its address. */
  deployAnchorRegistry(anchorer: number): Promise<Address>;
  /** Deploys the reference ERC-8004 identity registry behind its proxy (test/fixtures/erc8004/), from account 0. */
  deployReferenceIdentity(): Promise<DeployedContract>;
  /** Deploys the reference ERC-8004 reputation registry behind its proxy, for `identityRegistry`'s agents, from account 0. */
  deployReferenceReputation(identityRegistry: Address): Promise<DeployedContract>;
  /** The `RootAnchored` logs of `root` at the AnchorRegistry `registry`, from block 0 (each anchor of the root, in order). */
  rootAnchoredLogs(
    registry: Address,
    root: Hex,
  ): Promise<Array<{ transactionHash: Hex; args: { kind?: Hex; leafCount?: bigint; role?: number } }>>;
  /** `evm_snapshot`: returns an id for `revert`. */
  snapshot(): Promise<Hex>;
  /** `evm_revert` to a snapshot id (each id can be reverted to once, as in Hardhat). */
  revert(id: Hex): Promise<void>;
  /** Mines `blocks` empty blocks. */
  mine(blocks?: number): Promise<void>;
  /** Reverts the chain to its state when this helper started. */
  close(): Promise<void>;
};

let compiled: Promise<void> | undefined;

/** The Hardhat runtime, loaded on first use so that importing this module stays cheap. */
function loadHardhat(): HardhatRuntimeEnvironment {
  // Loading Hardhat outside its runner selects the in-process `hardhat` network by default;
  // an inherited HARDHAT_NETWORK (e.g. `localhost`) would point the tests at a live node instead.
  delete process.env.HARDHAT_NETWORK;
  return require("hardhat") as HardhatRuntimeEnvironment;
}

/**
 * Starts (or joins) the in-process Hardhat chain, compiling `contracts/` first.
 * @example
 * const chain = await startTestChain();
 * const wallet = await chain.deployContract('MockERC1271Wallet', [chain.accounts[0].address]);
 * after(() => chain.close());
 */
export async function startTestChain(): Promise<TestChain> {
  const hre = loadHardhat();
  compiled ??= hre.run("compile", { quiet: true }) as Promise<void>;
  await compiled;

  const provider = hre.network.provider;
  const transport = custom({ request: (args) => provider.request(args).catch((error: unknown) => Promise.reject(asNodeError(error))) });
  const publicClient = createPublicClient({ chain: hardhat, transport });
  const keys = fundedKeys(hre);
  const accounts = keys.map((key) => privateKeyToAccount(key));
  const walletClients = accounts.map((account) => createWalletClient({ chain: hardhat, transport, account }));

  const snapshot = async (): Promise<Hex> => (await provider.request({ method: "evm_snapshot" })) as Hex;
  const revert = async (id: Hex): Promise<void> => {
    const reverted = await provider.request({ method: "evm_revert", params: [id] });
    if (reverted !== true) throw new Error(`evm_revert(${id}) failed: unknown or already used snapshot`);
  };
  const initial = await snapshot();
  const mined = async (hash: Hex) => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error(`transaction ${hash} reverted`);
    return receipt;
  };
  /** Deploys the reference registries from account 0, which then owns their proxies. */
  const fromFirstAccount: ReferenceDeployer = {
    async deploy(data) {
      const receipt = await mined(await walletClients[0].sendTransaction({ data }));
      if (!receipt.contractAddress) throw new Error("no contract deployed");
      return { address: receipt.contractAddress, blockNumber: Number(receipt.blockNumber) };
    },
    send: async (to, data) => void (await mined(await walletClients[0].sendTransaction({ to, data }))),
  };

  return {
    chain: hardhat,
    publicClient,
    accounts,
    keys,
    walletClients,
    walletClient: walletClients[0],
    async deployContract(name, args = [], options = {}) {
      const artifact = await hre.artifacts.readArtifact(name);
      const wallet = walletClients[options.from ?? 0];
      if (!wallet) throw new Error(`no test account at index ${options.from}`);
      const hash = await wallet.deployContract({ abi: artifact.abi as Abi, bytecode: artifact.bytecode as Hex, args });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success" || !receipt.contractAddress) throw new Error(`deploying ${name} failed`);
      return { address: receipt.contractAddress, abi: artifact.abi as Abi };
    },
    async deployAnchorRegistry(anchorer) {
      const artifact = await hre.artifacts.readArtifact("AnchorRegistry");
      const hash = await walletClients[0].deployContract({
        abi: artifact.abi as Abi,
        bytecode: artifact.bytecode as Hex,
        args: [accounts[0].address],
      });
      const address = getAddress((await mined(hash)).contractAddress!);
      const role = await publicClient.readContract({ address, abi: anchorRegistryAbi, functionName: "ANCHORER_ROLE" });
      await mined(
        await walletClients[0].writeContract({
          address,
          abi: anchorRegistryAbi,
          functionName: "grantRole",
          args: [role, accounts[anchorer].address],
        }),
      );
      return address;
    },
    async deployReferenceIdentity() {
      const { address } = await deployReferenceIdentity(fromFirstAccount);
      return { address, abi: REFERENCE_IDENTITY.abi };
    },
    async deployReferenceReputation(identityRegistry) {
      const { address } = await deployReferenceReputation(fromFirstAccount, identityRegistry);
      return { address, abi: REFERENCE_REPUTATION.abi };
    },
    rootAnchoredLogs: (registry, root) =>
      publicClient.getContractEvents({
        address: registry,
        abi: anchorRegistryAbi,
        eventName: "RootAnchored",
        args: { root },
        fromBlock: 0n,
      }),
    snapshot,
    revert,
    async mine(blocks = 1) {
      await provider.request({ method: "hardhat_mine", params: [`0x${blocks.toString(16)}`] });
    },
    close: () => revert(initial),
  };
}

/**
 * The in-process provider throws reverts as errors with `data` but no JSON-RPC `code`, so viem
 * cannot tell them from transport failures. Real nodes answer code 3 ("execution reverted") with
 * the revert data; this gives the same shape, so `ContractFunctionRevertedError` and decoded custom
 * errors work here as they do against a node.
 */
function asNodeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const { code, data } = error as Error & { code?: unknown; data?: unknown };
  if (code !== undefined || typeof data !== "string" || !data.startsWith("0x")) return error;
  return Object.assign(new Error(error.message, { cause: error }), { code: 3, data });
}

/** The private keys of the Hardhat network's funded accounts (hardhat.config.ts), the first ACCOUNT_COUNT of them. */
function fundedKeys(hre: HardhatRuntimeEnvironment): Hex[] {
  const config = hre.network.config.accounts;
  if (!Array.isArray(config)) throw new Error("startTestChain expects the hardhat network's accounts as private keys (hardhat.config.ts)");
  return config.slice(0, ACCOUNT_COUNT).map((account) => (typeof account === "string" ? account : account.privateKey) as Hex);
}
