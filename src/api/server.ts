import http from "node:http";
import type { AddressInfo } from "node:net";
import pino, { type Logger } from "pino";
import { createVraiService, type VraiService } from "../service";
import type { Clock } from "../service/clock";
import { systemClock } from "../service/clock";
import { createLoadMonitor } from "../service/load";
import { hashSecret } from "../service/secrets";
import type { Db } from "../store/db";
import { migrate } from "../store/migrate";
import { createScoreCache, type ScoreCache, type ScoreCacheStats } from "../store/score-cache";
import { createSqlStore, warmScoreCache } from "../store/sql-store";
import { agentPageRouter } from "../web/agent-route";
import { createProofChecks, type ProofChecks } from "../service/proof-checks";
import { createProofVerifier } from "../service/proofs/verifiers";
import type { ProofVerifierDeps } from "../service/proofs/types";
import { createScheduler, type Scheduler } from "../service/scheduler";
import { createApp, type AppOptions } from "./app";
import { proofRoutes } from "./proof-routes";
import { createAnchoring, type Anchoring, type AnchorWriter } from "../service/anchoring";
import { anchorRoutes } from "./anchor-routes";
import { createIndexerStore } from "../indexer/store";
import { createScorePanels } from "../indexer/panels";
import { indexerRoutes } from "./indexer-routes";

export type ApiServerOptions = {
  db: Db;
  operatorToken: string;
  port?: number;
  host?: string;
  clock?: Clock;
  logger?: Logger;
  /** V3.3 overload detection thresholds. */
  overload?: { maxInFlight: number; maxLoopDelayMs: number };
  rateLimit?: AppOptions["rateLimit"];
  extraRoutes?: (service: VraiService) => AppOptions["extraRoutes"];
  /** Serve the indexer's scores (derived and network score routes, self-reported summaries, agent page panels); on by default. */
  indexerApi?: boolean;
  mount?: (service: VraiService) => AppOptions["mount"];
  /** Where identity proofs are checked (GitHub API, DNS, chains); the clock is the server's. */
  proofSources?: Omit<ProofVerifierDeps, "now">;
  /** Run the daily recompute and proof re-checks every `intervalMs` (off when absent: tests drive `scheduler.tick`). */
  schedule?: { intervalMs: number };
  /** Anchors each day's score root on chain after the daily recompute; off when absent (trees and proofs are still stored). */
  anchorWriter?: AnchorWriter;
  /** Memory for the latest-score cache (default 512 MiB); 0 turns it off. */
  scoreCacheBytes?: number;
};

/** The latest-score cache of a running server: its figures, and the first fill from the database. */
export type ServerScoreCache = { stats(): ScoreCacheStats; warmed: Promise<void> };

export type ApiServer = {
  url: string; service: VraiService; proofs: ProofChecks; scheduler: Scheduler; anchoring: Anchoring; scoreCache: ServerScoreCache | undefined; close(): Promise<void>;
};

const DEFAULT_SCORE_CACHE_BYTES = 512 * 2 ** 20;
/** Channel of migration 005's notifications: agents whose scores changed, or "*". */
const SCORES_CHANNEL = "vrai_scores";
/** Quiet time after another process changed many agents' scores before the cache fills again. */
const REWARM_AFTER_MS = 1000;

/**
 * The latest-score cache of one server over `db`. On PostgreSQL other processes may write scores:
 * the cache is used only while this process listens for their notifications, and refilled after
 * a lost connection (whatever was missed meanwhile was dropped with everything else).
 * PGlite belongs to this process alone, so its cache is always on.
 */
