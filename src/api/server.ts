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
import { createSqlStore } from "../store/sql-store";
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
};

export type ApiServer = { url: string; service: VraiService; proofs: ProofChecks; scheduler: Scheduler; anchoring: Anchoring; close(): Promise<void> };

// The operator's busy switch is read from the store at most this often, so several API instances agree within it.
const BUSY_SWITCH_REFRESH_MS = 2000;

/**
 * Migrates the store, wires the service and serves the HTTP API. `close()` stops taking
 * connections, lets in-flight requests finish, then stops background work (the db is the caller's).
 */
export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const logger = options.logger ?? pino({ level: process.env.LOG_LEVEL ?? "info" });
  await migrate(options.db);
  const store = createSqlStore(options.db);
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
    service, logger, load, operatorTokenHash: hashSecret(options.operatorToken), rateLimit: options.rateLimit,
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
    async close() {
      clearInterval(busyTimer);
      await scheduler.stop();
      await anchoring.stop();
      load.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
}
