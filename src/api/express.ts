/**
 * The HTTP app: every request goes through Express and its middleware. Each declared route is
 * registered once, in order: rate limit and authentication, the body (JSON only), validation of its
 * parts, its handler, its reply; every error leaves as the JSON error shape. Every answer says
 * `nosniff`; every route answers OPTIONS.
 */
import type { IncomingMessage } from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import ipaddr from "ipaddr.js";
import type { Logger } from "pino";
import { BaseError, InvalidInputError } from "../errors";
import { UnauthorizedError } from "../service/errors";
import { hashMatches, hashSecret } from "../service/secrets";
import { errorHandler, sendError } from "./http";
import type { ApiMetrics } from "./metrics";
import { openApiDocument } from "./openapi";
import { RateLimitedError, type Limit, type RateLimits, type Verdict } from "./rate-limit";
import { checkedError, checkReply } from "./reply-check";
import type { Method, Reply, Route } from "./route";
/** The load a request adds while it is served (V3.3's in-flight count). */
export type LoadGauge = { enter(): () => void };

export type HttpAppOptions = {
  /** The API's routes: validated, and described by the OpenAPI document at /v1/openapi.json. */
  routes: readonly Route[];
  /** Routes outside the API document (agent pages), declared the same way; they take no credential and are limited per client address. */
  pages?: readonly Route[];
  /** The owner id of an owner token; throws UnauthorizedError when it is not valid. */
  authenticateOwner(token: string): Promise<string>;
  /** The name of the operator an operator token belongs to (V7 "who"); throws UnauthorizedError when it is not valid. */
  authenticateOperator(token: string): Promise<string>;
  limits: RateLimits;
  /** The route that creates accounts (`POST /v1/owners`): also charged to the stricter account-creation limit of its address. */
  accountCreation?: { method: Method; path: string };
  /** SHA-256 of the token `/metrics` asks for (`METRICS_TOKEN`); without one this app serves no /metrics (see `createMetricsApp`). */
  metricsTokenHash?: string;
  /** Express's `trust proxy`: whose X-Forwarded-For names the client address the limits key on (default: loopback proxies only). */
  trustProxy?: string | false;
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
/** Answers that may carry a secret (owner tokens, agent keys) or an account's data are never stored by a cache. */
const NO_STORE = "no-store";

/** Who an admitted request is charged to, and what authentication found. */
type Caller = { ownerId: string; operatorName: string; credential: string; account: string };
const NOBODY: Caller = Object.freeze({ ownerId: "", operatorName: "", credential: "", account: "" });

/** Builds the Express app of the API and the pages. */
export function createHttpApp(options: HttpAppOptions): express.Express {
  const { logger, metrics, limits } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", options.trustProxy ?? "loopback");
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
  app.use(everyAnswer);

  const limitAddress = addressLimiter(limits.address);
  const allowed = new Map<string, Set<string>>();
  const allow = (path: string, method: string) => {
    const methods = allowed.get(path) ?? new Set<string>();
    methods.add(method.toUpperCase());
    allowed.set(path, methods);
  };

  if (options.metricsTokenHash !== undefined) {
    app.get("/metrics", limitAddress, metricsHandler(metrics, options.metricsTokenHash, limits));
    allow("/metrics", "get");
  }
  const openApi = openApiDocument(options.routes, { version: options.version ?? "0.1.0" });
  app.get("/v1/openapi.json", limitAddress, (_req, res) => void res.set(CORS_HEADERS).json(openApi));
  allow("/v1/openapi.json", "get");

  const creation = options.accountCreation;
  if (creation && !options.routes.some((route) => route.method === creation.method && route.path === creation.path)) {
    throw new Error(`accountCreation names no route: ${creation.method} ${creation.path}`);
  }
  const authenticate = { owner: options.authenticateOwner, operator: options.authenticateOperator };
  for (const route of options.routes) {
    if (route.auth === "agent" && !route.path.includes(":id")) throw new Error(`an agent route is charged to its :id: ${route.path}`);
    const createsAccount = route.method === creation?.method && route.path === creation.path;
    const readBody = route.body ? jsonBody : undefined;
    app[route.method](route.path, async (req: Request, res: Response) => {
      // Before anything can fail: a cross-origin reader sees the error too, and no cache keeps an answer with a secret.
      if (route.cors === "public") res.set(CORS_HEADERS);
      else res.set("Cache-Control", NO_STORE);
      const caller = await admit(route, req, limits, authenticate);
      try {
        if (readBody) await readBody(req, res);
        if (createsAccount) charge(await limits.accountCreation.take(addressOf(req)));
        // Express parses the query string when it is read: only for a route that declares one.
        const reply = await route.respond({ params: req.params, query: route.query && req.query, headers: req.headers, body: req.body, ...caller });
        send(res, route, reply, checked);
      } catch (error) {
        // An agent is charged up front (its key is checked in the handler); an error is charged to the address instead.
        if (route.auth === "agent") await rechargeToAddress(error, caller.account, addressOf(req), limits);
        throw error;
      }
    }, ...errorCheck(route));
    allow(route.path, route.method);
  }
  // The pages take no credential and read no body.
  for (const route of options.pages ?? []) {
    app[route.method](route.path, limitAddress, async (req: Request, res: Response) => {
      send(res, route, await route.respond({ params: req.params, query: req.query, headers: req.headers, body: undefined, ...NOBODY }), checked);
    }, ...errorCheck(route));
    allow(route.path, route.method);
  }
  // OPTIONS after the routes (a GET is matched without walking past them): a preflight for public reads, else what the path allows.
  const preflighted = new Set(["/v1/openapi.json", ...options.routes.filter((route) => route.cors === "public").map((route) => route.path)]);
  for (const [path, methods] of allowed) {
    if (methods.has("GET")) methods.add("HEAD");
    const headers = { ...(preflighted.has(path) ? PREFLIGHT_HEADERS : {}), Allow: [...methods, "OPTIONS"].join(", ") };
    app.options(path, limitAddress, (_req, res) => void res.status(204).set(headers).end());
  }

  app.use(limitAddress, (_req, res) => sendError(res, 404, "not_found", "no such route"));
  app.use(errorHandler(log));
  return app;
}

/**
 * The app of a separate metrics listener (`METRICS_PORT`): `/metrics` only, behind the metrics token
 * when one is set; nothing else answers there.
 */
export function createMetricsApp(options: { metrics: ApiMetrics; metricsTokenHash?: string; limits: RateLimits; logger: Logger }): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.use(everyAnswer);
  const limitAddress = addressLimiter(options.limits.address);
  const serve = options.metricsTokenHash === undefined ? serveMetrics(options.metrics) : metricsHandler(options.metrics, options.metricsTokenHash, options.limits);
  app.get("/metrics", limitAddress, serve);
  app.use(limitAddress, (_req, res) => sendError(res, 404, "not_found", "no such route"));
  app.use(errorHandler((error) => options.logger.error({ err: error }, "metrics request failed")));
  return app;
}