function startScoreCache(db: Db, maxBytes: number, logger: Logger): { cache: ScoreCache; server: ServerScoreCache; stop(): Promise<void> } {
  const cache = createScoreCache({ maxBytes, enabled: db.listen === undefined });
  let firstWarm: () => void = () => undefined;
  const warmed = new Promise<void>((resolve) => (firstWarm = resolve));
  let warming = false;
  let warmAgain = false;
  let rewarm: NodeJS.Timeout | undefined;
  /** Fills the cache from the table; asked again while filling, it fills once more afterwards. */
  const warm = () => {
    if (warming) return void (warmAgain = true);
    warming = true;
    warmScoreCache(db, cache).then(
      (agents) => logger.info({ agents, ...cache.stats() }, "score cache filled"),
      (error: unknown) => logger.warn({ err: error }, "score cache not filled; scores are read from the database until they are cached"),
    ).finally(() => {
      warming = false;
      firstWarm();
      if (warmAgain) {
        warmAgain = false;
        warm();
      }
    });
  };
  const listener = db.listen?.(SCORES_CHANNEL, {
    notify(payload, fromThisDb) {
      // This process's own writes reached the cache as they committed.
      if (fromThisDb) return;
      if (payload !== "*") return cache.invalidate(payload.split(","));
      // Many agents at once (another instance's daily recompute): everything goes, and the cache
      // fills again once such notifications have stopped for a while.
      cache.invalidate("all");
      clearTimeout(rewarm);
      rewarm = setTimeout(warm, REWARM_AFTER_MS).unref();
    },
    listening(on) {
      cache.setEnabled(on);
      if (on) warm();
      else logger.warn("score change notifications lost; the score cache is off until they are heard again");
    },
  });
  if (!listener) warm();
  return {
    cache,
    server: { stats: () => cache.stats(), warmed },
    async stop() {
      clearTimeout(rewarm);
      await listener?.close();
    },
  };
}

// The operator's busy switch is read from the store at most this often, so several API instances agree within it.
const BUSY_SWITCH_REFRESH_MS = 2000;

/**
 * Migrates the store, wires the service and serves the HTTP API. `close()` stops taking
 * connections, lets in-flight requests finish, then stops background work (the db is the caller's).
 */
export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const logger = options.logger ?? pino({ level: process.env.LOG_LEVEL ?? "info" });
  await migrate(options.db);
  const scoreCache = options.scoreCacheBytes === 0 ? undefined : startScoreCache(options.db, options.scoreCacheBytes ?? DEFAULT_SCORE_CACHE_BYTES, logger);
  const store = createSqlStore(options.db, { scoreCache: scoreCache?.cache });
  const load = createLoadMonitor(options.overload ?? { maxInFlight: 256, maxLoopDelayMs: 200 });
  let busySwitch = false;
  const clock = options.clock ?? systemClock;
  const service = createVraiService({
    store, clock, busy: () => busySwitch || load.overloaded(), onBusyChanged: (on) => void (busySwitch = on),
  });
  const refreshBusy = async () => {
    busySwitch = await service.operator.isBusySwitchOn().catch(() => busySwitch);
  };
  await refreshBusy();
  const busyTimer = setInterval(refreshBusy, BUSY_SWITCH_REFRESH_MS);
  busyTimer.unref();

  const proofs = createProofChecks({
    store, clock, identity: service.identity, logger, verifier: createProofVerifier({ ...options.proofSources, now: () => clock.now() }),
  });
  const anchoring = createAnchoring({ db: options.db, clock, logger, writer: options.anchorWriter });
  const scheduler = createScheduler({ store, clock, scoring: service.scoring, proofs, logger, afterDaily: anchoring.afterDaily });
  if (options.schedule) {
    anchoring.start();
    scheduler.start(options.schedule.intervalMs);
  }
  const extraMount = options.mount?.(service);
  const indexerStore = options.indexerApi === false ? undefined : createIndexerStore(options.db);
  const indexerApiRoutes = indexerStore ? indexerRoutes({ service, db: options.db, store: indexerStore, clock }) : [];
  const app = createApp({
    service, logger, load, operatorTokenHash: hashSecret(options.operatorToken), rateLimit: options.rateLimit, scoreCacheStats: scoreCache?.server.stats,
    extraRoutes: [...proofRoutes(service, proofs), ...anchorRoutes(anchoring), ...indexerApiRoutes, ...(options.extraRoutes?.(service) ?? [])],
    mount: (expressApp) => {
      expressApp.use(agentPageRouter(service.store.read, { panels: indexerStore && createScorePanels(indexerStore) }));
      extraMount?.(expressApp);
    },
  });
  const server = http.createServer(app);
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host ?? "127.0.0.1"}:${port}`;
  logger.info({ url }, "api listening");

  return {
    url,
    service,
    proofs,
    scheduler,
    anchoring,
    scoreCache: scoreCache?.server,
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
