/**
 * The HTTP app: every request goes through Express and its middleware. Each declared route is
 * registered once, in order: rate limit, authentication, validation of its parts, its handler, its
 * reply; every error leaves as the JSON error shape.
 */
import type { IncomingMessage } from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import type { Logger } from "pino";
import { UnauthorizedError } from "../service/errors";
import { hashSecret } from "../service/secrets";
import { errorHandler, sendError } from "./http";
import type { ApiMetrics } from "./metrics";
import { openApiDocument } from "./openapi";
import type { RateLimiter } from "./rate-limit";
import { checkedError, checkReply } from "./reply-check";
import type { Reply, Route } from "./route";

/** The load a request adds while it is served (V3.3's in-flight count). */
export type LoadGauge = { enter(): () => void };

export type HttpAppOptions = {
  /** The API's routes: validated, and described by the OpenAPI document at /v1/openapi.json. */
  routes: readonly Route[];
  /** Routes outside the API document (agent pages), declared the same way; they take no credential, so no rate limit per credential applies. */
  pages?: readonly Route[];
  /** The owner id of an owner token; throws UnauthorizedError when it is not valid. */
  authenticateOwner(token: string): Promise<string>;
  /** The name of the operator an operator token belongs to (V7 "who"); throws UnauthorizedError when it is not valid. */
  authenticateOperator(token: string): Promise<string>;
  limiter: RateLimiter;
  load: LoadGauge;
  metrics: ApiMetrics;
  logger: Logger;
  version?: string;
  /** Check every answer against its route's declaration, a mismatch answered as a 500 (src/api/reply-check.ts): the test suite's setting; off by default, it costs CPU on every reply. */
  checkReplies?: boolean;
};

const BODY_LIMIT = "32kb";

/**
 * CORS of the public read routes: any origin may read them, without credentials (no
 * Allow-Credentials, so a browser sends no cookies and reads nothing that needs them). ETag is
 * exposed for conditional reads, Retry-After for 429s.
 */
const CORS_HEADERS: Readonly<Record<string, string>> = { "Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "ETag, Retry-After" };
/** A preflight's answer: the methods of a public read and the one request header a reader may add. */
const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  ...CORS_HEADERS, "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS", "Access-Control-Allow-Headers": "If-None-Match", "Access-Control-Max-Age": "600",
};

/** Builds the Express app of the API and the pages. */
export function createHttpApp(options: HttpAppOptions): express.Express {
  const { logger, metrics, limiter } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", "loopback");
  const log = (error: unknown) => logger.error({ err: error }, "request failed");
  const checked = options.checkReplies === true;
  // Checked, an error a route does not declare becomes a reply_mismatch for the error handler.
  const errorCheck = (route: Route) => (checked ? [(error: unknown, _req: Request, _res: Response, next: NextFunction) => next(checkedError(route, error))] : []);

  // Every request is counted, timed and logged once it has been answered.
  app.use((req, res, next) => {
    const leave = options.load.enter();
    const started = process.hrtime.bigint();
    res.on("close", () => {
      leave();
      const route = routePathOf(req);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, route }, seconds);
      // Never the headers, body or URL query: they carry tokens, keys and idempotency keys.
      if (logger.isLevelEnabled("debug")) logger.debug({ method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, "request");
    });
    next();
  });

  app.get("/metrics", async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  const openApi = openApiDocument(options.routes, { version: options.version ?? "0.1.0" });
  app.get("/v1/openapi.json", (_req, res) => void res.set(CORS_HEADERS).json(openApi));

  // Only routes that declare a body read one: the others never pay for body parsing.
  const jsonBody = express.json({ limit: BODY_LIMIT, strict: true, type: ["application/json", "application/*+json"] });
  const preflight = (_req: Request, res: Response) => void res.status(204).set(PREFLIGHT_HEADERS).end();
  app.options("/v1/openapi.json", preflight);
  for (const route of options.routes) {
    const serve = async (req: Request, res: Response) => {
      // Before anything can fail: a cross-origin reader sees the error too.
      if (route.cors === "public") res.set(CORS_HEADERS);
      const credential = bearer(req);
      // The limiter keys a credential by its SHA-256, so no token is held in its table.
      const allowed = limiter.take(credential ? `c:${hashSecret(credential)}` : `ip:${req.ip}`);
      if (!allowed.ok) {
        res.set("Retry-After", String(allowed.retryAfterS));
        return sendError(res, 429, "rate_limited", `too many requests; retry in ${allowed.retryAfterS} s`);
      }
      if (route.auth !== "none" && !credential) throw new UnauthorizedError("missing_credentials", "an Authorization: Bearer header is required");
      const ownerId = route.auth === "owner" ? await options.authenticateOwner(credential) : "";
      const operatorName = route.auth === "operator" ? await options.authenticateOperator(credential) : "";
      // Express parses the query string when it is read: only for a route that declares one.
      const reply = await route.respond({ params: req.params, query: route.query && req.query, headers: req.headers, body: req.body, ownerId, operatorName, credential });
      send(res, route, reply, checked);
    };
    if (route.body) app[route.method](route.path, jsonBody, serve, ...errorCheck(route));
    else app[route.method](route.path, serve, ...errorCheck(route));
  }
  // Preflights after the routes: a GET is matched without walking past them.
  const preflighted = new Set(options.routes.filter((route) => route.cors === "public").map((route) => route.path));
  for (const path of preflighted) app.options(path, preflight);
  // The pages take no credential and read no body; their own router answers OPTIONS with what they allow.
  const pages = express.Router();
  for (const route of options.pages ?? []) {
    pages[route.method](route.path, async (req: Request, res: Response) => {
      send(res, route, await route.respond({ params: req.params, query: req.query, headers: req.headers, body: undefined, ownerId: "", operatorName: "", credential: "" }), checked);
    }, ...errorCheck(route));
  }
  app.use(pages);

  app.use((_req, res) => sendError(res, 404, "not_found", "no such route"));
  app.use(errorHandler(log));
  return app;
}

/** Writes a handler's reply: JSON (built here or already serialised) or declared text, after the reply's headers; `checked`, only a declared one. */
function send(res: Response, route: Route, reply: Reply, checked: boolean): void {
  if (checked) checkReply(route, reply);
  res.status(reply.status);
  for (const [name, value] of Object.entries(reply.headers ?? {})) if (value !== undefined) res.set(name, value);
  if ("text" in reply) {
    if (!res.get("Content-Type")) res.type(route.responses[reply.status]?.contentType ?? "text/plain");
    res.send(reply.text);
    return;
  }
  if ("json" in reply) res.type("application/json").send(reply.json.text);
  else if (reply.body !== undefined) res.json(reply.body);
  else res.end();
}

/** The declared path of the route that served `req`, or "unmatched". */
function routePathOf(req: Request): string {
  const path: unknown = req.route?.path;
  return typeof path === "string" ? path : "unmatched";
}

/** The bearer credential of a request ("" when none), or a 401 when the header is not `Bearer <token>`. */
function bearer(req: IncomingMessage): string {
  const header = req.headers.authorization;
  if (!header) return "";
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
  if (!match) throw new UnauthorizedError("malformed_authorization", "the Authorization header must be: Bearer <token>");
  return match[1];
}
