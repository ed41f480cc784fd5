/**
 * The service as `vrai serve` and `vrai dev` run it: from its configuration to a running system
 * (store, API, schedulers, anchoring, the chain indexer beside it), and back down in order.
 */
import pino, { type Logger } from "pino";
import { createPublicClient, getAddress, http, type PublicClient } from "viem";
import { reputationRegistryAbi } from "../chain/abi/reputationRegistry";
import { createAnchorWriter, type AnchorWriter } from "../chain/anchor-writer";
import { readDeployment } from "../chain/deployment";
import { createFeedbackWriter } from "../chain/reputation-registry";
import { shortMessageOf } from "../chain/short-message";
import { createAccountLocks, type AccountLocks } from "../chain/signer";
import { InvalidInputError } from "../errors";
import type { DataDirLock } from "../store/data-dir";
import { openDb } from "../store/db";
import type { ServeConfig } from "./config";
import { followedDeployment, startIndexerAlongside, type IndexerAlongside } from "./indexer";
import { ListenError } from "./listener";
import { startApiServer, type ApiServer, type DevClockOptions, type Erc8004Options } from "./server";

/** A running service. */
export type RunningService = {
  server: ApiServer;
  /** Stops the indexer, then the API (in-flight requests finish), then closes the store. */
  stop(): Promise<void>;
};

