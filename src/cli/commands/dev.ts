import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { HardhatRuntimeEnvironment } from "hardhat/types";
import { deployVrai } from "../../../scripts/deploy";
import { InvalidInputError } from "../../errors";
import { parseServeConfig } from "../../config";
import type { CliIo, Command } from "../io";
import { runService } from "./serve";

/** The repository root: Hardhat's config, `contracts/` and `artifacts/` are resolved from it whatever the working directory. */
const PROJECT_ROOT = path.resolve(__dirname, "..", "..", "..");

/** The local chain of `vrai dev`: the Hardhat network behind its JSON-RPC server, in this process. */
export type LocalChain = { url: string; chainId: number; deploymentFile: string; close(): Promise<void> };

/** The pieces of Hardhat's JSON-RPC server this command uses (hardhat/internal/hardhat-network/jsonrpc/server). */
type JsonRpcServer = { listen(): Promise<{ address: string; port: number }>; close(): Promise<void> };

/**
 * Starts the Hardhat network's JSON-RPC server on `hostname:port` in this process, compiles the contracts
 * (offline solc, see hardhat.config.ts) and deploys them, writing `<deploymentsDir>/localhost.json`.
 * The Hardhat network lives in memory, so every start is an empty chain with a fresh deployment.
 * @example const chain = await startLocalChain({ hostname: "127.0.0.1", port: 8545, deploymentsDir: "deployments" });
 */
export async function startLocalChain(options: { hostname: string; port: number; deploymentsDir: string }): Promise<LocalChain> {
  const url = `http://${options.hostname}:${options.port}`;
  // Hardhat reads these once, when it is first loaded: its config from the repository, and the `localhost`
  // network (hardhat.config.ts: RPC_URL) pointing at the server started below, which the deployment talks to.
  process.env.HARDHAT_CONFIG = path.join(PROJECT_ROOT, "hardhat.config.ts");
  process.env.HARDHAT_NETWORK = "localhost";
  process.env.RPC_URL = url;
  const hre = require("hardhat") as HardhatRuntimeEnvironment;
  if (hre.network.name !== "localhost" || (hre.network.config as { url?: string }).url !== url) {
    throw new Error(`Hardhat was loaded before vrai dev configured it (network ${hre.network.name})`);
  }
  const { TASK_COMPILE, TASK_NODE_CREATE_SERVER, TASK_NODE_GET_PROVIDER } = require("hardhat/builtin-tasks/task-names") as Record<string, string>;
  await hre.run(TASK_COMPILE, { quiet: true });
  // On a network other than `hardhat`, this subtask creates a fresh in-memory Hardhat network provider.
  const provider = (await hre.run(TASK_NODE_GET_PROVIDER, {})) as { request(args: { method: string; params?: unknown[] }): Promise<unknown> };
  await provider.request({ method: "hardhat_setLoggingEnabled", params: [false] });
  const server = (await hre.run(TASK_NODE_CREATE_SERVER, { hostname: options.hostname, port: options.port, provider })) as JsonRpcServer;
  try {
    await server.listen();
  } catch (error) {
    const inUse = (error as { code?: string }).code === "EADDRINUSE";
    throw new InvalidInputError("chain_port_in_use", inUse ? `${url} is in use: stop what listens there or set CHAIN_PORT` : `cannot start the chain on ${url}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const { deployment, file } = await deployVrai(hre, { overwrite: true, outDir: options.deploymentsDir });
    return { url, chainId: deployment.chainId, deploymentFile: file, close: () => server.close() };
  } catch (error) {
    await server.close();
    throw error;
  }
}

/** `CHAIN_PORT`, default 8545. */
function chainPort(env: NodeJS.ProcessEnv): number {
  const given = env.CHAIN_PORT === undefined || env.CHAIN_PORT === "" ? "8545" : env.CHAIN_PORT;
  const port = Number(given);
  if (!/^\d+$/.test(given) || port < 1 || port > 65535) throw new InvalidInputError("invalid_configuration", `invalid configuration: CHAIN_PORT: expected a port 1-65535, got ${JSON.stringify(given)}`);
  return port;
}

/** Whether the data directory holds a store from an earlier run. */
function hasData(dataDir: string): boolean {
  return fs.existsSync(dataDir) && fs.readdirSync(dataDir).some((name) => name !== "operator-token");
}

/**
 * `vrai dev` (`npm start`): the whole system locally with no configuration. A local chain (Hardhat's
 * JSON-RPC server on 127.0.0.1:CHAIN_PORT, default 8545) with the contracts deployed and described in
 * `DEPLOYMENTS_DIR/localhost.json` (default `./deployments`), then the service as `vrai serve` runs it on the
 * embedded PGlite store in `DATA_DIR` (default `./data`), with `RPC_URL` set to that chain. The operator token
 * is generated on first start and kept in `./data/operator-token` (mode 0600). Any variable of `vrai serve` applies.
 * The chain is in memory: a restart redeploys the contracts and says so; the data in `./data` is kept.
 */
export const command: Command = {
  name: "dev",
  summary: "dev             run everything locally: a chain on :8545 with the contracts, the service on PGlite in ./data",
  async run(args, io) {
    if (args.length > 0) throw new InvalidInputError("usage", `dev takes no arguments, got ${args.join(" ")}`);
    const dataDir = process.env.DATA_DIR || "./data";
    const deploymentsDir = process.env.DEPLOYMENTS_DIR || "./deployments";
    const port = chainPort(process.env);
    const hostname = "127.0.0.1";
    const restarted = hasData(dataDir);
    fs.mkdirSync(dataDir, { recursive: true });
    const tokenFile = path.join(dataDir, "operator-token");
    if (!process.env.OPERATOR_TOKEN) {
      if (!fs.existsSync(tokenFile)) fs.writeFileSync(tokenFile, `vop_${crypto.randomBytes(32).toString("base64url")}\n`, { mode: 0o600 });
      process.env.OPERATOR_TOKEN = fs.readFileSync(tokenFile, "utf8").trim();
      io.stdout(`operator token: in ${tokenFile}\n`);
    }
    process.env.DATA_DIR = dataDir;
    // The service's configuration is checked before the chain starts, so a bad variable costs no compile.
    try {
      parseServeConfig({ ...process.env, RPC_URL: `http://${hostname}:${port}` });
    } catch (error) {
      throw new InvalidInputError("invalid_configuration", (error as Error).message);
    }
    return runWithChain(io, { hostname, port, deploymentsDir, dataDir, restarted });
  },
};

async function runWithChain(io: CliIo, options: { hostname: string; port: number; deploymentsDir: string; dataDir: string; restarted: boolean }): Promise<number> {
  const chain = await startLocalChain(options);
  const deployment = path.relative(process.cwd(), chain.deploymentFile) || chain.deploymentFile;
  io.stdout(
    options.restarted
      ? `chain restarted empty: contracts redeployed (${deployment} rewritten); Vrai data in ${options.dataDir} kept\n`
      : `chain started: contracts deployed (${deployment})\n`,
  );
  let chainClosed = false;
  const closeChain = async () => {
    if (chainClosed) return;
    chainClosed = true;
    await chain.close();
  };
  try {
    return await runService(io, { readyNote: `chain ${chain.url} (id ${chain.chainId}, ${deployment})`, afterStop: closeChain });
  } finally {
    await closeChain();
  }
}
