/**
 * The composition root of the service: builds the whole system from its parts (store, services,
 * proof verifiers, scheduler, anchoring, the chain's scores, pages and the HTTP app) and serves it.
 * `vrai serve`, `vrai dev` and the tests start the system through here and nowhere else.
 */
import { performance } from "node:perf_hooks";
import Redis from "ioredis";
import pino, { type Logger } from "pino";
import { anchorRoutes } from "../api/anchor-routes";
import { healthRoutes } from "../api/health-routes";
import { consolePageModule } from "../api/console-pages";
import { consoleRoutes, type ConsoleRoute } from "../api/console-routes";
import { createConsoleRouter, type ConsolePages } from "../api/console/router";
import { createHttpApp, createMetricsApp } from "../api/express";
import { ownerTokenRoutes } from "../api/owner-token-routes";
import { devRoutes } from "../api/dev-routes";
import { directoryRoutes } from "../api/directory-routes";
import { erc8004Routes } from "../api/erc8004-routes";
import { createApiMetrics, type ApiMetrics } from "../api/metrics";
import { directoryPageRoutes, pageRoutes } from "../api/page-routes";
import { API_VERSION, openApiDocument } from "../api/openapi";
import { proofRoutes } from "../api/proof-routes";
import { createRateLimits, DEFAULT_RATE_LIMITS, type RateLimitOptions, type RateLimits } from "../api/rate-limit";
import type { Route } from "../api/route";
import { serviceRoutes } from "../api/service-routes";
import { webhookRoutes } from "../api/webhook-routes";
import type { AnchorWriter } from "../chain/anchor-writer";
import type { FeedbackWriter } from "../chain/reputation-registry";
import { createVraiService, type VraiService } from "../service";
import { createScoreWorkers } from "./score-workers";
import { createAnchoring, type Anchoring } from "../service/anchoring";
import { createOffsetClock, systemClock, type Clock, type OffsetClock } from "../service/clock";
import { createDevClock, type DevClock } from "../service/dev-clock";
import { createConsoleSessions, type ConsoleSessions, type ConsoleTimeouts } from "../service/console-sessions";
import { createDirectory, type Directory } from "../service/directory";
import { createErc8004Feedback, type Erc8004Feedback } from "../service/erc8004-feedback";
import { createFeedbackPlanner } from "../service/erc8004-planning";
import { createErc8004Publishing, type Erc8004Publishing, type FeedbackTarget } from "../service/erc8004-publishing";
import { createFeedbackSender } from "../service/erc8004-sender";
import type { OwnerLimits } from "../service/limits";
import { createLoadMonitor } from "../service/load";
import { createOperators, type Operators } from "../service/operators";
import { createOwnerAgents } from "../service/owner-agents";
import { createProofChecks, type ProofChecks } from "../service/proof-checks";
import type { ProofVerifierDeps } from "../service/proofs/types";
import { createProofVerifier } from "../service/proofs/verifiers";
import { createReads, createSiteReads, type Reads, type SiteReads } from "../service/reads";
import { createRegistrationFiles, type RegistrationFiles } from "../service/registration-files";
import { createCheckinRetention, DEFAULT_CHECKIN_RETENTION_DAYS } from "../service/checkin-retention";
import { createScheduler, type Scheduler } from "../service/scheduler";
import { resolveWithSystemDns, type ResolveAddresses } from "../service/proofs/outbound";
import { createDeadlines, type Deadlines } from "../service/webhooks/deadlines";
import { createSecretBox, secretsKey } from "../service/webhooks/secret-box";
import { createSender } from "../service/webhooks/sender";
import { createWebhooks, DEFAULT_WEBHOOK_LIMITS, type WebhookLimits, type Webhooks } from "../service/webhooks/webhooks";
import {
  createDeliveryWorker,
  DEFAULT_WEBHOOK_POLL_INTERVAL_MS,
  DEFAULT_WEBHOOK_TIMEOUT_MS,
  type DeliveryWorker,
} from "../service/webhooks/worker";
import { createWebhookRepository } from "../store/webhooks";
import { hashSecret } from "../service/secrets";
import { createAnchorRepository } from "../store/anchors";
import { createCheckinArchive } from "../store/checkin-archive";
import { createCheckinPartitions } from "../store/checkin-partitions";
import type { Db } from "../store/db";
import { createDirectoryRepository } from "../store/directory";
import { createErc8004FeedbackRepository } from "../store/erc8004-feedback";
import { migrate } from "../store/migrate";
import { createOperatorRepository } from "../store/operators";
import { createRegistrationFileRepository } from "../store/registration-files";
import { createSyncedScoreCache, type ServerScoreCache, type SyncedScoreCache } from "../store/score-cache-sync";
import { createSqlStore } from "../store/sql-store";
import { createManagePages } from "../web/console/pages";
import { createDirectoryPages } from "../web/directory-page";
import { createSessionPages } from "../web/console/session-pages";
import { createPages } from "../web/pages";
import { chainScoreParts, type ChainScoreParts } from "./chain-scores";
import { DEFAULT_SERVER_LIMITS, listen, type Listener, type PrototypedHandler, type ServerLimits } from "./listener";
import { parseStackTraceMapNow } from "./stack-traces";
import { WARM_UP_AGENTS, warmUp, withPrototypesOf } from "./warm-up";
import { checkRepliesOf } from "./config";

