/**
 * The chain indexer in a process: beside the API (`vrai serve`, `vrai dev`) on the service's own
 * store, or alone (`vrai indexer`) on PostgreSQL. On PostgreSQL it first takes the chain's advisory
 * lock, so of several instances one indexes and the others stand by, taking over from the
 * checkpoint when it dies; PGlite has one process, so no lock. A moved ERC-8004 identity token
 * re-checks the proof it backs at once (V6).
 */
import type { Logger } from "pino";
import { createPublicClient, http } from "viem";
import { DeploymentFileError, readFollowedDeployment, type FollowedDeployment } from "../chain/deployment";
import { InvalidInputError } from "../errors";
import { createIndexer } from "../indexer/indexer";
import { acquireIndexerLock, type HeldLock } from "../indexer/lock";
import { createChainRpc } from "../indexer/rpc";
import { realSleep } from "../retry";
import { createVraiService } from "../service";
import { systemClock, type Clock } from "../service/clock";
import { createDerivedScores } from "../service/derived-scores";
import { createNetworkScores } from "../service/network-scores";
import { createProofChecks, type ProofChecks } from "../service/proof-checks";
import { createProofVerifier } from "../service/proofs/verifiers";
import { createRegistrationFiles, type RegistrationFiles } from "../service/registration-files";
import { createChainStore } from "../store/chain-store";
import { createPgDb, type Db } from "../store/db";
import { isDatabaseUnavailable } from "../store/errors";
import { migrate } from "../store/migrate";
import { createRegistrationFileRepository } from "../store/registration-files";
import { createSqlStore } from "../store/sql-store";
import type { IndexerConfig } from "./config";

/** A running indexer (or standby). */
export type IndexerAlongside = {
  /** Stops it, waiting for the range in progress; resolves once the lock is released. */
  stop(): Promise<void>;
  /** Settles when it has stopped: false when it stopped because its lock was lost. */
  done: Promise<boolean>;
};

export type IndexerOptions = {
  db: Db;
  /** PostgreSQL, for the lock; absent on PGlite. */
  databaseUrl?: string;
  rpcUrl: string;
  /** What it follows, checked against the chain at `rpcUrl` (`followedDeployment`) before anything started. */
  deployment: FollowedDeployment;
  confirmations: number;
  logger: Logger;
  /** Where a moved ERC-8004 identity's proof is re-checked. */
  proofs: Pick<ProofChecks, "recheckErc8004">;
  /** Where an ERC-8004 identity's registration file is read again when its agentURI changes (issue #27). */
  registrations: Pick<RegistrationFiles, "refreshIdentity">;
  pollIntervalMs?: number;
  /** Largest `eth_getLogs` range. */
  maxRange?: number;
  /**
   * After losing the lock or the database for it (a PostgreSQL failover takes every connection with the old
   * primary), stand by for the lock again instead of stopping: `vrai serve`, where nothing would restart it.
   */
  rejoin?: boolean;
  /** The clock of its checkpoints and scores (default: the machine's; `vrai dev`'s development clock). */
  clock?: Clock;
};

/** How long an instance that lost the lock, or the database, waits before it stands by again. */
const REJOIN_DELAY_MS = 1_000;

/**
 * The deployment file DEPLOYMENT as the indexer follows it, checked to be of the chain the RPC serves
 * (`chainId`): what a process checks before it starts any work (issue #33).
 * @throws InvalidInputError `invalid_configuration` naming DEPLOYMENT: a file that cannot be read or is
 * not a deployment, or one of another chain
 */
export function followedDeployment(deploymentFile: string, chainId: number): FollowedDeployment {
  let deployment: FollowedDeployment;
  try {
    deployment = readFollowedDeployment(deploymentFile);
  } catch (error) {
    if (!(error instanceof DeploymentFileError)) throw error;
    throw new InvalidInputError("invalid_configuration", `invalid configuration: DEPLOYMENT: ${error.message}`, { cause: error });
  }
  if (deployment.chainId !== chainId) {
    throw new InvalidInputError(
      "invalid_configuration",
      `invalid configuration: DEPLOYMENT: ${deploymentFile} is for chain ${deployment.chainId}, ` +
        `the RPC at RPC_URL serves chain ${chainId}: set DEPLOYMENT to that chain's file, or RPC_URL to chain ${deployment.chainId}`,
    );
  }
  return deployment;
}

