/**
 * The local chain of `vrai dev`: the Hardhat network behind Hardhat's own JSON-RPC server, in this process,
 * with Vrai's contracts deployed. The Hardhat network keeps its state in memory only, so every call that
 * changes the chain is appended to a journal; the next start replays the journal on a chain with the same
 * genesis and block timestamps, which rebuilds the same blocks (checked hash by hash). A journal that does
 * not replay to the same blocks is set aside and the contracts are deployed again on an empty chain.
 */
import fs from "node:fs";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { deployVrai } from "../../scripts/deploy";
import { LOCAL_ACCOUNT_KEYS } from "../chain/local-accounts";
import { InvalidInputError } from "../errors";
import { PROJECT_ROOT } from "../project-root";

// Hardhat's config, `contracts/` and `artifacts/` are resolved from PROJECT_ROOT whatever the working directory.

/**
 * Private key of the first account of Hardhat's default mnemonic ("test test ... junk"), public knowledge and
 * funded only on local chains: the local deployment gives it every role, the anchorer role included.
 */
export const LOCAL_DEPLOYER_KEY = LOCAL_ACCOUNT_KEYS[0];

/**
 * Private key of the twentieth account of Hardhat's default mnemonic (0x8626f6940E2eb28930eFb4CeF49B2d1F2C9C1199), public
 * knowledge and funded only on local chains: `vrai dev` gives its ERC-8004 feedback from it. The local deployment and
 * `vrai dev-identity` make it hold no identity token (the reputation registry refuses feedback from a token's owner).
 */
export const LOCAL_PUBLISHER_KEY = LOCAL_ACCOUNT_KEYS[19];

/** JSON-RPC methods of the Hardhat network that change the chain or what the next block will be. */
const MUTATING_METHODS = new Set([
  "eth_sendTransaction",
  "eth_sendRawTransaction",
  "evm_mine",
  "hardhat_mine",
  "evm_increaseTime",
  "evm_setNextBlockTimestamp",
  "evm_snapshot",
  "evm_revert",
  "evm_setAutomine",
  "evm_setBlockGasLimit",
  "hardhat_setBalance",
  "hardhat_setCode",
  "hardhat_setNonce",
  "hardhat_setStorageAt",
  "hardhat_impersonateAccount",
  "hardhat_stopImpersonatingAccount",
  "hardhat_setCoinbase",
  "hardhat_setNextBlockBaseFeePerGas",
  "hardhat_setPrevRandao",
  "hardhat_setMinGasPrice",
  "hardhat_dropTransaction",
  "hardhat_reset",
]);

/** How a start got its chain. */
export type ChainStart =
  | { type: "deployed" }
  | { type: "restored"; calls: number; blocks: number }
  | { type: "redeployed"; reason: string };

export type LocalChain = {
  url: string;
  chainId: number;
  deploymentFile: string;
  journalFile: string;
  start: ChainStart;
  /**
   * Moves the chain's time to `t` (whole Unix seconds) when it is behind: a block is mined at `t`, and later blocks
   * go on from it. Through the journal (`evm_setNextBlockTimestamp`, then `evm_mine` with its block's time), so a
   * restart replays to the same blocks.
   */
  moveTimeTo(t: number): Promise<void>;
  close(): Promise<void>;
};

type RpcArgs = { method: string; params?: unknown[] };
type Provider = {
  request(args: RpcArgs): Promise<unknown>;
  addListener(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: string, listener: (...args: unknown[]) => void): unknown;
};
/** The pieces of Hardhat's JSON-RPC server used here (hardhat/internal/hardhat-network/jsonrpc/server). */
type JsonRpcServer = { listen(): Promise<{ address: string; port: number }>; close(): Promise<void> };

/** First line of a journal: the genesis date the chain was created with. */
type JournalHeader = { genesis: string };
/** One call that changed the chain: the timestamp of the first block it mined, and the head it left. */
type JournalEntry = { method: string; params: unknown[]; failed: boolean; minedAt: number | null; head: string };

type Block = { number: number; hash: string; timestamp: number };

async function blockAt(provider: Provider, tag: number | "latest"): Promise<Block> {
  const block = (await provider.request({
    method: "eth_getBlockByNumber",
    params: [tag === "latest" ? tag : `0x${tag.toString(16)}`, false],
  })) as {
    number: string;
    hash: string;
    timestamp: string;
  };
  return { number: Number(block.number), hash: block.hash, timestamp: Number(block.timestamp) };
}