export type { ServerScoreCache };

/** The parts of a running server that tests and `vrai dev` reach for. */
export type ApiServer = {
  url: string;
  /** The separate metrics listener's URL, when `metrics.port` is set. */
  metricsUrl: string | undefined;
  service: VraiService;
  /** Named operators (V7): the ones `vrai operator add` made, and the bootstrap token as `admin`. */
  operators: Operators;
  reads: Reads;
  proofs: ProofChecks;
  /** ERC-8004 registration files (issue #27): what the indexer reads again when an agentURI changes. */
  registrations: RegistrationFiles;
  scheduler: Scheduler;
  anchoring: Anchoring;
  /** Owners' switch of Vrai's ERC-8004 feedback, and the feedback files. */
  publishing: Erc8004Publishing;
  /** The feedback's passes, when this server gives feedback (`erc8004.writer`). */
  erc8004Feedback: Erc8004Feedback | undefined;
  scoreCache: ServerScoreCache | undefined;
  /** The development clock, when `devClock` was given (`vrai dev`). */
  devClock: DevClock | undefined;
  /** Webhooks (issue #28): owners' endpoints, the delivery worker, and the scan of passed deadlines. */
  webhooks: WebhookParts;
  /** The owners' console's sessions (issue #29). */
  consoleSessions: ConsoleSessions;
  /**
   * Resolves once the server takes traffic (`GET /v1/ready` answers 200): its latest-score cache filled, its request path
   * run (src/app/warm-up.ts). It has listened since the start, and answers meanwhile too, more slowly.
   */
  ready: Promise<void>;
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
  /**
   * Requests per minute (and at once) per client address or account, account creations per hour and
   * failed authentications per minute per address (defaults: DEFAULT_RATE_LIMITS); with `redis`, the
   * limits live in that Redis under `keyPrefix`, shared by every instance pointed at it.
   */
  rateLimit?: Partial<Omit<RateLimitOptions, "redis">> & { redis?: { url: string; keyPrefix: string } };
  /** Express's `trust proxy` (default: loopback): whose X-Forwarded-For names the client. */
  trustProxy?: string | false;
  /** Timeouts, keep-alive and connection caps of the listener (defaults: DEFAULT_SERVER_LIMITS). */
  serverLimits?: Partial<ServerLimits>;
  /**
   * Where /metrics is served: with `token`, on the API's listener to that bearer token only; with
   * `port`, on its own listener at `host` (default 127.0.0.1), behind the token if one is set. Neither: nowhere.
   */
  metrics?: { token?: string; port?: number; host?: string };
  /** Serve the indexer's scores (derived and network score routes, self-reported summaries, agent page panels); on by default. */
  indexerApi?: boolean;
  /** Where identity proofs are checked (GitHub API, DNS, chains); the clock is the server's. */
  proofSources?: Omit<ProofVerifierDeps, "now">;
  /** Run the daily recompute and proof re-checks every `intervalMs` (off when absent: tests drive `scheduler.tick`). */
  schedule?: { intervalMs: number };
  /** Check-ins kept: whole UTC days before today (default DEFAULT_CHECKIN_RETENTION_DAYS), archived to `archiveDir` before they are dropped. */
  checkinRetention?: { days: number; archiveDir?: string };
  /** Anchors each day's score root on chain after the daily recompute; off when absent (trees and proofs are still stored). */
  anchorWriter?: AnchorWriter;
  /** Blocks on an anchor before it is final (default 1) and the longest wait between attempts (src/service/anchoring.ts). */
  anchoring?: { confirmations?: number; maxRetryMs?: number };
  /** Vrai's scores as ERC-8004 feedback (issue #27): where it is given, and this server's publisher; absent: none is given. */
  erc8004?: Erc8004Options;
  /** Memory for the latest-score cache (default 512 MiB); 0 turns it off. */
  scoreCacheBytes?: number;
  /** Agents remembered for check-ins (src/store/checkin-writes.ts; default REMEMBERED_AGENTS, 100,000); 0: none. */
  rememberedAgents?: number;
  /**
   * Reads the server sends itself before it reports ready (src/app/warm-up.ts; `vrai serve`: WARM_UP_REQUESTS, 3,000).
   * Default 0: ready once the cache is filled, for tests, which start many servers.
   */
  warmUpRequests?: number;
  /** What one owner may keep: open proof challenges (default 20) and agents (default 1,000). */
  limits?: OwnerLimits;
  /**
   * Recompute an owner's agents in the background as soon as an owner-level proof asks for it, and
   * at start what an earlier process left pending; on by default. Off: tests drain them by hand
   * (`service.ownerRecomputes.drain()`), and the scheduler's ticks do.
   */
  ownerRecomputeWorker?: boolean;
  /** Check every answer against its route's declaration (src/api/reply-check.ts); default: VRAI_CHECK_REPLIES=1, which the test suite sets. */
  checkReplies?: boolean;
  /**
   * `vrai dev`'s development clock (issue #31): the service runs on `clock` (then `clock` above is not used), and
   * `POST /v1/dev/clock/advance` moves it, with the chain's time (`moveChainTo`), running each day's schedule.
   * Absent (`vrai serve`), the dev routes do not exist.
   */
  devClock?: DevClockOptions;
  /** How webhooks are sent (issue #28). */
  webhooks?: WebhookOptions;
  /** The owners' console (issue #29) under /console. */
  console?: ConsoleOptions;
};