/** What every answer carries, and the one check every request passes first: at most one Authorization header. */
function everyAnswer(req: Request, res: Response, next: (error?: unknown) => void): void {
  res.set("X-Content-Type-Options", "nosniff");
  // Node keeps the first of two Authorization headers and drops the other: which one was meant is unknowable.
  if (authorizationHeaders(req.rawHeaders) > 1) return next(new InvalidInputError("duplicate_authorization", "send one Authorization header, not several"));
  next();
}

/** How many Authorization headers `rawHeaders` (name, value, name, value, ...) holds. */
function authorizationHeaders(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i].length === 13 && rawHeaders[i].toLowerCase() === "authorization") count++;
  return count;
}

/** The client address a request is charged to: `req.ip` under the app's `trust proxy`, keyed by `addressKey`. */
const addressOf = (req: Request): string => addressKey(req.ip ?? req.socket.remoteAddress ?? "");

/**
 * The limits' key of a client address: IPv4 as it is (also when IPv4-mapped), IPv6 by its /64, the
 * block one subscriber is given: keyed per address, each of its 2^64 addresses would be a fresh bucket.
 */
export function addressKey(address: string): string {
  if (!address.includes(":") || !ipaddr.IPv6.isValid(address)) return address;
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  return `${ip.parts.slice(0, 4).map((part) => part.toString(16)).join(":")}::/64`;
}

/** Throws the 429 of a refusal. */
function charge(verdict: Verdict): void {
  if (!verdict.ok) throw new RateLimitedError(verdict.retryAfterS);
}

/** Middleware charging a request to its client address. */
function addressLimiter(limit: Limit) {
  return async (req: Request, _res: Response, next: () => void) => {
    charge(await limit.take(addressOf(req)));
    next();
  };
}

/**
 * Rate limit and authentication of a route's request (issue #15, finding 1). Without an account, the
 * request is charged to its client address. With one, the address must have failed authentications
 * left (else a 429 before any lookup); a failure is charged to the address; a success to the account
 * (owner id, operator name), never to the credential, so a made-up token gets no bucket of its own.
 * An agent's key is checked in its handler, in the transaction of the check-in: the agent named in
 * the path is charged up front and `rechargeToAddress` moves the charge if the request fails.
 */