/** The anchor writer of the configuration, or none when anchoring is off (no ANCHOR_PRIVATE_KEY). */
function anchorWriterOf(config: ServeConfig, locks: AccountLocks): AnchorWriter | undefined {
  if (!config.ANCHOR_PRIVATE_KEY) return undefined;
  // The configuration's own check makes sure one of them is set.
  const rpcUrl = config.ANCHOR_RPC_URL ?? config.RPC_URL ?? "";
  let registry = config.ANCHOR_REGISTRY;
  if (config.ANCHOR_DEPLOYMENT) {
    try {
      registry = readDeployment(config.ANCHOR_DEPLOYMENT).contracts.AnchorRegistry.address;
    } catch (error) {
      throw new InvalidInputError(
        "invalid_configuration",
        `invalid configuration: ANCHOR_DEPLOYMENT: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  if (!registry)
    throw new InvalidInputError(
      "invalid_configuration",
      "invalid configuration: ANCHOR_REGISTRY: anchoring needs exactly one of ANCHOR_REGISTRY and ANCHOR_DEPLOYMENT",
    );
  return createAnchorWriter({ privateKey: config.ANCHOR_PRIVATE_KEY, rpcUrl, registry, timeoutMs: config.ANCHOR_RPC_TIMEOUT_MS }, locks);
}

/**
 * Where the configuration gives ERC-8004 feedback (REPUTATION_*), read from the registry at start (its chain and the
 * identity registry whose agents it keeps feedback about), and this instance's publisher when it has the key; none
 * without a registry.
 */
async function erc8004Of(config: ServeConfig, locks: AccountLocks): Promise<Erc8004Options | undefined> {
  let registry = config.REPUTATION_REGISTRY;
  if (config.REPUTATION_DEPLOYMENT) {
    const file = config.REPUTATION_DEPLOYMENT;
    try {
      registry = readDeployment(file).contracts.ReputationRegistry?.address;
    } catch (error) {
      throw new InvalidInputError("invalid_configuration", `invalid configuration: REPUTATION_DEPLOYMENT: ${shortMessageOf(error)}`);
    }
    if (!registry)
      throw new InvalidInputError(
        "invalid_configuration",
        `invalid configuration: REPUTATION_DEPLOYMENT: ${file} names no ReputationRegistry`,
      );
  }
  if (!registry) return undefined;
  const rpcUrl = config.REPUTATION_RPC_URL ?? config.RPC_URL ?? "";
  const client = createPublicClient({ transport: http(rpcUrl, { retryCount: 1 }) });
  const reputation = registry;
  const [chainId, identityRegistry] = await Promise.all([
    client.getChainId(),
    client.readContract({ address: reputation, abi: reputationRegistryAbi, functionName: "getIdentityRegistry" }),
  ]).catch((error: unknown) => {
    throw new InvalidInputError(
      "reputation_registry_unreachable",
      `cannot read the reputation registry ${reputation} at ${rpcUrl} (${shortMessageOf(error)}): ` +
        "set REPUTATION_REGISTRY (or REPUTATION_DEPLOYMENT) and REPUTATION_RPC_URL " +
        "to an ERC-8004 reputation registry and its chain's JSON-RPC",
      { cause: error },
    );
  });
  return {
    target: { chainId, registry: getAddress(reputation), identityRegistry: getAddress(identityRegistry) },
    writer:
      config.REPUTATION_PRIVATE_KEY === undefined
        ? undefined
        : createFeedbackWriter({ privateKey: config.REPUTATION_PRIVATE_KEY, rpcUrl, registry: reputation }, locks),
    publicUrl: config.PUBLIC_URL,
  };
}

/**
 * A listener that could not start, as one line naming the variable that moves it (issue #33): a
 * configuration problem, exit 2, like any other bad variable.
 */
export function startupError(error: unknown): unknown {
  if (!(error instanceof ListenError)) return error;
  const [port, host] = error.which === "metrics" ? ["METRICS_PORT", "METRICS_HOST"] : ["PORT", "HOST"];
  const fix =
    error.reason === "not_here"
      ? `set ${host} to an address of this machine`
      : `set ${port} to a free port${error.reason === "in_use" ? " (or stop what listens there)" : ""}`;
  return new InvalidInputError(error.reason === "in_use" ? "port_in_use" : "cannot_listen", `${error.message}: ${fix}`, { cause: error });
}

/**
 * Starts the service of `config`: the store (PostgreSQL at DATABASE_URL, or PGlite in DATA_DIR), the
 * API on HOST:PORT with its schedulers and anchoring, and, with RPC_URL and DEPLOYMENT, the chain
 * indexer beside it on the same store. `logger` replaces the JSON logger at LOG_LEVEL (`vrai dev` at a terminal);
 * `holder` names the process in a PGlite data directory's lock (what another process that finds it held is told),
 * `dataDirLock` is that lock when the caller took it already;
 * `devClock` is `vrai dev`'s development clock, which the service and its indexer then run on.
 */
export async function startService(
  config: ServeConfig,
  options: { logger?: Logger; holder?: string; dataDirLock?: DataDirLock; devClock?: DevClockOptions } = {},
): Promise<RunningService> {
  const logger = options.logger ?? pino({ level: config.LOG_LEVEL });
  // Everything the configuration names is checked before any work starts (issue #33): files, the chain, the deployment's chain.
  // One lock per account for every writer of this process: the anchorer's and the publisher's keys may be the same.
  const locks = createAccountLocks();
  const anchorWriter = anchorWriterOf(config, locks);
  const erc8004 = await erc8004Of(config, locks);
  let publicClient: PublicClient | undefined;
  let chainId: number | undefined;
  if (config.RPC_URL) {
    const client = createPublicClient({ transport: http(config.RPC_URL) });
    chainId = await client.getChainId().catch((error: unknown) => {
      throw new InvalidInputError(
        "rpc_unreachable",
        `cannot reach RPC_URL ${config.RPC_URL}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}: ` +
          "set RPC_URL to a running chain's JSON-RPC",
        { cause: error },
      );
    });
    publicClient = client;
  }
  const followed = config.DEPLOYMENT !== undefined && chainId !== undefined ? followedDeployment(config.DEPLOYMENT, chainId) : undefined;
  const db = await openDb({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    holder: options.holder,
    lock: options.dataDirLock,
    notice: (line) => logger.warn(line),
  });
  const server = await startApiServer({
    db,
    logger,
    operatorToken: config.OPERATOR_TOKEN,
    port: config.PORT,
    host: config.HOST,
    overload: { maxInFlight: config.OVERLOAD_MAX_IN_FLIGHT, maxLoopDelayMs: config.OVERLOAD_MAX_LOOP_DELAY_MS },
    rateLimit: {
      perMinute: config.RATE_LIMIT_PER_MINUTE,
      burst: Math.max(10, Math.ceil(config.RATE_LIMIT_PER_MINUTE / 5)),
      ownersPerHour: config.RATE_LIMIT_OWNERS_PER_HOUR,
      authFailuresPerMinute: config.RATE_LIMIT_AUTH_FAILURES_PER_MINUTE,
      redis:
        config.RATE_LIMIT_REDIS_URL === undefined
          ? undefined
          : { url: config.RATE_LIMIT_REDIS_URL, keyPrefix: config.RATE_LIMIT_REDIS_PREFIX },
    },
    trustProxy: config.TRUST_PROXY === "none" ? false : config.TRUST_PROXY,
    serverLimits: {
      firstByteTimeoutMs: config.FIRST_BYTE_TIMEOUT_MS,
      headersTimeoutMs: config.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: config.KEEP_ALIVE_TIMEOUT_MS,
      maxRequestsPerSocket: config.MAX_REQUESTS_PER_SOCKET,
      maxConnections: config.MAX_CONNECTIONS,
      maxConnectionsPerAddress: config.MAX_CONNECTIONS_PER_ADDRESS,
    },
    metrics: { token: config.METRICS_TOKEN, port: config.METRICS_PORT, host: config.METRICS_HOST },
    scoreCacheBytes: config.SCORE_CACHE_MB * 2 ** 20,
    rememberedAgents: config.CHECKIN_REMEMBERED_AGENTS,
    warmUpRequests: config.WARM_UP_REQUESTS,
    limits: { openChallenges: config.MAX_OPEN_CHALLENGES_PER_OWNER, agents: config.MAX_AGENTS_PER_OWNER },
    proofSources: {
      settings: config,
      httpTimeoutMs: config.PROOF_HTTP_TIMEOUT_MS,
      submissionTimeoutMs: config.PROOF_SUBMISSION_TIMEOUT_MS,
      walletChainId: chainId,
      publicClientFor: (id) => (id === chainId ? publicClient : undefined),
    },
    schedule: { intervalMs: config.SCHEDULE_INTERVAL_MS },
    checkinRetention: { days: config.CHECKIN_RETENTION_DAYS, archiveDir: config.CHECKIN_ARCHIVE_DIR },
    anchorWriter,
    anchoring: { confirmations: config.ANCHOR_CONFIRMATIONS, maxRetryMs: config.ANCHOR_RETRY_MAX_MS },
    erc8004,
    devClock: options.devClock,
    console: {
      publicUrl: config.PUBLIC_URL,
      timeouts: { idleS: config.CONSOLE_SESSION_IDLE_S, absoluteS: config.CONSOLE_SESSION_MAX_S },
    },
    webhooks: {
      allowLoopback: config.WEBHOOK_ALLOW_LOOPBACK,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
      secretsKey: config.WEBHOOK_SECRETS_KEY,
      limits: { endpoints: config.MAX_WEBHOOKS_PER_OWNER, urlLength: config.MAX_WEBHOOK_URL_LENGTH },
    },
  }).catch(async (error: unknown) => {
    await db.close();
    throw startupError(error);
  });
  let indexer: IndexerAlongside | undefined;
  try {
    if (config.RPC_URL && followed) {
      indexer = await startIndexerAlongside({
        db,
        logger,
        proofs: server.proofs,
        registrations: server.registrations,
        databaseUrl: config.DATABASE_URL,
        rpcUrl: config.RPC_URL,
        deployment: followed,
        confirmations: config.CONFIRMATIONS,
        pollIntervalMs: config.POLL_INTERVAL_MS,
        maxRange: config.INDEXER_MAX_RANGE,
        rejoin: true,
        clock: options.devClock?.clock,
      });
    }
  } catch (error) {
    await server.close();
    await db.close();
    throw error;
  }
  return {
    server,
    async stop() {
      logger.info("stopping: finishing in-flight requests");
      await indexer?.stop();
      await server.close();
      await db.close();
    },
  };
}