/** The owners' console (issue #29); every field has a default. */
export type ConsoleOptions = {
  /**
   * The URL people open the console at (PUBLIC_URL; default: the listener's URL): its origin is what every form's
   * `Origin` must be and what Sign-In with Ethereum messages name; https makes the session cookie Secure and `__Host-`.
   */
  publicUrl?: string;
  /** Idle and absolute timeouts of sessions (default DEFAULT_CONSOLE_TIMEOUTS). */
  timeouts?: ConsoleTimeouts;
  /** The chain Sign-In with Ethereum messages name: default the proofs' chain (`proofSources.walletChainId`), else 1. */
  siweChainId?: number;
  /** Further console pages behind the session (src/api/console/router.ts `ConsolePages`). */
  pages?: readonly ConsolePages[];
  /** Where a signed-in owner lands (default /console/sessions). */
  home?: string;
};

/**
 * Where ERC-8004 feedback is given (`target`), by which account when this server gives it (`writer`; without it the
 * owners' switch and the files are served and another instance sends), its files named under `publicUrl` (default:
 * the listener's URL).
 */
export type Erc8004Options = { target: FeedbackTarget; writer?: FeedbackWriter; publicUrl?: string };

/** How webhooks are sent (issue #28); every field has a default. */
export type WebhookOptions = {
  /** Loopback receivers too, over http (`vrai dev`; WEBHOOK_ALLOW_LOOPBACK): never where others share the machine. */
  allowLoopback?: boolean;
  /** Every address of an endpoint's host (default: the system's resolver); tests point names at their receivers. */
  resolveAddresses?: ResolveAddresses;
  /** A whole try, connect to the answer's last byte (WEBHOOK_TIMEOUT_MS, default 10 s). */
  timeoutMs?: number;
  /** How often an idle delivery worker looks for deliveries due (WEBHOOK_POLL_INTERVAL_MS, default 500 ms). */
  pollIntervalMs?: number;
  /** The key sealing signing secrets (WEBHOOK_SECRETS_KEY); default: derived from the operator token. */
  secretsKey?: string;
  /** Endpoints per owner and URL length (defaults: DEFAULT_WEBHOOK_LIMITS). */
  limits?: Partial<WebhookLimits>;
  /** Run the delivery worker; on by default. Off: tests run `webhooks.worker.runOnce()` by hand. */
  worker?: boolean;
};