async function admit(route: Route, req: Request, limits: RateLimits, authenticate: { owner(token: string): Promise<string>; operator(token: string): Promise<string> }): Promise<Caller> {
  const address = addressOf(req);
  if (route.auth === "none") {
    charge(await limits.address.take(address));
    return NOBODY;
  }
  charge(await limits.authFailures.peek(address));
  try {
    const credential = bearer(req);
    if (route.auth === "owner") {
      const ownerId = await authenticate.owner(credential);
      return chargedTo(limits.account, { ownerId, operatorName: "", credential, account: `o:${ownerId}` });
    }
    if (route.auth === "operator") {
      const operatorName = await authenticate.operator(credential);
      return chargedTo(limits.account, { ownerId: "", operatorName, credential, account: `op:${operatorName}` });
    }
    return chargedTo(limits.account, { ownerId: "", operatorName: "", credential, account: `a:${req.params.id}` });
  } catch (error) {
    if (error instanceof UnauthorizedError) charge(await limits.authFailures.take(address));
    throw error;
  }
}

/** `caller`, once its account had a point left. */
async function chargedTo(limit: Limit, caller: Caller): Promise<Caller> {
  charge(await limit.take(caller.account));
  return caller;
}

/**
 * An agent route's request that failed was not vouched for by the agent's key: its point goes back to
 * the agent and the address pays instead, as a failed authentication (401) or as an unauthenticated
 * request (a malformed body, a bad header, a conflict). A request past either limit answers 429.
 */
async function rechargeToAddress(error: unknown, account: string, address: string, limits: RateLimits): Promise<void> {
  if (error instanceof RateLimitedError) return;
  await limits.account.giveBack(account);
  charge(await (error instanceof UnauthorizedError ? limits.authFailures : limits.address).take(address));
}

/** The body of a JSON route: 415 for any other content type, and for a body sent without one (finding 9). */
async function jsonBody(req: Request, res: Response): Promise<void> {
  const type = req.headers["content-type"];
  if (type === undefined ? hasBody(req) : !isJson(type)) {
    throw new BaseError("unsupported_media_type", "the request body must be application/json", { status: 415 });
  }
  await new Promise<void>((resolve, reject) => parseJson(req, res, (error?: unknown) => (error === undefined ? resolve() : reject(error))));
}

const parseJson = express.json({ limit: BODY_LIMIT, strict: true, type: () => true });

/** Whether a content type is JSON: `application/json` or `application/<something>+json`, any parameters (charset). */
function isJson(contentType: string): boolean {
  const media = contentType.split(";", 1)[0].trim().toLowerCase();
  return media === "application/json" || /^application\/[!#$%&'*.^_`|~0-9a-z-]+\+json$/.test(media);
}

/** Whether a request carries a body: a non-zero Content-Length or any Transfer-Encoding. */
const hasBody = (req: IncomingMessage): boolean => req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;

/** `/metrics` behind the metrics token: a wrong or missing token is a failed authentication of its address. */
function metricsHandler(metrics: ApiMetrics, tokenHash: string, limits: RateLimits) {
  const serve = serveMetrics(metrics);
  return async (req: Request, res: Response) => {
    res.set("Cache-Control", NO_STORE);
    const address = addressOf(req);
    charge(await limits.authFailures.peek(address));
    let valid = false;
    try {
      valid = hashMatches(hashSecret(bearer(req)), tokenHash);
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
    }
    if (!valid) {
      charge(await limits.authFailures.take(address));
      throw new UnauthorizedError("invalid_metrics_token", "/metrics needs Authorization: Bearer <the metrics token>");
    }
    await serve(req, res);
  };
}

/** The Prometheus text of the registry. */
function serveMetrics(metrics: ApiMetrics) {
  return async (_req: Request, res: Response) => {
    res.set("Cache-Control", NO_STORE).type(metrics.registry.contentType).send(await metrics.registry.metrics());
  };
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

/** The bearer credential of a request, or a 401 when there is none or the header is not `Bearer <token>`. */
function bearer(req: IncomingMessage): string {
  const header = req.headers.authorization;
  if (!header) throw new UnauthorizedError("missing_credentials", "an Authorization: Bearer header is required");
  const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
  if (!match) throw new UnauthorizedError("malformed_authorization", "the Authorization header must be: Bearer <token>");
  return match[1];
}
