import express, { type Request, type Response } from "express";
import type { Logger } from "pino";
import client from "prom-client";
import type { VraiService } from "../service";
import { UnauthorizedError } from "../service/errors";
import { hashSecret, secretMatches } from "../service/secrets";
import type { LoadMonitor } from "../service/load";
import { errorHandler, parseWith, sendError } from "./http";
import { createRateLimiter } from "./rate-limit";
import { openApiDocument, type RouteSpec } from "./routes";
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
};

const BODY_LIMIT = "32kb";

/** The Express application: routes, validation, auth, rate limits, metrics and the error shape. */
export function createApp(options: AppOptions): express.Express {
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

  const limiter = createRateLimiter(options.rateLimit ?? { perMinute: 600, burst: 120 });
  const routes: RouteSpec[] = [...serviceRoutes(service, { checkinResults }), ...(options.extraRoutes ?? [])];
  const openApi = openApiDocument(routes, { version: options.version ?? "0.1.0" });

  app.use((req, res, next) => {
    const leave = load.enter();
    const started = process.hrtime.bigint();
    res.on("close", () => {
      leave();
      const route = (req.route?.path as string | undefined) ?? "unmatched";
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      requests.inc({ method: req.method, route, status: String(res.statusCode) });
      duration.observe({ method: req.method, route }, seconds);
      // Never the headers, body or URL query: they carry tokens, keys and idempotency keys.
      logger.debug({ method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, "request");
    });
    next();
  });
  app.use(express.json({ limit: BODY_LIMIT, strict: true, type: ["application/json", "application/*+json"] }));

  app.get("/metrics", async (_req, res) => {
    res.set("Content-Type", registry.contentType).send(await registry.metrics());
  });
  app.get("/v1/openapi.json", (_req, res) => void res.json(openApi));

  for (const route of routes) {
    app[route.method](route.path, async (req: Request, res: Response, next) => {
      try {
        const credential = bearer(req);
        const limitKey = credential ? `c:${hashSecret(credential)}` : `ip:${req.ip}`;
        const allowed = limiter.take(limitKey);
        if (!allowed.ok) {
          res.set("Retry-After", String(allowed.retryAfterS));
          return sendError(res, 429, "rate_limited", `too many requests; retry in ${allowed.retryAfterS} s`);
        }
        let ownerId = "";
        if (route.auth !== "none" && !credential) throw new UnauthorizedError("missing_credentials", "an Authorization: Bearer header is required");
        if (route.auth === "owner") ownerId = await service.accounts.authenticateOwner(credential);
        if (route.auth === "operator" && !secretMatches(credential, options.operatorTokenHash)) {
          throw new UnauthorizedError("invalid_operator_token", "the operator token is not valid");
        }
        const params = route.params ? parseWith(route.params, req.params, "path") : {};
        const query = route.query ? parseWith(route.query, req.query, "query") : {};
        const headers = route.headers ? parseWith(route.headers, req.headers, "header") : {};
        const body = route.body ? parseWith(route.body, req.body ?? {}, "body") : undefined;
        const reply = await route.handler({ params, query, headers, body, ownerId, credential, req, res } as never);
        if (reply.headers) res.set(reply.headers);
        res.status(reply.status);
        if (reply.raw) res.type(reply.raw.contentType).send(reply.raw.text);
        else if (reply.body === undefined) res.end();
        else res.json(reply.body);
      } catch (error) {
        next(error);
      }
    });
  }
  options.mount?.(app);

  app.use((_req, res) => sendError(res, 404, "not_found", "no such route"));
  app.use(errorHandler((error) => logger.error({ err: error }, "request failed")));
  return app;
}

function bearer(req: Request): string {
  const header = req.headers.authorization;
  if (!header) return "";
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
  if (!match) throw new UnauthorizedError("malformed_authorization", "the Authorization header must be: Bearer <token>");
  return match[1];
}