/** The webhook parts of a server. */
export type WebhookParts = { service: Webhooks; worker: DeliveryWorker; deadlines: Deadlines };

/** What the development clock is made of (src/service/dev-clock.ts). */
export type DevClockOptions = { clock: OffsetClock; persist(offsetS: number): void; moveChainTo?(t: number): Promise<void> };

/** MAX_OPEN_CHALLENGES_PER_OWNER and MAX_AGENTS_PER_OWNER when not configured. */
export const DEFAULT_OWNER_LIMITS: OwnerLimits = { openChallenges: 20, agents: 1000 };

const DEFAULT_SCORE_CACHE_BYTES = 512 * 2 ** 20;
// The operator's busy switch is read from the store at most this often, so several API instances agree within it.
const BUSY_SWITCH_REFRESH_MS = 2000;

/** The system over `options.db`, built and not started: nothing is read, listened to or scheduled until `startApiServer` does. */
type System = {
  logger: Logger;
  scoreCache: SyncedScoreCache | undefined;
  service: VraiService;
  operators: Operators;
  reads: Reads;
  site: SiteReads;
  directory: Directory;
  proofs: ProofChecks;
  registrations: RegistrationFiles;
  anchoring: Anchoring;
  publishing: Erc8004Publishing;
  erc8004Feedback: Erc8004Feedback | undefined;
  scheduler: Scheduler;
  devClock: DevClock | undefined;
  webhooks: WebhookParts;
  chain: ChainScoreParts | undefined;
  metrics: ApiMetrics;
  consoleSessions: ConsoleSessions;
  /** The console's public origin: what its forms' Origin must be. */
  consoleOrigin: () => string;
  /** The API's routes: what the HTTP app serves and the OpenAPI document describes. */
  routes: Route[];
  /** The console's pages of agents, proofs and webhooks (issue #29), behind its sign-in. */
  consoleRoutes: ConsoleRoute[];
  /** Reads the operator's busy switch (V3.3) from the store. */
  refreshBusy(): Promise<void>;
};

/** The API listener's connections now: open, and waiting for their client (none before it listens). */
type Connections = () => { open: number; waiting: number };

/** What the running process knows and the system reads: its load, its listener, and whether it is ready. */
type ProcessState = { overloaded: () => boolean; connections: Connections; origin: () => string; ready: () => boolean };

/**
 * Builds the system of `options` over `options.db` without touching it.
 * @param running.overloaded whether the process is overloaded now (V3.3: the load monitor `startApiServer` runs)
 * @param running.connections the API listener's connections, for the metrics
 * @param running.origin the listener's URL, once it listens
 * @param running.ready whether the server takes traffic yet (`GET /v1/ready`)
 */
