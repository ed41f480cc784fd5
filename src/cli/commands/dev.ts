import crypto from "node:crypto";
import { privateKeyToAccount } from "viem/accounts";
import fs from "node:fs";
import path from "node:path";
import { parseServeConfig, type ServeConfig } from "../../app/config";
import { openDevClock } from "../../app/dev-clock-file";
import { checkCanListen } from "../../app/listener";
import { readDeployment } from "../../chain/deployment";
import { startupError } from "../../app/run";
import { DATA_DIR_FILES, lockDataDir, type DataDirLock } from "../../store/data-dir";
import { InvalidInputError } from "../../errors";
import type { CliIo, Command } from "../io";
import { LOCAL_DEPLOYER_KEY, LOCAL_PUBLISHER_KEY, startLocalChain, type ChainStart } from "../local-chain";
import { createLogger, logFormat } from "../log-format";
import { serveUntilSignal, stopOnSignals, type SignalStop } from "./serve";

/** `CHAIN_PORT`, default 8545. */
function chainPort(env: NodeJS.ProcessEnv): number {
  const given = env.CHAIN_PORT === undefined || env.CHAIN_PORT === "" ? "8545" : env.CHAIN_PORT;
  const port = Number(given);
  if (!/^\d+$/.test(given) || port < 1 || port > 65535)
    throw new InvalidInputError(
      "invalid_configuration",
      `invalid configuration: CHAIN_PORT: expected a port 1-65535, got ${JSON.stringify(given)}`,
    );
  return port;
}

/** Whether the data directory holds a store from an earlier run. */
function hasData(dataDir: string): boolean {
  return (
    fs.existsSync(dataDir) && fs.readdirSync(dataDir).some((name) => name !== DATA_DIR_FILES.operatorToken && name !== DATA_DIR_FILES.lock)
  );
}

/**
 * `vrai dev` (`npm start`): the whole system locally with no configuration. A local chain (Hardhat's
 * JSON-RPC server on 127.0.0.1:CHAIN_PORT, default 8545) with the contracts deployed and described in
 * `DEPLOYMENTS_DIR/localhost.json` (default `./deployments`), then the service as `vrai serve` runs it on the
 * embedded PGlite store in `DATA_DIR` (default `./data`), with `RPC_URL` set to that chain. The operator token
 * is generated on first start and kept in `./data/operator-token` (mode 0600). Any variable of `vrai serve` applies.
 * The chain indexer runs beside the API on the same store; daily anchoring uses the local deployer account
 * unless `ANCHOR_*` variables are set, and Vrai's ERC-8004 feedback the local ReputationRegistry, given by a Hardhat account
 * that holds no agent's token (`LOCAL_PUBLISHER_KEY`), unless `REPUTATION_*` variables are set. The chain's journal is `./data/chain.jsonl`:
 * a restart replays it, so the chain keeps its state too.
 */
export const command: Command = {
  name: "dev",
  usage: "dev",
  summary: "run everything locally: a chain on :8545 with the contracts, the service and the indexer on PGlite in ./data",
  help: [
    "Variables: PORT (8080), CHAIN_PORT (8545), DATA_DIR (./data: the store, the operator token, the chain's journal and the",
    "development clock), DEPLOYMENTS_DIR (./deployments), and any of vrai serve's (.env.example).",
    "While it runs: vrai dev-clock advance --days N moves its clock and its chain's time whole days forward, each day's daily",
    "recompute and anchoring run; vrai dev-identity <address> mints an ERC-8004 identity for a wallet on its chain.",
    "Ctrl-C (SIGINT) or SIGTERM stops it cleanly; started again it keeps its data, its chain and its clock.",
  ].join("\n"),
  async run(args, io) {
    if (args.length > 0) throw new InvalidInputError("usage", `dev takes no arguments, got ${args.join(" ")}`);
    // From the first moment: a Ctrl-C while the chain starts still ends through the stop (issue #31).
    const stop = stopOnSignals();
    const env = process.env;
    const dataDir = env.DATA_DIR || "./data";
    const restarted = hasData(dataDir);
    // The data directory is this process's before anything starts (issue #33): another vrai on it is refused at once.
    const lock = lockDataDir(dataDir, "vrai dev");
    try {
      return await startDev(io, env, { dataDir, restarted, lock, stop });
    } finally {
      lock.release();
    }
  },
};