/** Reads a journal; a torn last line (a crash mid-write) is dropped. */
function readJournal(file: string): { header: JournalHeader; entries: JournalEntry[] } | undefined {
  if (!fs.existsSync(file)) return undefined;
  const lines = fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "");
  const parsed: unknown[] = [];
  for (const [i, line] of lines.entries()) {
    try {
      parsed.push(JSON.parse(line));
    } catch (error) {
      if (i === lines.length - 1) break;
      throw new Error(`${file}: line ${i + 1} is not JSON`, { cause: error });
    }
  }
  const [header, ...entries] = parsed as [JournalHeader, ...JournalEntry[]];
  if (typeof header?.genesis !== "string") throw new Error(`${file}: no genesis header`);
  return { header, entries };
}

/** Replays journal entries on a fresh chain created with the journal's genesis; throws at the first block that differs. */
async function replay(provider: Provider, entries: JournalEntry[]): Promise<void> {
  for (const [i, entry] of entries.entries()) {
    if (entry.minedAt !== null) await provider.request({ method: "evm_setNextBlockTimestamp", params: [entry.minedAt] });
    try {
      await provider.request({ method: entry.method, params: entry.params });
    } catch (error) {
      if (!entry.failed) throw new Error(`call ${i + 1} (${entry.method}) failed on replay: ${(error as Error).message}`);
    }
    const head = await blockAt(provider, "latest");
    if (head.hash !== entry.head)
      throw new Error(`call ${i + 1} (${entry.method}) led to block ${head.number} ${head.hash}, not ${entry.head}`);
  }
}

/**
 * The provider as the JSON-RPC server sees it: calls that change the chain run one at a time and are appended
 * to the journal in the order the chain applied them, with the timestamp of the first block each one mined.
 */
function journaled(provider: Provider, file: string): Provider {
  let queue: Promise<unknown> = Promise.resolve();
  const record = async (args: RpcArgs): Promise<unknown> => {
    const before = await blockAt(provider, "latest");
    let result: unknown;
    let failure: { error: unknown } | undefined;
    try {
      result = await provider.request(args);
    } catch (error) {
      failure = { error };
    }
    const after = await blockAt(provider, "latest");
    // A failed call that changed nothing is not replayed; one that mined a block (a reverted transaction) is.
    if (failure === undefined || after.hash !== before.hash) {
      const minedAt = after.number > before.number ? (await blockAt(provider, before.number + 1)).timestamp : null;
      const entry: JournalEntry = {
        method: args.method,
        params: args.params ?? [],
        failed: failure !== undefined,
        minedAt,
        head: after.hash,
      };
      fs.appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
    }
    if (failure !== undefined) throw failure.error;
    return result;
  };
  return {
    request(args) {
      if (!MUTATING_METHODS.has(args.method)) return provider.request(args);
      const run = queue.then(() => record(args));
      queue = run.catch(() => undefined);
      return run;
    },
    addListener: (event, listener) => provider.addListener(event, listener),
    removeListener: (event, listener) => provider.removeListener(event, listener),
  };
}

/**
 * Starts the local chain on `hostname:port`: compiles the contracts (offline solc, hardhat.config.ts), then
 * either restores the chain from `journalFile` (when it and the deployment file exist) or starts an empty one
 * and deploys the contracts, writing `<deploymentsDir>/localhost.json`. A restored chain's time goes on from `now()`
 * (Unix seconds; default the machine's clock, `vrai dev`'s development clock).
 * @example const chain = await startLocalChain({ hostname: "127.0.0.1", port: 8545, deploymentsDir: "deployments", journalFile: "data/chain.jsonl" });
 */