function createSystem(options: ApiServerOptions, running: ProcessState): System {
  const { overloaded, connections, origin } = running;
  const logger = options.logger ?? pino({ level: "info" });
  const clock = options.devClock?.clock ?? options.clock ?? systemClock;
  const scoreCache =
    options.scoreCacheBytes === 0
      ? undefined
      : createSyncedScoreCache(options.db, options.scoreCacheBytes ?? DEFAULT_SCORE_CACHE_BYTES, logger);
  const store = createSqlStore(options.db, { onScoresCommitted: scoreCache?.committed, rememberedAgents: options.rememberedAgents });
  const latestScores = scoreCache ? scoreCache.over(store) : store;

  let busySwitch = false;
  const ownerLimits = options.limits ?? DEFAULT_OWNER_LIMITS;
  const service = createVraiService({
    store,
    clock,
    limits: ownerLimits,
    logger,
    pageScorers: createScoreWorkers,
    busy: () => busySwitch || overloaded(),
    onBusyChanged: (on) => {
      busySwitch = on;
    },
  });
  const refreshBusy = async () => {
    busySwitch = await service.operator.isBusySwitchOn().catch(() => busySwitch);
  };

  const operators = createOperators({
    operators: createOperatorRepository(options.db),
    clock,
    bootstrapTokenHash: hashSecret(options.operatorToken),
  });
  const verifier = createProofVerifier({ ...options.proofSources, now: () => clock.now() });
  const registrations = createRegistrationFiles({
    files: createRegistrationFileRepository(options.db),
    proofs: store.read,
    read: verifier.readRegistrationFile,
    clock,
    logger,
  });
  const reads = createReads({ store, latestScores, clock, registrations });
  const directory = createDirectory({ store: createDirectoryRepository(options.db) });
  const proofs = createProofChecks({ store, clock, identity: service.identity, logger, limits: ownerLimits, verifier, registrations });
  const anchors = createAnchorRepository(options.db);
  const outbox = createErc8004FeedbackRepository(options.db);
  const erc8004 = options.erc8004;
  const erc8004Feedback =
    erc8004?.writer &&
    createErc8004Feedback({
      planner: createFeedbackPlanner({
        outbox,
        store,
        clock,
        target: erc8004.target,
        client: erc8004.writer.signer.address,
        publicUrl: () => erc8004.publicUrl ?? origin(),
      }),
      sender: createFeedbackSender({ outbox, writer: erc8004.writer, clock, logger }),
      clock,
      logger,
    });
  const publishing = createErc8004Publishing({ store, outbox, clock, target: erc8004?.target, onChanged: () => erc8004Feedback?.wake() });
  const anchoring = createAnchoring({
    anchors,
    clock,
    logger,
    writer: options.anchorWriter,
    onMined: () => erc8004Feedback?.wake(),
    ...options.anchoring,
  });
  const retention = options.checkinRetention ?? { days: DEFAULT_CHECKIN_RETENTION_DAYS };
  const checkinRetention = createCheckinRetention({
    partitions: createCheckinPartitions(options.db),
    clock,
    logger,
    retentionDays: retention.days,
    archive: retention.archiveDir === undefined ? undefined : createCheckinArchive(retention.archiveDir),
  });
  const webhooks = webhookParts(options, clock, logger);
  const scheduler = createScheduler({
    store,
    clock,
    scoring: service.scoring,
    proofs,
    ownerRecomputes: service.ownerRecomputes,
    checkinRetention,
    deadlines: webhooks.deadlines,
    logger,
    afterDaily: anchoring.afterDaily,
  });

  const devClock =
    options.devClock &&
    createDevClock({
      ...options.devClock,
      scheduler,
      dayAnchor: (day) => anchors.getDay(day),
      anchoring: options.anchorWriter !== undefined,
      afterDay:
        erc8004Feedback &&
        (() =>
          erc8004Feedback.runOnce().then(
            () => undefined,
            (error: unknown) => logger.error({ err: error }, "ERC-8004 feedback pass failed; retrying at the next pass"),
          )),
      logger,
    });

  const chain =
    options.indexerApi === false ? undefined : chainScoreParts({ db: options.db, accounts: service.accounts, agents: store.read, clock });
  const metrics = createApiMetrics({
    busy: overloaded,
    connections,
    scoreCache: scoreCache?.server.stats,
    anchoring: async () => {
      const now = await anchoring.status();
      return {
        unanchoredDays: now.unanchoredDays,
        oldestAgeS: now.oldestBuiltAt === null ? 0 : Math.max(0, clock.now() - now.oldestBuiltAt),
      };
    },
  });
  const site = createSiteReads({ site: store, clock });
  const consoleOrigin = () => new URL(options.console?.publicUrl ?? origin()).origin;
  const siweChainId = options.console?.siweChainId ?? options.proofSources?.walletChainId ?? 1;
  const consoleSessions = createConsoleSessions({
    store,
    clock,
    accounts: service.accounts,
    tokens: service.ownerTokens,
    timeouts: options.console?.timeouts,
    siwe: { origin: consoleOrigin, chainId: siweChainId, client: options.proofSources?.publicClientFor?.(siweChainId) },
  });
  const routes: Route[] = [
    ...serviceRoutes({ ...service, reads, site, publishing, checkinResults: metrics.checkinResults }),
    ...proofRoutes({ proofs, identity: service.identity, reads }),
    ...anchorRoutes(anchoring, reads),
    ...healthRoutes(anchoring, running.ready),
    ...directoryRoutes(directory),
    ...erc8004Routes(publishing),
    ...(chain?.routes ?? []),
    ...(devClock ? devRoutes(devClock) : []),
    ...webhookRoutes(webhooks.service),
    ...ownerTokenRoutes(service.ownerTokens),
  ];
  const ownerAgents = createOwnerAgents({ store, reads, latestScores, publishing, clock });
  const consolePages = createManagePages({ ownerAgents, reads, proofs, webhooks: webhooks.service, origin: consoleOrigin });
  const consoleServices = { accounts: service.accounts, proofs, identity: service.identity, publishing, webhooks: webhooks.service };
  return {
    logger,
    scoreCache,
    service,
    operators,
    reads,
    site,
    directory,
    proofs,
    registrations,
    anchoring,
    publishing,
    erc8004Feedback,
    scheduler,
    devClock,
    webhooks,
    chain,
    metrics,
    consoleSessions,
    consoleOrigin,
    routes,
    consoleRoutes: consoleRoutes(consoleServices, consolePages),
    refreshBusy,
  };
}

