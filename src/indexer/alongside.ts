import type { Logger } from "pino";
import type { ApiServer } from "../api/server";
import { systemClock } from "../service/clock";
import type { Db } from "../store/db";
import { readDeployment } from "./deployment";
import { IndexerConfigError } from "./errors";
import { createIndexer } from "./indexer";
import { acquireIndexerLock } from "./lock";
import { createChainRpc } from "./rpc";
import { createIndexerStore } from "./store";

/**
 * The chain indexer beside the API in one process (`vrai serve`, `vrai dev`), on the service's own
 * store. On PostgreSQL (`databaseUrl`) it first takes the chain's advisory lock, so of several
 * instances one indexes and the others stand by; PGlite has one process, so no lock.
 * ERC-8004 transfers re-check the proofs they back at once (V6).
 * @returns how to stop it (waits for the range in progress)
 */
export async function startIndexerAlongside(options: {
  db: Db;
  databaseUrl?: string;
  rpcUrl: string;
  deploymentFile: string;
  confirmations: number;
  logger: Logger;
  server: ApiServer;
  pollIntervalMs?: number;
}): Promise<{ stop(): Promise<void> }> {
  const { logger } = options;
  const deployment = readDeployment(options.deploymentFile);
  const rpc = createChainRpc({ url: options.rpcUrl, logger });
  const chainId = await rpc.chainId();
  if (chainId !== deployment.chainId) {
    throw new IndexerConfigError(`the RPC serves chain ${chainId}, ${options.deploymentFile} is for chain ${deployment.chainId}`);
  }
  const controller = new AbortController();
  const indexer = createIndexer({
    store: createIndexerStore(options.db), rpc, deployment, confirmations: options.confirmations, clock: systemClock, logger,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    onIdentityTransfer: (id, registry, agentId) => options.server.proofs.recheckErc8004(id, registry, agentId),
  });
  const running = (async () => {
    const lock = options.databaseUrl
      ? await acquireIndexerLock({ databaseUrl: options.databaseUrl, chainId, logger, signal: controller.signal })
      : undefined;
    if (lock === null) return;
    void lock?.lost.then((error) => {
      logger.error({ err: error.message }, "indexer lock lost: stopping the indexer");
      controller.abort();
    });
    try {
      await indexer.run(controller.signal);
    } finally {
      await lock?.release();
    }
  })().catch((error: unknown) => logger.error({ err: (error as Error).message }, "indexer stopped"));
  return {
    async stop() {
      controller.abort();
      await running;
    },
  };
}