/** `vrai dev` once it holds its data directory. */
async function startDev(
  io: CliIo,
  env: NodeJS.ProcessEnv,
  options: { dataDir: string; restarted: boolean; lock: DataDirLock; stop: SignalStop },
): Promise<number> {
  const { dataDir } = options;
  const deploymentsDir = env.DEPLOYMENTS_DIR || "./deployments";
  const port = chainPort(env);
  const hostname = "127.0.0.1";
  const deploymentFile = path.join(deploymentsDir, "localhost.json");
  // What `vrai dev` sets itself; any variable of `vrai serve` given by hand still applies.
  const local: Record<string, string> = {
    DATA_DIR: dataDir,
    RPC_URL: `http://${hostname}:${port}`,
    DEPLOYMENT: deploymentFile,
    CONFIRMATIONS: "0",
    // The local chain never reorganises: a day's anchor is final once mined, and its feedback given in the same move.
    ANCHOR_CONFIRMATIONS: env.ANCHOR_CONFIRMATIONS || "1",
    // Webhooks to a receiver on this machine (http://localhost:...), as a developer tries them (issue #28).
    WEBHOOK_ALLOW_LOOPBACK: env.WEBHOOK_ALLOW_LOOPBACK || "true",
    // One developer, no balancer: ready once the cache is filled, without reading its own scores first (issue #30).
    WARM_UP_REQUESTS: env.WARM_UP_REQUESTS || "0",
  };
  const tokenFile = path.join(dataDir, DATA_DIR_FILES.operatorToken);
  if (!env.OPERATOR_TOKEN) {
    if (!fs.existsSync(tokenFile)) fs.writeFileSync(tokenFile, `vop_${crypto.randomBytes(32).toString("base64url")}\n`, { mode: 0o600 });
    local.OPERATOR_TOKEN = fs.readFileSync(tokenFile, "utf8").trim();
    io.stdout(`operator token: in ${tokenFile}\n`);
  }
  // Daily anchoring on the local chain, unless anchoring was configured by hand.
  if (!["ANCHOR_PRIVATE_KEY", "ANCHOR_RPC_URL", "ANCHOR_REGISTRY", "ANCHOR_DEPLOYMENT"].some((name) => env[name])) {
    local.ANCHOR_PRIVATE_KEY = LOCAL_DEPLOYER_KEY;
    local.ANCHOR_DEPLOYMENT = deploymentFile;
  }
  // The service's configuration is checked before the chain starts, so a bad variable costs no compile.
  const config = parseServeConfig({ ...env, ...local });
  await checkCanListen(config.HOST, config.PORT).catch((error: unknown) => {
    throw startupError(error);
  });
  return runWithChain(io, config, {
    hostname,
    port,
    deploymentsDir,
    dataDir,
    restarted: options.restarted,
    stop: options.stop,
    lock: options.lock,
  });
}

/**
 * Vrai's ERC-8004 feedback on the local chain, unless configured by hand: the deployment's ReputationRegistry, given by
 * Hardhat's account #19 (no agent holds a token of it: the registry refuses feedback from a token's owner), the files
 * named under PUBLIC_URL or the API's own URL. A deployment made before it had one gives none, and the line says why.
 */
function localFeedback(config: ServeConfig, deploymentFile: string): { config: Partial<ServeConfig>; line: string } {
  const configured = [config.REPUTATION_REGISTRY, config.REPUTATION_DEPLOYMENT, config.REPUTATION_PRIVATE_KEY].some((v) => v !== undefined);
  if (configured) return { config: {}, line: "ERC-8004 feedback: as REPUTATION_* configure it" };
  const registry = readDeployment(deploymentFile).contracts.ReputationRegistry;
  if (!registry)
    return {
      config: {},
      line:
        `ERC-8004 feedback off: ${deploymentFile} names no ReputationRegistry (deployed before vrai dev had one); ` +
        `remove ${DATA_DIR_FILES.chainJournal} from the data directory to deploy the contracts again on an empty chain`,
    };
  return {
    config: { REPUTATION_DEPLOYMENT: deploymentFile, REPUTATION_PRIVATE_KEY: LOCAL_PUBLISHER_KEY },
    line:
      `ERC-8004 feedback: ReputationRegistry ${registry.address}, given by ${privateKeyToAccount(LOCAL_PUBLISHER_KEY).address} ` +
      "(turn it on per agent: PUT /v1/agents/{id}/erc8004-publishing)",
  };
}

/** The line saying where this start's chain came from. */
function chainStartLine(start: ChainStart, deployment: string, journal: string, dataDir: string, hadData: boolean): string {
  switch (start.type) {
    case "restored":
      return `chain restored: ${start.calls} calls replayed from ${journal} (${start.blocks} blocks, same hashes); contracts as in ${deployment}\n`;
    case "redeployed":
      return `chain restarted empty (${start.reason}): contracts redeployed (${deployment} rewritten); Vrai data in ${dataDir} kept\n`;
    case "deployed":
      return hadData
        ? `chain started empty (no chain journal in ${dataDir}): contracts deployed (${deployment} rewritten); Vrai data in ${dataDir} kept\n`
        : `chain started: contracts deployed (${deployment})\n`;
  }
}

async function runWithChain(
  io: CliIo,
  config: ServeConfig,
  options: {
    hostname: string;
    port: number;
    deploymentsDir: string;
    dataDir: string;
    restarted: boolean;
    stop: SignalStop;
    lock: DataDirLock;
  },
): Promise<number> {
  const journalFile = path.join(options.dataDir, DATA_DIR_FILES.chainJournal);
  // The development clock (issue #31): the service's clock and the chain's time, moved by `vrai dev-clock`.
  const { clock, persist } = openDevClock(options.dataDir);
  const chain = await startLocalChain({ ...options, journalFile, now: clock.now });
  const relative = (file: string) => path.relative(process.cwd(), file) || file;
  const deployment = relative(chain.deploymentFile);
  io.stdout(chainStartLine(chain.start, deployment, relative(journalFile), options.dataDir, options.restarted));
  let chainClosed = false;
  const closeChain = async () => {
    if (chainClosed) return;
    chainClosed = true;
    await chain.close();
  };
  try {
    if (options.stop.asked()) {
      await closeChain();
      io.stdout("vrai stopped\n");
      return 0;
    }
    const feedback = localFeedback(config, chain.deploymentFile);
    io.stdout(`${feedback.line}\n`);
    return await serveUntilSignal(
      io,
      { ...config, RPC_URL: chain.url, DEPLOYMENT: chain.deploymentFile, ...feedback.config },
      {
        stop: options.stop,
        devClock: { clock, persist, moveChainTo: chain.moveTimeTo },
        dataDirLock: options.lock,
        readyNote: `chain ${chain.url} (id ${chain.chainId}, ${deployment}, indexed)`,
        // Readable lines, one per entry, for the person who runs it (vrai serve logs JSON).
        logger: createLogger(config.LOG_LEVEL, logFormat("dev", process.stdout.isTTY === true)),
        afterStop: closeChain,
      },
    );
  } finally {
    await closeChain();
  }
}