/** The webhooks of `options` (issue #28): the owners' endpoints, the delivery worker and the deadline scan, on one repository. */
function webhookParts(options: ApiServerOptions, clock: Clock, logger: Logger): WebhookParts {
  const given = options.webhooks ?? {};
  const repo = createWebhookRepository(options.db);
  const box = createSecretBox(secretsKey(given.secretsKey, options.operatorToken));
  const resolve = given.resolveAddresses ?? resolveWithSystemDns;
  const allowLoopback = given.allowLoopback ?? false;
  const timeoutMs = given.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
  return {
    service: createWebhooks({
      repo,
      clock,
      box,
      urls: { resolve, allowLoopback },
      limits: { ...DEFAULT_WEBHOOK_LIMITS, ...given.limits },
    }),
    worker: createDeliveryWorker({
      repo: repo.read,
      clock,
      box,
      send: createSender({ resolve, timeoutMs, allowLoopback }),
      // A try ends within its timeout; the margin covers logging it. A worker that died leaves the delivery due after this.
      leaseS: Math.ceil((2 * timeoutMs) / 1000) + 5,
      logger,
    }),
    deadlines: createDeadlines({ repo, clock }),
  };
}

/**
 * The OpenAPI document `vrai dev` serves at /v1/openapi.json (`vrai serve`'s and the development clock's routes), built
 * from the route declarations in-process: no database (a query would throw) and nothing listening.
 */
export function apiDocument(): unknown {
  const refused = async (): Promise<never> => {
    throw new Error("the OpenAPI document is built from the route declarations: nothing reads the database");
  };
  const db: Db = { kind: "pglite", query: refused, transaction: refused, close: async () => {} };
  const devClock: DevClockOptions = { clock: createOffsetClock(systemClock), persist: () => {} };
  const none = { open: 0, waiting: 0 };
  const { routes } = createSystem(
    { db, operatorToken: "unused", logger: pino({ level: "silent" }), scoreCacheBytes: 0, devClock },
    { overloaded: () => false, connections: () => none, origin: () => "http://127.0.0.1", ready: () => false },
  );
  return openApiDocument(routes, { version: API_VERSION });
}

/**
 * How long a started server waits for its latest-score cache to fill before it warms up and reports ready all the same
 * (it reads scores from the database until they are cached). A million agents fill in about 20 s with no traffic.
 */
const READY_CACHE_WAIT_MS = 120_000;
/** The warm-up app's rate limits: out of its way (src/app/warm-up.ts). */
const WARM_UP_ALLOWANCE = 1_000_000_000;