export async function startLocalChain(options: {
  hostname: string;
  port: number;
  deploymentsDir: string;
  journalFile: string;
  now?: () => number;
}): Promise<LocalChain> {
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  const url = `http://${options.hostname}:${options.port}`;
  // Hardhat reads these once, when it is first loaded: its config from the repository, and the `localhost`
  // network (hardhat.config.ts: RPC_URL) pointing at the server started below, which the deployment talks to.
  process.env.HARDHAT_CONFIG = path.join(PROJECT_ROOT, "hardhat.config.ts");
  process.env.HARDHAT_NETWORK = "localhost";
  process.env.RPC_URL = url;
  // hardhat.config.ts is TypeScript, loaded through tsx (already registered when the sources run through it).
  require("tsx/cjs");
  const hre = require("hardhat") as HardhatRuntimeEnvironment;
  if (hre.network.name !== "localhost" || (hre.network.config as { url?: string }).url !== url) {
    throw new Error(`Hardhat was loaded before the local chain configured it (network ${hre.network.name})`);
  }
  const { TASK_COMPILE, TASK_NODE_CREATE_SERVER, TASK_NODE_GET_PROVIDER } = require("hardhat/builtin-tasks/task-names") as Record<
    string,
    string
  >;
  await hre.run(TASK_COMPILE, { quiet: true });

  // On a network other than `hardhat`, this subtask creates a fresh in-memory Hardhat network from the config.
  const createChain = async (genesis: string): Promise<Provider> => {
    hre.config.networks.hardhat.initialDate = genesis;
    const provider = (await hre.run(TASK_NODE_GET_PROVIDER, {})) as Provider;
    await provider.request({ method: "hardhat_setLoggingEnabled", params: [false] });
    return provider;
  };
  const deploymentFile = path.join(options.deploymentsDir, "localhost.json");
  let start: ChainStart = { type: "deployed" };
  let provider: Provider | undefined;
  try {
    const journal = readJournal(options.journalFile);
    if (journal !== undefined && !fs.existsSync(deploymentFile)) throw new Error(`${deploymentFile} is missing`);
    if (journal !== undefined) {
      provider = await createChain(journal.header.genesis);
      await replay(provider, journal.entries);
      const last = await blockAt(provider, "latest");
      // Chain time continues from now, not from the last replayed block's time.
      await provider.request({ method: "evm_setNextBlockTimestamp", params: [Math.max(now(), last.timestamp + 1)] });
      start = { type: "restored", calls: journal.entries.length, blocks: last.number };
    }
  } catch (error) {
    provider = undefined;
    const kept = `${options.journalFile}.unreplayable-${Date.now()}`;
    if (fs.existsSync(options.journalFile)) fs.renameSync(options.journalFile, kept);
    start = { type: "redeployed", reason: `${(error as Error).message}; journal kept in ${kept}` };
  }
  if (provider === undefined) {
    const genesis = new Date(now() * 1000).toISOString();
    provider = await createChain(genesis);
    fs.mkdirSync(path.dirname(options.journalFile), { recursive: true });
    fs.writeFileSync(options.journalFile, `${JSON.stringify({ genesis } satisfies JournalHeader)}\n`, { mode: 0o600 });
  }

  const chain = journaled(provider, options.journalFile);
  const server = (await hre.run(TASK_NODE_CREATE_SERVER, {
    hostname: options.hostname,
    port: options.port,
    provider: chain,
  })) as JsonRpcServer;
  const moveTimeTo = async (t: number) => {
    if (t <= (await blockAt(chain, "latest")).timestamp) return;
    await chain.request({ method: "evm_setNextBlockTimestamp", params: [t] });
    await chain.request({ method: "evm_mine", params: [] });
  };
  try {
    await server.listen();
  } catch (error) {
    const inUse = (error as { code?: string }).code === "EADDRINUSE";
    throw new InvalidInputError(
      "chain_port_in_use",
      inUse
        ? `${url} is in use: stop what listens there or set CHAIN_PORT`
        : `cannot start the chain on ${url}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  try {
    if (start.type === "restored") {
      // The time realignment above takes effect with the next block: mine it now, through the journal.
      await hre.network.provider.request({ method: "evm_mine", params: [] });
      const chainId = Number(await hre.network.provider.request({ method: "eth_chainId" }));
      return { url, chainId, deploymentFile, journalFile: options.journalFile, start, moveTimeTo, close: () => server.close() };
    }
    const { deployment, file } = await deployVrai(hre, { overwrite: true, outDir: options.deploymentsDir });
    return {
      url,
      chainId: deployment.chainId,
      deploymentFile: file,
      journalFile: options.journalFile,
      start,
      moveTimeTo,
      close: () => server.close(),
    };
  } catch (error) {
    await server.close();
    throw error;
  }
}