/** Starts indexing the chain of `options.deployment` on `options.db`; resolves once it runs (or stands by). */
export async function startIndexerAlongside(options: IndexerOptions): Promise<IndexerAlongside> {
  const { logger, deployment } = options;
  const { chainId } = deployment;
  const rpc = createChainRpc({ url: options.rpcUrl, logger });
  const store = createChainStore(options.db);
  const controller = new AbortController();
  const indexer = createIndexer({
    store,
    derivedScores: createDerivedScores({ store }),
    networkScores: createNetworkScores(),
    rpc,
    deployment,
    confirmations: options.confirmations,
    clock: options.clock ?? systemClock,
    logger,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    ...(options.maxRange === undefined ? {} : { range: { initial: Math.min(1_000, options.maxRange), max: options.maxRange } }),
    onIdentityTransfer: (id, registry, agentId) => options.proofs.recheckErc8004(id, registry, agentId),
    onIdentityUriUpdated: (id, registry, agentId) => options.registrations.refreshIdentity(id, registry, agentId),
  });
  /** One turn: waits for the lock, then indexes until stopped ("stopped") or until the lock or the database is lost ("lost"). */
  const turn = async (): Promise<"stopped" | "lost"> => {
    let lock: HeldLock | null | undefined;
    try {
      lock = options.databaseUrl
        ? await acquireIndexerLock({ databaseUrl: options.databaseUrl, chainId, logger, signal: controller.signal })
        : undefined;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      logger.error({ err: error instanceof Error ? error.message : String(error) }, "indexer lock: the database is unavailable");
      return "lost";
    }
    if (lock === null) return "stopped";
    const held = new AbortController();
    const stop = () => held.abort();
    controller.signal.addEventListener("abort", stop, { once: true });
    let lost = false;
    void lock?.lost.then((error) => {
      lost = true;
      logger.error({ err: error.message }, "indexer lock lost: stopping the indexer");
      held.abort();
    });
    try {
      await indexer.run(held.signal);
    } finally {
      controller.signal.removeEventListener("abort", stop);
      await lock?.release();
    }
    return lost ? "lost" : "stopped";
  };
  const done = (async () => {
    for (;;) {
      if ((await turn()) === "stopped") return true;
      if (!options.rejoin) return false;
      await realSleep(REJOIN_DELAY_MS, controller.signal).catch(() => undefined);
      if (controller.signal.aborted) return true;
    }
  })().catch((error: unknown) => {
    logger.error({ err: error instanceof Error ? error.message : String(error) }, "indexer stopped");
    return false;
  });
  return {
    done,
    async stop() {
      controller.abort();
      await done;
    },
  };
}

/**
 * `vrai indexer`: the indexer alone on PostgreSQL until SIGINT/SIGTERM, standing by while another
 * instance indexes the same chain. ERC-8004 transfers re-check proofs through the service's own
 * proof checks on the same database.
 * @returns the exit code: 1 when it stopped because its lock was lost
 */
export async function runIndexer(config: IndexerConfig, logger: Logger): Promise<number> {
  const publicClient = createPublicClient({ transport: http(config.RPC_URL) });
  const chainId = await publicClient.getChainId();
  const deployment = followedDeployment(config.DEPLOYMENT, chainId);
  const db = createPgDb(config.DATABASE_URL, { max: 4 });
  try {
    await migrate(db);
    const store = createSqlStore(db);
    const service = createVraiService({ store, clock: systemClock, busy: () => false });
    const verifier = createProofVerifier({
      now: () => systemClock.now(),
      publicClientFor: (id) => (id === chainId ? publicClient : undefined),
    });
    const registrations = createRegistrationFiles({
      files: createRegistrationFileRepository(db),
      proofs: store.read,
      read: verifier.readRegistrationFile,
      clock: systemClock,
      logger,
    });
    const proofs = createProofChecks({ store, clock: systemClock, identity: service.identity, logger, verifier, registrations });
    const indexer = await startIndexerAlongside({
      db,
      databaseUrl: config.DATABASE_URL,
      rpcUrl: config.RPC_URL,
      deployment,
      confirmations: config.CONFIRMATIONS,
      logger,
      proofs,
      registrations,
      pollIntervalMs: config.POLL_INTERVAL_MS,
      maxRange: config.INDEXER_MAX_RANGE,
    });
    const stop = () => void indexer.stop();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    return (await indexer.done) ? 0 : 1;
  } finally {
    await db.close();
  }
}
