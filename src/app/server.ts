/**
 * The composition root of the service: builds the whole system from its parts (store, services,
 * proof verifiers, scheduler, anchoring, the chain's scores, pages and the HTTP app) and serves it.
 * `vrai serve`, `vrai dev` and the tests start the system through here and nowhere else.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import pino, { type Logger } from "pino";
import { anchorRoutes } from "../api/anchor-routes";
import { createHttpApp } from "../api/express";
import { directoryRoutes } from "../api/directory-routes";
import { createApiMetrics } from "../api/metrics";
import { directoryPageRoutes, pageRoutes } from "../api/page-routes";
import { proofRoutes } from "../api/proof-routes";
import { createRateLimiter } from "../api/rate-limit";
import type { Route } from "../api/route";
import { serviceRoutes } from "../api/service-routes";
import type { AnchorWriter } from "../chain/anchor-writer";
import { createVraiService, type VraiService } from "../service";
import { createAnchoring, type Anchoring } from "../service/anchoring";
import { systemClock, type Clock } from "../service/clock";
import { createDirectory } from "../service/directory";
import { createLoadMonitor } from "../service/load";
import { createOperators, type Operators } from "../service/operators";
import { createProofChecks, type ProofChecks } from "../service/proof-checks";
import type { ProofVerifierDeps } from "../service/proofs/types";
import { createProofVerifier } from "../service/proofs/verifiers";
import { createReads, createSiteReads, type Reads } from "../service/reads";
import { createScheduler, type Scheduler } from "../service/scheduler";
import { hashSecret } from "../service/secrets";
import { createAnchorRepository } from "../store/anchors";
import type { Db } from "../store/db";
import { createDirectoryRepository } from "../store/directory";
import { migrate } from "../store/migrate";
import { createOperatorRepository } from "../store/operators";
import { startScoreCache, type ServerScoreCache } from "../store/score-cache-sync";
import { createSqlStore } from "../store/sql-store";
import { createDirectoryPages } from "../web/directory-page";
import { createPages } from "../web/pages";
import { chainScoreParts } from "./chain-scores";
import { checkRepliesOf } from "./config";

export type { ServerScoreCache };

/** The parts of a running server that tests and `vrai dev` reach for. */
export type ApiServer = {
  url: string;
  service: VraiService;
  /** Named operators (V7): the ones `vrai operator add` made, and the bootstrap token as `admin`. */
  operators: Operators;
  reads: Reads;
  proofs: ProofChecks;
  scheduler: Scheduler;
  anchoring: Anchoring;
  scoreCache: ServerScoreCache | undefined;
  /** Stops taking connections, lets in-flight requests finish, then stops background work (the db is the caller's). */
  close(): Promise<void>;
};

export type ApiServerOptions = {
  db: Db;
  /** The bootstrap administrator's token (OPERATOR_TOKEN), whose actions are logged as `admin`. */
  operatorToken: string;
  port?: number;
  host?: string;
  clock?: Clock;
  logger?: Logger;
  /** V3.3 overload detection thresholds. */
  overload?: { maxInFlight: number; maxLoopDelayMs: number };
  /** Requests per minute per credential or client address, and the burst allowed. */
  rateLimit?: { perMinute: number; burst: number };
  /** Serve the indexer's scores (derived and network score routes, self-reported summaries, agent page panels); on by default. */
  indexerApi?: boolean;
  /** Where identity proofs are checked (GitHub API, DNS, chains); the clock is the server's. */
  proofSources?: Omit<ProofVerifierDeps, "now">;
  /** Run the daily recompute and proof re-checks every `intervalMs` (off when absent: tests drive `scheduler.tick`). */
  schedule?: { intervalMs: number };
  /** Anchors each day's score root on chain after the daily recompute; off when absent (trees and proofs are still stored). */
  anchorWriter?: AnchorWriter;
  /** Memory for the latest-score cache (default 512 MiB); 0 turns it off. */
  scoreCacheBytes?: number;
  /** Check every answer against its route's declaration (src/api/reply-check.ts); default: VRAI_CHECK_REPLIES=1, which the test suite sets. */
  checkReplies?: boolean;
};

