import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import querystring from "node:querystring";
import express, { type Request, type Response } from "express";
import proxyaddr from "proxy-addr";
import type { Logger } from "pino";
import client from "prom-client";
import type { ScoreCacheStats } from "../store/score-cache";
import type { VraiService } from "../service";
import { UnauthorizedError } from "../service/errors";
import { hashMatches, hashSecret } from "../service/secrets";
import type { LoadMonitor } from "../service/load";
import { createPartParser, errorHandler, sendError, sendErrorOf, writeReply } from "./http";
import { createRateLimiter } from "./rate-limit";
import { createRouteTable, openApiDocument, type RouteSpec } from "./routes";
import { serviceRoutes } from "./service-routes";

export type AppOptions = {
  service: VraiService;
  logger: Logger;
  /** SHA-256 of the operator token (the token itself is never kept). */
  operatorTokenHash: string;
  load: LoadMonitor;
  /** Requests per minute per credential or client address, and the burst allowed. */
  rateLimit?: { perMinute: number; burst: number };
  /** Extra routes (proofs, indexer-backed scores, pages) declared the same way. */
  extraRoutes?: RouteSpec[];
  /** Plain express routers mounted before the 404 handler (agent page). */
  mount?: (app: express.Express) => void;
  version?: string;
  /** Figures of the latest-score cache, when there is one, for /metrics. */
  scoreCacheStats?: () => ScoreCacheStats;
};

const BODY_LIMIT = "32kb";

/**
 * The API's request listener: routes, validation, auth, rate limits, metrics and the error shape.
 * The route table's requests are served on node's http API; Express serves the rest.
 */