/** Migrates the store, builds the system on it and serves the HTTP API and the pages. */
export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  await migrate(options.db);
  const load = createLoadMonitor(options.overload ?? { maxInFlight: 256, maxLoopDelayMs: 200 });
  // The listener comes last, once the app is built: until then it holds no connection.
  let listener: Listener | undefined;
  /** Whether the server takes traffic (`GET /v1/ready`): once it has warmed up, below. */
  let ready = false;
  const {
    logger,
    scoreCache,
    service,
    operators,
    reads,
    site,
    directory,
    proofs,
    registrations,
    anchoring,
    publishing,
    erc8004Feedback,
    scheduler,
    devClock,
    webhooks,
    chain,
    metrics,
    consoleSessions,
    consoleOrigin,
    routes,
    consoleRoutes,
    refreshBusy,
  } = createSystem(options, {
    overloaded: () => load.overloaded(),
    connections: () => listener?.connections() ?? { open: 0, waiting: 0 },
    origin: () => url,
    ready: () => ready,
  });
  await refreshBusy();

  const shared = options.rateLimit?.redis;
  const redis = shared ? { client: await connectRedis(shared.url, logger), keyPrefix: shared.keyPrefix } : undefined;
  const limits = createRateLimits({ ...DEFAULT_RATE_LIMITS, ...options.rateLimit, redis });
  const metricsTokenHash = options.metrics?.token === undefined ? undefined : hashSecret(options.metrics.token);
  // The app over this system; the warm-up's has rate limits, metrics and a log of its own (src/app/warm-up.ts).
  const appWith = ({ limits, metrics, logger }: { limits: RateLimits; metrics: ApiMetrics; logger: Logger }): PrototypedHandler =>
    createHttpApp({
      routes,
      pages: [
        ...pageRoutes(
          createPages({ reads, site, directory, panels: chain?.panels, origin: () => url, publishing: (id) => publishing.status(id) }),
        ),
        ...directoryPageRoutes(createDirectoryPages({ directory })),
      ],
      authenticateOwner: service.ownerTokens.authenticate,
      console: createConsoleRouter({
        sessions: consoleSessions,
        tokens: service.ownerTokens,
        views: createSessionPages(),
        clock: service.clock,
        limits,
        origin: consoleOrigin,
        logger,
        home: options.console?.home,
        pages: [consolePageModule(consoleRoutes), ...(options.console?.pages ?? [])],
      }),
      authenticateOperator: operators.authenticate,
      authenticateAgent: async (agentId, key) => void (await service.accounts.authenticateAgent(agentId, key)),
      limits,
      accountCreation: { method: "post", path: "/v1/owners" },
      metricsTokenHash: options.metrics?.port === undefined ? metricsTokenHash : undefined,
      trustProxy: options.trustProxy,
      load,
      metrics,
      logger,
      checkReplies: options.checkReplies ?? checkRepliesOf(process.env),
    });
  const app = appWith({ limits, metrics, logger });
  const serverLimits = { ...DEFAULT_SERVER_LIMITS, ...options.serverLimits };
  const host = options.host ?? "127.0.0.1";
  // Nothing runs in the background until both listeners are bound: a taken port stops the start here (issue #33).
  const stopEarly = () => {
    load.stop();
    redis?.client.disconnect();
  };
  const api = await listen(app, { host, port: options.port ?? 0, limits: serverLimits, which: "api" }).catch((error: unknown) => {
    stopEarly();
    throw error;
  });
  listener = api;
  let metricsListener: Listener | undefined;
  if (options.metrics?.port !== undefined) {
    const metricsApp = createMetricsApp({ metrics, metricsTokenHash, limits, logger });
    metricsListener = await listen(metricsApp, {
      host: options.metrics.host ?? "127.0.0.1",
      port: options.metrics.port,
      limits: serverLimits,
      which: "metrics",
    }).catch(async (error: unknown) => {
      await api.close();
      stopEarly();
      throw error;
    });
  }
  const url = api.url;
  logger.info({ url }, "api listening");
  if (metricsListener) logger.info({ url: metricsListener.url }, "metrics listening");

  const busyTimer = setInterval(refreshBusy, BUSY_SWITCH_REFRESH_MS);
  busyTimer.unref();
  scoreCache?.start();
  if (options.ownerRecomputeWorker !== false) {
    service.ownerRecomputes.startWorker();
    service.ownerRecomputes.wake();
  }
  if (options.schedule) {
    anchoring.start();
    scheduler.start(options.schedule.intervalMs);
    erc8004Feedback?.start(options.schedule.intervalMs);
  }
  if (options.webhooks?.worker !== false) webhooks.worker.start(options.webhooks?.pollIntervalMs ?? DEFAULT_WEBHOOK_POLL_INTERVAL_MS);

  // Ready (`GET /v1/ready`) once the latest-score cache has filled (at most READY_CACHE_WAIT_MS) and the request path has run.
  const warming = new AbortController();
  const becameReady = (async () => {
    const started = performance.now();
    let cacheTimer: NodeJS.Timeout | undefined;
    const cacheWait = new Promise<void>((resolve) => {
      cacheTimer = setTimeout(resolve, READY_CACHE_WAIT_MS);
      warming.signal.addEventListener("abort", () => resolve());
    });
    await Promise.race([scoreCache?.server.warmed ?? Promise.resolve(), cacheWait]);
    clearTimeout(cacheTimer);
    const cacheMs = Math.round(performance.now() - started);
    const warmUpApp = () =>
      withPrototypesOf(
        app,
        appWith({
          limits: createRateLimits({ ...DEFAULT_RATE_LIMITS, perMinute: WARM_UP_ALLOWANCE, burst: WARM_UP_ALLOWANCE }),
          metrics: createApiMetrics({ busy: () => false }),
          logger: pino({ level: "silent" }),
        }),
      );
    const requests = options.warmUpRequests ?? 0;
    // Its stack traces' source map parsed now rather than at its first error under load: 50 ms, warm-up or not.
    const sourceMap = parseStackTraceMapNow();
    const run =
      requests > 0
        ? await warmUp(warmUpApp(), {
            limits: serverLimits,
            requests,
            agentIds: scoreCache?.server.sample(WARM_UP_AGENTS),
            signal: warming.signal,
          }).catch((error: unknown) => {
            // Its listener could not be made: the server is ready all the same, only not warm.
            logger.warn({ err: error }, "warm-up not run: ready without it");
            return undefined;
          })
        : undefined;
    if (warming.signal.aborted) return;
    ready = true;
    logger.info({ cacheMs, sourceMap, warmUp: run && { ...run, ms: Math.round(run.ms) } }, "api ready");
  })();

  return {
    url,
    ready: becameReady,
    metricsUrl: metricsListener?.url,
    service,
    operators,
    reads,
    proofs,
    registrations,
    scheduler,
    anchoring,
    publishing,
    erc8004Feedback,
    scoreCache: scoreCache?.server,
    devClock,
    webhooks,
    consoleSessions,
    async close() {
      warming.abort();
      await becameReady;
      clearInterval(busyTimer);
      await scheduler.stop();
      await erc8004Feedback?.stop();
      // Tries in flight end (within their timeout) and are logged; what is due stays for the next start.
      await webhooks.worker.stop();
      await anchoring.stop();
      load.stop();
      await Promise.all([api.close(), metricsListener?.close()]);
      // A recompute asked for and not done yet stays stored: the next start drains it.
      await service.ownerRecomputes.stop();
      await scoreCache?.stop();
      redis?.client.disconnect();
    },
  };
}

/**
 * A Redis client for the shared rate limits, once it has connected or failed to. Commands never wait
 * for a connection (no offline queue): while Redis is down each limit falls back to this instance's
 * memory, and the client reconnects on its own. Going down and coming back are logged once each.
 */
async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  let down = false;
  client.on("error", (error: Error) => {
    if (!down) logger.warn({ err: error }, "rate-limit Redis unreachable: each instance limits in its own memory until it is back");
    down = true;
  });
  client.on("ready", () => {
    if (down) logger.info("rate-limit Redis reachable again: limits are shared");
    down = false;
  });
  await new Promise<void>((resolve) => {
    client.once("ready", resolve);
    client.once("error", () => resolve());
  });
  return client;
}