const DEFAULT_SCORE_CACHE_BYTES = 512 * 2 ** 20;
// The operator's busy switch is read from the store at most this often, so several API instances agree within it.
const BUSY_SWITCH_REFRESH_MS = 2000;

/** Migrates the store, builds the system on it and serves the HTTP API and the pages. */
export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const logger = options.logger ?? pino({ level: "info" });
  const clock = options.clock ?? systemClock;
  await migrate(options.db);
  const scoreCache = options.scoreCacheBytes === 0 ? undefined : startScoreCache(options.db, options.scoreCacheBytes ?? DEFAULT_SCORE_CACHE_BYTES, logger);
  const store = createSqlStore(options.db, { scoreCache: scoreCache?.cache });

  const load = createLoadMonitor(options.overload ?? { maxInFlight: 256, maxLoopDelayMs: 200 });
  let busySwitch = false;
  const service = createVraiService({ store, clock, busy: () => busySwitch || load.overloaded(), onBusyChanged: (on) => void (busySwitch = on) });
  const refreshBusy = async () => {
    busySwitch = await service.operator.isBusySwitchOn().catch(() => busySwitch);
  };
  await refreshBusy();
  const busyTimer = setInterval(refreshBusy, BUSY_SWITCH_REFRESH_MS);
  busyTimer.unref();

  const operators = createOperators({ operators: createOperatorRepository(options.db), clock, bootstrapTokenHash: hashSecret(options.operatorToken) });
  const reads = createReads({ store, latestScores: store, clock });
  const directory = createDirectory({ store: createDirectoryRepository(options.db) });
  const proofs = createProofChecks({
    store, clock, identity: service.identity, logger, verifier: createProofVerifier({ ...options.proofSources, now: () => clock.now() }),
  });
  const anchoring = createAnchoring({ anchors: createAnchorRepository(options.db), clock, logger, writer: options.anchorWriter });
  const scheduler = createScheduler({ store, clock, scoring: service.scoring, proofs, logger, afterDaily: anchoring.afterDaily });
  if (options.schedule) {
    anchoring.start();
    scheduler.start(options.schedule.intervalMs);
  }

  const chain = options.indexerApi === false ? undefined : chainScoreParts({ db: options.db, accounts: service.accounts, agents: store.read, clock });
  const metrics = createApiMetrics({ busy: () => load.overloaded(), scoreCache: scoreCache?.server.stats });
  const routes: Route[] = [
    ...serviceRoutes({ ...service, reads, checkinResults: metrics.checkinResults }),
    ...proofRoutes({ proofs, identity: service.identity, reads }),
    ...anchorRoutes(anchoring),
    ...directoryRoutes(directory),
    ...(chain?.routes ?? []),
  ];
  const app = createHttpApp({
    routes,
    pages: [...pageRoutes(createPages({ reads, site: createSiteReads({ site: store, clock }), directory, panels: chain?.panels, origin: () => url })), ...directoryPageRoutes(createDirectoryPages({ directory }))],
    authenticateOwner: service.accounts.authenticateOwner,
    authenticateOperator: operators.authenticate,
    limiter: createRateLimiter(options.rateLimit ?? { perMinute: 600, burst: 120 }),
    load,
    metrics,
    logger,
    checkReplies: options.checkReplies ?? checkRepliesOf(process.env),
  });
  const server = http.createServer(app);
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? (address satisfies AddressInfo).port : 0;
  const url = `http://${options.host ?? "127.0.0.1"}:${port}`;
  logger.info({ url }, "api listening");

  return {
    url, service, operators, reads, proofs, scheduler, anchoring, scoreCache: scoreCache?.server,
    async close() {
      clearInterval(busyTimer);
      await scheduler.stop();
      await anchoring.stop();
      load.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await scoreCache?.stop();
    },
  };
}
