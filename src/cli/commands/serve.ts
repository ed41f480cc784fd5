import pino, { type Logger } from "pino";
import { createPublicClient, http, type PublicClient } from "viem";
import { InvalidInputError } from "../../errors";
import { startApiServer, type ApiServer } from "../../api/server";
import { startIndexerAlongside } from "../../indexer/alongside";
import { parseServeConfig } from "../../config";
import { anchorWriterFromConfig, type AnchorWriter } from "../../service/anchoring";
import { openDb, type Db } from "../../store/db";
import type { CliIo, Command } from "../io";

/**
 * What `vrai dev` adds around the service: more on the ready line, work started beside the API on the same
 * store (stopped before it), and what to stop after the store closed.
 */
export type ServeHooks = {
  readyNote?: string;
  alongside?: (context: { db: Db; logger: Logger; server: ApiServer }) => Promise<{ stop(): Promise<void> }>;
  afterStop?: () => Promise<void>;
};

/**
 * `vrai serve`: the API, the schedulers and the store, configured from environment variables.
 * Stops cleanly on SIGINT/SIGTERM: no new connections, in-flight requests finish, the store closes.
 */
export const command: Command = {
  name: "serve",
  summary: "serve           run the Vrai service from environment variables (DATABASE_URL, PORT, OPERATOR_TOKEN, ...)",
  async run(args, io) {
    if (args.length > 0) throw new InvalidInputError("usage", `serve takes no arguments, got ${args.join(" ")}`);
    return runService(io);
  },
};

/** Runs the service from the environment until SIGINT/SIGTERM, then stops it cleanly; returns the exit code. */
export async function runService(io: CliIo, hooks: ServeHooks = {}): Promise<number> {
  let config;
  try {
    config = parseServeConfig(process.env);
  } catch (error) {
    throw new InvalidInputError("invalid_configuration", (error as Error).message);
  }
  const logger = pino({ level: config.LOG_LEVEL });
  let publicClient: PublicClient | undefined;
  let chainId: number | undefined;
  if (config.RPC_URL) {
    publicClient = createPublicClient({ transport: http(config.RPC_URL) }) as PublicClient;
    chainId = await publicClient.getChainId();
  }
  let anchorWriter: AnchorWriter | undefined;
  if (config.ANCHOR_PRIVATE_KEY) {
    const rpcUrl = (config.ANCHOR_RPC_URL ?? config.RPC_URL) as string;
    try {
      anchorWriter = anchorWriterFromConfig({ privateKey: config.ANCHOR_PRIVATE_KEY as `0x${string}`, rpcUrl, registry: config.ANCHOR_REGISTRY, deploymentFile: config.ANCHOR_DEPLOYMENT });
    } catch (error) {
      throw new InvalidInputError("invalid_configuration", `invalid configuration: ANCHOR_DEPLOYMENT: ${(error as Error).message}`);
    }
  }
  const db = await openDb({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
  const server = await startApiServer({
    db, logger, operatorToken: config.OPERATOR_TOKEN, port: config.PORT, host: config.HOST,
    overload: { maxInFlight: config.OVERLOAD_MAX_IN_FLIGHT, maxLoopDelayMs: config.OVERLOAD_MAX_LOOP_DELAY_MS },
    rateLimit: { perMinute: config.RATE_LIMIT_PER_MINUTE, burst: Math.max(10, Math.ceil(config.RATE_LIMIT_PER_MINUTE / 5)) },
    scoreCacheBytes: config.SCORE_CACHE_MB * 2 ** 20,
    proofSources: {
      githubApiBaseUrl: config.GITHUB_API_BASE_URL,
      walletChainId: chainId,
      publicClientFor: (id) => (id === chainId ? publicClient : undefined),
    },
    schedule: { intervalMs: config.SCHEDULE_INTERVAL_MS },
    anchorWriter,
  });
  let companion: { stop(): Promise<void> } | undefined;
  try {
    companion = hooks.alongside
      ? await hooks.alongside({ db, logger, server })
      : config.RPC_URL && config.DEPLOYMENT
        ? await startIndexerAlongside({
            db, logger, server, databaseUrl: config.DATABASE_URL, rpcUrl: config.RPC_URL, deploymentFile: config.DEPLOYMENT,
            confirmations: config.CONFIRMATIONS,
          })
        : undefined;
  } catch (error) {
    await server.close();
    await db.close();
    throw error;
  }
  const indexed = !hooks.alongside && config.RPC_URL && config.DEPLOYMENT ? ` · chain ${config.RPC_URL} (indexed from ${config.DEPLOYMENT})` : "";
  io.stdout(`vrai ready: api ${server.url}/v1 · agent pages ${server.url}/agents/{id}${hooks.readyNote ? ` · ${hooks.readyNote}` : ""}${indexed} · store ${config.DATABASE_URL ? "postgresql" : `pglite ${config.DATA_DIR}`}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  logger.info("stopping: finishing in-flight requests");
  await companion?.stop();
  await server.close();
  await db.close();
  await hooks.afterStop?.();
  io.stdout("vrai stopped\n");
  return 0;
}
