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
import { createApp, type AppOptions } from "./app";

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
  mount?: (service: VraiService) => AppOptions["mount"];
};

export type ApiServer = { url: string; service: VraiService; close(): Promise<void> };

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
  const service = createVraiService({
    store, clock: options.clock ?? systemClock, busy: () => busySwitch || load.overloaded(), onBusyChanged: (on) => void (busySwitch = on),
  });
  const refreshBusy = async () => {
    busySwitch = await service.operator.isBusySwitchOn().catch(() => busySwitch);
  };
  await refreshBusy();
  const busyTimer = setInterval(refreshBusy, BUSY_SWITCH_REFRESH_MS);
  busyTimer.unref();

  const extraMount = options.mount?.(service);
  const app = createApp({
    service, logger, load, operatorTokenHash: hashSecret(options.operatorToken), rateLimit: options.rateLimit,
    extraRoutes: options.extraRoutes?.(service),
    mount: (expressApp) => {
      expressApp.use(agentPageRouter(service.store.read));
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
    async close() {
      clearInterval(busyTimer);
      load.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
    },
  };
}