export function createApp(options: AppOptions): RequestListener {
  const { service, logger, load } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", "loopback");

  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({ name: "vrai_http_requests_total", help: "HTTP requests by route and status", labelNames: ["method", "route", "status"], registers: [registry] });
  const duration = new client.Histogram({
    name: "vrai_http_request_duration_seconds", help: "HTTP request duration by route", labelNames: ["method", "route"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers: [registry],
  });
  const checkinResults = new client.Counter({ name: "vrai_checkins_total", help: "Check-in requests by result", labelNames: ["result"], registers: [registry] });
  new client.Gauge({
    name: "vrai_busy", help: "1 while the service asks agents for 7200 s heartbeats (V3.3)", registers: [registry],
    collect() { this.set(load.overloaded() ? 1 : 0); },
  });

  if (options.scoreCacheStats) registerScoreCacheMetrics(registry, options.scoreCacheStats);

  const limiter = createRateLimiter(options.rateLimit ?? { perMinute: 600, burst: 120 });
  const routes: RouteSpec[] = [...serviceRoutes(service, { checkinResults }), ...(options.extraRoutes ?? [])];
  const openApi = openApiDocument(routes, { version: options.version ?? "0.1.0" });

  const trustProxy = proxyaddr.compile("loopback");
  const log = (error: unknown) => logger.error({ err: error }, "request failed");

  /**
   * Serves one route on node's request and response: rate limit, authentication, validation (each
   * part parsed as declared), the handler and its reply, or the error's JSON shape.
   */
  function createRouteHandler(route: RouteSpec) {
    const parseParams = route.params && createPartParser(route.params, "path");
    const parseQuery = route.query && createPartParser(route.query, "query");
    const parseHeaders = route.headers && createPartParser(route.headers, "header");
    const parseBody = route.body && createPartParser(route.body, "body");
    return async (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, body: unknown): Promise<void> => {
      try {
        const credential = bearer(req);
        // The credential's SHA-256, computed once: the limiter's key and the operator check both use it.
        const credentialHash = credential ? hashSecret(credential) : "";
        // The client's address as Express's req.ip gives it with "trust proxy" set to loopback.
        const allowed = limiter.take(credential ? `c:${credentialHash}` : `ip:${proxyaddr(req, trustProxy)}`);
        if (!allowed.ok) {
          res.setHeader("Retry-After", String(allowed.retryAfterS));
          return sendError(res, 429, "rate_limited", `too many requests; retry in ${allowed.retryAfterS} s`);
        }
        let ownerId = "";
        if (route.auth !== "none" && !credential) throw new UnauthorizedError("missing_credentials", "an Authorization: Bearer header is required");
        if (route.auth === "owner") ownerId = await service.accounts.authenticateOwner(credential);
        if (route.auth === "operator" && !hashMatches(credentialHash, options.operatorTokenHash)) {
          throw new UnauthorizedError("invalid_operator_token", "the operator token is not valid");
        }
        const parsedParams = parseParams ? parseParams(params) : {};
        // Express 5's default ("simple") query parser is node's querystring.
        const queryAt = parseQuery ? req.url!.indexOf("?") : -1;
        const query = parseQuery ? parseQuery(queryAt === -1 ? {} : { ...querystring.parse(req.url!.slice(queryAt + 1)) }) : {};
        const headers = parseHeaders ? parseHeaders(req.headers) : {};
        const parsedBody = parseBody ? parseBody(body ?? {}) : undefined;
        const reply = await route.handler({ params: parsedParams, query, headers, body: parsedBody, ownerId, credential } as never);
        writeReply(req, res, reply);
      } catch (error) {
        sendErrorOf(res, error, log);
      }
    };
  }

  const table = createRouteTable(routes);
  // The table answers before Express's router does, so it must not take a path registered ahead of the routes.
  for (const path of ["/metrics", "/v1/openapi.json"]) {
    const shadowing = table.match("GET", path);
    if (shadowing) throw new Error(`route ${shadowing.route.path} would shadow ${path}`);
  }
  // Only routes with a body schema read one: the others never pay for body parsing. express.json
  // needs nothing of Express, so the listener runs it on node's request too.
  const jsonBody = express.json({ limit: BODY_LIMIT, strict: true, type: ["application/json", "application/*+json"] });
  const handlers = new Map(routes.map((route) => [route, createRouteHandler(route)]));

  app.get("/metrics", async (_req, res) => {
    res.set("Content-Type", registry.contentType).send(await registry.metrics());
  });
  app.get("/v1/openapi.json", (_req, res) => void res.json(openApi));

  // The same routes through Express's router, for the requests the table leaves to it (HEAD, OPTIONS, escapes).
  for (const route of routes) {
    const handle = handlers.get(route)!;
    const serve = (req: Request, res: Response) => void handle(req, res, req.params as Record<string, string>, req.body);
    if (route.body) app[route.method](route.path, jsonBody, serve);
    else app[route.method](route.path, serve);
  }
  options.mount?.(app);

  app.use((_req, res) => sendError(res, 404, "not_found", "no such route"));
  app.use(errorHandler(log));

  /**
   * The server's request listener. Every request is counted, timed and logged here. A request the
   * route table recognises is served right here on node's request and response (a body first goes
   * through the JSON parser); Express gets the rest (HEAD and OPTIONS, escapes, metrics, OpenAPI,
   * pages, 404).
   */
  return (req, res) => {
    const leave = load.enter();
    const started = process.hrtime.bigint();
    const match = table.match(req.method!, req.url!);
    res.on("close", () => {
      leave();
      const route = match?.route.path ?? ((req as Request).route?.path as string | undefined) ?? "unmatched";
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      requests.inc({ method: req.method, route, status: String(res.statusCode) });
      duration.observe({ method: req.method, route }, seconds);
      // Never the headers, body or URL query: they carry tokens, keys and idempotency keys.
      if (logger.isLevelEnabled("debug")) logger.debug({ method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, "request");
    });
    if (!match) return app(req, res);
    const handle = handlers.get(match.route)!;
    if (!match.route.body) return void handle(req, res, match.params, undefined);
    jsonBody(req, res, (error) => (error ? sendErrorOf(res, error, log) : void handle(req, res, match.params, (req as Request).body)));
  };
}

function bearer(req: IncomingMessage): string {
  const header = req.headers.authorization;
  if (!header) return "";
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
  if (!match) throw new UnauthorizedError("malformed_authorization", "the Authorization header must be: Bearer <token>");
  return match[1];
}

/** The latest-score cache's size, and its hits and misses as counters (read from the cache's own counts). */
function registerScoreCacheMetrics(registry: client.Registry, stats: () => ScoreCacheStats): void {
  new client.Gauge({ name: "vrai_score_cache_entries", help: "Agents whose latest score is cached", registers: [registry], collect() { this.set(stats().entries); } });
  new client.Gauge({ name: "vrai_score_cache_bytes", help: "Memory charged to the latest-score cache", registers: [registry], collect() { this.set(stats().bytes); } });
  const counted = { hits: 0, misses: 0 };
  for (const kind of ["hits", "misses"] as const) {
    new client.Counter({
      name: `vrai_score_cache_${kind}_total`, help: `Latest-score reads answered ${kind === "hits" ? "from" : "without"} the cache`, registers: [registry],
      collect() {
        const now = stats()[kind];
        this.inc(now - counted[kind]);
        counted[kind] = now;
      },
    });
  }
}
