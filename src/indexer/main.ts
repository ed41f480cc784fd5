/**
 * The indexer as a process, configured by environment variables (one zod schema; an invalid value stops the
 * process naming the variable):
 * - `DATABASE_URL` PostgreSQL (required); `RPC_URL` any EVM JSON-RPC endpoint (required);
 * - `DEPLOYMENT` the deployment file, e.g. `deployments/localhost.json` (required);
 * - `CONFIRMATIONS` blocks behind the head to stay (default 0, for a local chain);
 * - `POLL_INTERVAL_MS` (default 1000), `INDEXER_MAX_RANGE` largest `eth_getLogs` range (default 10000), `LOG_LEVEL`.
 *
 * It waits as a standby while another instance indexes the same chain. A moved ERC-8004 identity token re-checks
 * the proof it backs at once (V6), through the service's own proof checks on the same database.
 *
 *   DATABASE_URL=postgresql://postgres@127.0.0.1/vrai RPC_URL=http://127.0.0.1:8545 DEPLOYMENT=deployments/localhost.json npx tsx src/indexer/main.ts
 */
import pino from "pino";
import { createPublicClient, http, type PublicClient } from "viem";
import { z } from "zod";
import { systemClock } from "../service/clock";
import { createVraiService } from "../service";
import { createProofChecks } from "../service/proof-checks";
import { createProofVerifier } from "../service/proofs/verifiers";
import { createPgDb } from "../store/db";
import { migrate } from "../store/migrate";
import { createSqlStore } from "../store/sql-store";
import { readDeployment } from "./deployment";
import { IndexerConfigError } from "./errors";
import { createIndexer, DEFAULT_RANGE } from "./indexer";
import { acquireIndexerLock } from "./lock";
import { createChainRpc } from "./rpc";
import { createIndexerStore } from "./store";

const blank = (v: unknown) => (v === "" ? undefined : v);
const configSchema = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, "expected a postgresql:// URL"),
  RPC_URL: z.url(),
  DEPLOYMENT: z.string().min(1),
  CONFIRMATIONS: z.preprocess(blank, z.coerce.number().int().min(0).default(0)),
  POLL_INTERVAL_MS: z.preprocess(blank, z.coerce.number().int().min(10).default(1_000)),
  INDEXER_MAX_RANGE: z.preprocess(blank, z.coerce.number().int().min(1).default(DEFAULT_RANGE.max)),
  LOG_LEVEL: z.preprocess(blank, z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info")),
});

/** Parses the environment; the error names the first bad variable. */
export function parseIndexerConfig(env: NodeJS.ProcessEnv) {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new IndexerConfigError(`${issue.path.join(".")}: ${issue.message}`);
  }
  return parsed.data;
}

/** Runs the indexer until SIGINT/SIGTERM; returns the exit code. */
export async function main(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = parseIndexerConfig(env);
  const logger = pino({ level: config.LOG_LEVEL });
  const deployment = readDeployment(config.DEPLOYMENT);
  const rpc = createChainRpc({ url: config.RPC_URL, logger });
  const chainId = await rpc.chainId();
  if (chainId !== deployment.chainId) throw new IndexerConfigError(`RPC_URL serves chain ${chainId}, ${config.DEPLOYMENT} is for chain ${deployment.chainId}`);

  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);

  const db = createPgDb(config.DATABASE_URL, { max: 4 });
  await migrate(db);
  const lock = await acquireIndexerLock({ databaseUrl: config.DATABASE_URL, chainId, logger, signal: controller.signal });
  if (!lock) {
    await db.close();
    return 0;
  }
  let lockLost = false;
  void lock.lost.then((error) => {
    lockLost = true;
    logger.error({ err: error.message }, "indexer lock lost: stopping");
    controller.abort();
  });

  const publicClient = createPublicClient({ transport: http(config.RPC_URL) }) as PublicClient;
  const store = createSqlStore(db);
  const service = createVraiService({ store, clock: systemClock, busy: () => false });
  const proofs = createProofChecks({
    store, clock: systemClock, identity: service.identity, logger,
    verifier: createProofVerifier({ now: () => systemClock.now(), publicClientFor: (id) => (id === chainId ? publicClient : undefined) }),
  });
  const indexer = createIndexer({
    store: createIndexerStore(db), rpc, deployment, confirmations: config.CONFIRMATIONS, clock: systemClock, logger,
    pollIntervalMs: config.POLL_INTERVAL_MS, range: { initial: Math.min(DEFAULT_RANGE.initial, config.INDEXER_MAX_RANGE), max: config.INDEXER_MAX_RANGE },
    onIdentityTransfer: (id, registry, agentId) => proofs.recheckErc8004(id, registry, agentId),
  });
  try {
    await indexer.run(controller.signal);
  } finally {
    await lock.release();
    await db.close();
  }
  return lockLost ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(error instanceof IndexerConfigError ? 2 : 1);
    },
  );
}
