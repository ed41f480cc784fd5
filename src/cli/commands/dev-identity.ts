import path from "node:path";
import { createPublicClient, createWalletClient, getAddress, http, isAddress, parseEther, parseEventLogs, type Address } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { identityRegistryAbi } from "../../chain/abi/identityRegistry";
import { DeploymentFileError, readDeployment } from "../../chain/deployment";
import { shortMessageOf } from "../../chain/short-message";
import { InvalidInputError } from "../../errors";
import { parseFlags } from "../flags";
import type { Command } from "../io";
import { LOCAL_DEPLOYER_KEY } from "../local-chain";

const USAGE = "dev-identity <address> [--uri URI] [--rpc URL] [--deployment FILE]";
/** Hardhat's chain id: the only chain this command mints on. */
const LOCAL_CHAIN_ID = 31337;
/** What a wallet is given when it holds less than `FUND_BELOW`, for the transactions it sends (submitProof, setAgentURI). */
const FUND = parseEther("1");
const FUND_BELOW = parseEther("0.1");

/**
 * `vrai dev-identity <address>`: an ERC-8004 identity on `vrai dev`'s local chain for a wallet (issue #31), so the
 * ERC-8004 proof (V6), the SDK Derived Score (part A) and the Platform Network Score (part N) can be tried locally.
 * The local deployer (Hardhat's first account) registers it in the deployment's IdentityRegistry, gives it to the
 * wallet, and funds the wallet with 1 ETH if it holds under 0.1; it prints the token id and the proof's subject.
 */
export const command: Command = {
  name: "dev-identity",
  usage: USAGE,
  summary: "mint an ERC-8004 identity for a wallet on vrai dev's local chain (and fund the wallet), printing its token id",
  help: [
    "The identity is registered by Hardhat's first account in the IdentityRegistry of the deployment file, then",
    "transferred to <address>, which then owns it: it proves it (kind erc8004, subject <chainId>:<registry>:<token id>)",
    "and submits proof records for it. Only on chain 31337 (a local Hardhat chain).",
    "--rpc: the chain (RPC_URL, else http://127.0.0.1:8545); --deployment: DEPLOYMENTS_DIR/localhost.json, else deployments/localhost.json.",
    "--uri: the identity's agent URI (default: none).",
  ].join("\n"),
  async run(args, io) {
    const { values, positionals } = parseFlags(
      args,
      { uri: { type: "string" }, rpc: { type: "string" }, deployment: { type: "string" } },
      USAGE,
    );
    if (positionals.length !== 1)
      throw new InvalidInputError("usage", `expected one wallet address, got ${positionals.length} (usage: vrai ${USAGE})`);
    if (!isAddress(positionals[0], { strict: false })) throw new InvalidInputError("usage", `not an address: ${positionals[0]}`);
    const wallet = getAddress(positionals[0]);
    const rpcUrl = values.rpc ?? process.env.RPC_URL ?? "http://127.0.0.1:8545";
    if (!/^https?:\/\/\S+$/.test(rpcUrl)) throw new InvalidInputError("usage", `--rpc: expected an http(s) URL, got ${rpcUrl}`);
    const file = values.deployment ?? path.join(process.env.DEPLOYMENTS_DIR || "deployments", "localhost.json");
    let registry: Address;
    try {
      registry = getAddress(readDeployment(file).contracts.IdentityRegistry.address);
    } catch (error) {
      if (error instanceof DeploymentFileError)
        throw new InvalidInputError("usage", `--deployment: ${error.message} (is vrai dev running here?)`, { cause: error });
      throw error;
    }
    const transport = http(rpcUrl, { retryCount: 0 });
    const publicClient = createPublicClient({ transport });
    const chainId = await publicClient.getChainId().catch((error: unknown) => {
      throw new InvalidInputError(
        "chain_unreachable",
        `cannot reach the chain at ${rpcUrl}: is vrai dev running? (${shortMessageOf(error)})`,
        { cause: error },
      );
    });
    if (chainId !== LOCAL_CHAIN_ID)
      throw new InvalidInputError(
        "not_local_chain",
        `${rpcUrl} serves chain ${chainId}: dev-identity mints on a local Hardhat chain (31337) only`,
      );
    const chain = {
      id: chainId,
      name: "local",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    } as const;
    const deployer = createWalletClient({ chain, transport, account: privateKeyToAccount(LOCAL_DEPLOYER_KEY) });
    const mined = async (hash: `0x${string}`) => {
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success") throw new Error(`transaction ${hash} reverted`);
      return receipt;
    };

    // Registered to the deployer (register mints to its sender), then given to the wallet.
    const registered = await mined(
      await deployer.writeContract({ address: registry, abi: identityRegistryAbi, functionName: "register", args: [values.uri ?? ""] }),
    );
    const [event] = parseEventLogs({ abi: identityRegistryAbi, eventName: "Registered", logs: registered.logs });
    if (event === undefined) throw new Error(`transaction ${registered.transactionHash} registered no identity`);
    const tokenId = event.args.agentId;
    if (wallet !== deployer.account.address) {
      await mined(
        await deployer.writeContract({
          address: registry,
          abi: identityRegistryAbi,
          functionName: "transferFrom",
          args: [deployer.account.address, wallet, tokenId],
        }),
      );
    }
    const funded = (await publicClient.getBalance({ address: wallet })) < FUND_BELOW;
    if (funded) await mined(await deployer.sendTransaction({ to: wallet, value: FUND }));
    const subject = `${chainId}:${registry.toLowerCase()}:${tokenId}`;
    io.stdout(
      `ERC-8004 identity ${tokenId} minted for ${wallet} ` +
        `(IdentityRegistry ${registry}, chain ${chainId}, tx ${registered.transactionHash})` +
        `${funded ? "; the wallet was given 1 ETH" : ""}\n`,
    );
    io.stdout(`token id: ${tokenId}\n`);
    io.stdout(`erc8004 proof subject: ${subject}\n`);
    return 0;
  },
};
