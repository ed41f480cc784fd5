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
import { ForbiddenError, UnauthorizedError } from "../service/errors";
import type { OwnerScope } from "../service/ports";
import { hashMatches, hashSecret, ID_PATTERN } from "../service/secrets";
import { errorHandler, sendError } from "./http";
import type { ApiMetrics } from "./metrics";
import { API_VERSION, openApiDocument } from "./openapi";
import { RateLimitedError, type Limit, type RateLimits, type Verdict } from "./rate-limit";
import { checkedError, checkKeyVerified, checkReply } from "./reply-check";
import type { Method, Reply, Route } from "./route";
/** The load a request adds while it is served (V3.3's in-flight count). */
export type LoadGauge = { enter(): () => void };

export type HttpAppOptions = {
  /** The API's routes: validated, and described by the OpenAPI document at /v1/openapi.json. */
  routes: readonly Route[];
  /** Routes outside the API document (agent pages), declared the same way; they take no credential and are limited per client address. */
  pages?: readonly Route[];
  /**
   * The owner of an owner token and what it may do (issue #29): `read` tokens (vor_…) are admitted to the owner
   * routes that read (GET) and refused every other with 403 `read_only_token`; throws UnauthorizedError when it is not valid.
   */
  authenticateOwner(token: string): Promise<{ ownerId: string; scope: OwnerScope }>;
  /** The name of the operator an operator token belongs to (V7 "who"); throws UnauthorizedError when it is not valid. */
  authenticateOperator(token: string): Promise<string>;
  /** Resolves when `key` is the agent's key; throws UnauthorizedError otherwise. Checked before an agent route's body is read. */
  authenticateAgent(agentId: string, key: string): Promise<void>;
  limits: RateLimits;
  /** The route that creates accounts (`POST /v1/owners`): also charged to the stricter account-creation limit of its address. */
  accountCreation?: { method: Method; path: string };
  /** The owners' console (issue #29), served under /console: its own pages, forms and session cookie (src/api/console). */
  console?: express.Router;
  /** SHA-256 of the token `/metrics` asks for (`METRICS_TOKEN`); without one this app serves no /metrics (see `createMetricsApp`). */
  metricsTokenHash?: string;
  /** Express's `trust proxy`: whose X-Forwarded-For names the client address the limits key on (default: loopback proxies only). */
  trustProxy?: string | false;
  load: LoadGauge;
  metrics: ApiMetrics;
  logger: Logger;
  version?: string;
  /**
   * Check every answer against its route's declaration, a mismatch answered as a 500 (src/api/reply-check.ts): the test suite's setting;
   * off by default, it costs CPU on every reply.
   */
  checkReplies?: boolean;
};

const BODY_LIMIT = "32kb";

/**
 * CORS of the public read routes: any origin may read them, without credentials (no
 * Allow-Credentials, so a browser sends no cookies and reads nothing that needs them). ETag is
 * exposed for conditional reads, Retry-After for 429s.
 */
const CORS_HEADERS: Readonly<Record<string, string>> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "ETag, Retry-After",
};
/** A preflight's answer: the methods of a public read and the one request header a reader may add. */
const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  ...CORS_HEADERS,
  "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
  "Access-Control-Allow-Headers": "If-None-Match",
  "Access-Control-Max-Age": "600",
};
/** Answers that may carry a secret (owner tokens, agent keys) or an account's data are never stored by a cache. */
const NO_STORE = "no-store";

/** What authentication found of an admitted request, and how an agent route's handler says its key holds. */
type Caller = { ownerId: string; operatorName: string; credential: string; keyVerified: () => Promise<void>; isKeyVerified: () => boolean };
const nothing = async () => undefined;
const NOBODY: Caller = Object.freeze({ ownerId: "", operatorName: "", credential: "", keyVerified: nothing, isKeyVerified: () => false });

/** Builds the Express app of the API and the pages. */
export function createHttpApp(options: HttpAppOptions): express.Express {
  const { logger, metrics, limits } = options;
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", options.trustProxy ?? "loopback");
  const log = (error: unknown) => logger.error({ err: error }, "request failed");
  const checked = options.checkReplies === true;
  // Checked, an error a route does not declare becomes a reply_mismatch for the error handler.
  const errorCheck = (route: Route) =>
    checked ? [(error: unknown, _req: Request, _res: Response, next: NextFunction) => next(checkedError(route, error))] : [];

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
      if (logger.isLevelEnabled("debug"))
        logger.debug({ method: req.method, route, status: res.statusCode, ms: Math.round(seconds * 1000) }, "request");
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
  // Built at its first request, not at every start: 0.15-0.25 s of CPU in a new process (each example checked against its schema).
  let openApi: unknown;
  const document = () => (openApi ??= openApiDocument(options.routes, { version: options.version ?? API_VERSION }));
  app.get("/v1/openapi.json", limitAddress, (_req, res) => void res.set(CORS_HEADERS).json(document()));
  allow("/v1/openapi.json", "get");

  const creation = options.accountCreation;
  if (creation && !options.routes.some((route) => route.method === creation.method && route.path === creation.path)) {
    throw new Error(`accountCreation names no route: ${creation.method} ${creation.path}`);
  }
  const authenticate: Authenticators = {
    owner: options.authenticateOwner,
    operator: options.authenticateOperator,
    agent: options.authenticateAgent,
  };
  for (const route of options.routes) {
    if (route.auth === "agent" && !route.path.includes(":id")) throw new Error(`an agent route is charged to its :id: ${route.path}`);
    const createsAccount = route.method === creation?.method && route.path === creation.path;
    const readBody = route.body ? jsonBody : undefined;
    app[route.method](
      route.path,
      async (req: Request, res: Response) => {
        // Before anything can fail: a cross-origin reader sees the error too, and no cache keeps an answer with a secret.
        if (route.cors === "public") res.set(CORS_HEADERS);
        else res.set("Cache-Control", NO_STORE);
        const caller = await admit(route, req, limits, authenticate);
        try {
          // A stranger's body is never read: an agent route's key is checked first (its handler checks it again on the row it works with).
          // (A malformed id is left to the route's validation: a 400 naming it.)
          const agentId = String(req.params.id);
          if (route.auth === "agent" && readBody && ID_PATTERN.test(agentId)) await authenticate.agent(agentId, caller.credential);
          if (readBody) await readBody(req, res);
          if (createsAccount) charge(await limits.accountCreation.take(addressOf(req)));
          // Express parses the query string when it is read: only for a route that declares one.
          const reply = await route.respond({
            params: req.params,
            query: route.query && req.query,
            headers: req.headers,
            body: req.body,
            ...caller,
          });
          if (checked) checkKeyVerified(route, reply, caller.isKeyVerified());
          send(res, route, reply, checked);
        } catch (error) {
          // An agent's key that did not hold is a failed authentication of the address, never a charge of the agent.
          if (route.auth === "agent" && !caller.isKeyVerified() && error instanceof UnauthorizedError) {
            charge(await limits.authFailures.take(addressOf(req)));
            throw withCredentialHint(error, "agent", caller.credential, String(req.params.id));
          }
          throw error;
        }
      },
      ...errorCheck(route),
    );
    allow(route.path, route.method);
  }
  // The pages take no credential and read no body.
  for (const route of options.pages ?? []) {
    app[route.method](
      route.path,
      limitAddress,
      async (req: Request, res: Response) => {
        send(
          res,
          route,
          await route.respond({ params: req.params, query: req.query, headers: req.headers, body: undefined, ...NOBODY }),
          checked,
        );
      },
      ...errorCheck(route),
    );
    allow(route.path, route.method);
  }
  if (options.console) app.use("/console", options.console);
  // OPTIONS after the routes (a GET is matched without walking past them): a preflight for public reads, else what the path allows.
  const preflighted = new Set([
    "/v1/openapi.json",
    ...options.routes.filter((route) => route.cors === "public").map((route) => route.path),
  ]);
  for (const [path, methods] of allowed) {
    if (methods.has("GET")) methods.add("HEAD");
    const headers = { ...(preflighted.has(path) ? PREFLIGHT_HEADERS : {}), Allow: [...methods, "OPTIONS"].join(", ") };
    app.options(path, limitAddress, (_req, res) => void res.status(204).set(headers).end());
  }

  // A known path asked with another method: 405 with what it allows (issue #31).
  for (const [path, methods] of allowed) {
    const allow = [...methods, "OPTIONS"].join(", ");
    const hint = path.startsWith("/v1/") ? "" : v1Hint(path, options.routes);
    app.all(path, limitAddress, (req, res) => {
      res.set("Allow", allow);
      sendError(res, 405, "method_not_allowed", `${req.method} ${req.path} is not allowed: this path answers ${allow}${hint}`);
    });
  }
  // An API path asked without its /v1 (issue #31): 404 naming the path meant.
  for (const route of options.routes) {
    const bare = route.path.slice("/v1".length);
    if (!route.path.startsWith("/v1/") || allowed.has(bare)) continue;
    app.all(bare, limitAddress, (req, res) =>
      sendError(
        res,
        404,
        "not_found",
        `no such route: the API is under /v1, did you mean /v1${req.path} (${methodsOf(allowed, route.path)})?`,
      ),
    );
  }
  app.use(limitAddress, (_req, res) =>
    sendError(res, 404, "not_found", "no such route (the API is under /v1; /v1/openapi.json lists every route)"),
  );
  app.use(errorHandler(log));
  return app;
}

/** `GET, POST`: the methods of a declared path, HEAD and OPTIONS aside. */
const methodsOf = (allowed: ReadonlyMap<string, ReadonlySet<string>>, path: string): string =>
  [...(allowed.get(path) ?? [])].filter((m) => m !== "HEAD" && m !== "OPTIONS").join(", ");

/** Of a page's path that is also an API path after /v1 (`/agents/:id`): where the API answers it, for a 405 on the page. */
function v1Hint(path: string, routes: readonly Route[]): string {
  const api = routes.filter((route) => route.path === `/v1${path}`).map((route) => route.method.toUpperCase());
  return api.length === 0 ? "" : `; the API is under /v1: ${api.join(", ")} /v1${path.replace(/:(\w+)/g, "{$1}")}`;
}

/**
 * The app of a separate metrics listener (`METRICS_PORT`): `/metrics` only, behind the metrics token
 * when one is set; nothing else answers there.
 */
export function createMetricsApp(options: {
  metrics: ApiMetrics;
  metricsTokenHash?: string;
  limits: RateLimits;
  logger: Logger;
}): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.use(everyAnswer);
  const limitAddress = addressLimiter(options.limits.address);
  const serve =
    options.metricsTokenHash === undefined
      ? serveMetrics(options.metrics)
      : metricsHandler(options.metrics, options.metricsTokenHash, options.limits);
  app.get("/metrics", limitAddress, serve);
  app.use(limitAddress, (_req, res) => sendError(res, 404, "not_found", "no such route"));
  app.use(errorHandler((error) => options.logger.error({ err: error }, "metrics request failed")));
  return app;
}

/** What every answer carries, and the one check every request passes first: at most one Authorization header. */
function everyAnswer(req: Request, res: Response, next: (error?: unknown) => void): void {
  res.set("X-Content-Type-Options", "nosniff");
  // Node keeps the first of two Authorization headers and drops the other: which one was meant is unknowable.
  if (authorizationHeaders(req.rawHeaders) > 1) {
    next(new InvalidInputError("duplicate_authorization", "send one Authorization header, not several"));
    return;
  }
  next();
}

/** How many Authorization headers `rawHeaders` (name, value, name, value, ...) holds. */
function authorizationHeaders(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2)
    if (rawHeaders[i].length === 13 && rawHeaders[i].toLowerCase() === "authorization") count++;
  return count;
}

/** The client address a request is charged to: `req.ip` under the app's `trust proxy`, keyed by `addressKey`. */
export const addressOf = (req: Request): string => addressKey(req.ip ?? req.socket.remoteAddress ?? "");

/**
 * The limits' key of a client address: IPv4 as it is (also when IPv4-mapped), IPv6 by its /64, the
 * block one subscriber is given: keyed per address, each of its 2^64 addresses would be a fresh bucket.
 */
export function addressKey(address: string): string {
  if (!address.includes(":") || !ipaddr.IPv6.isValid(address)) return address;
  const ip = ipaddr.IPv6.parse(address);
  if (ip.isIPv4MappedAddress()) return ip.toIPv4Address().toString();
  return `${ip.parts
    .slice(0, 4)
    .map((part) => part.toString(16))
    .join(":")}::/64`;
}

/** Throws the 429 of a refusal. */
export function charge(verdict: Verdict): void {
  if (!verdict.ok) throw new RateLimitedError(verdict.retryAfterS);
}

/** Middleware charging a request to its client address. */
export function addressLimiter(limit: Limit) {
  return async (req: Request, _res: Response, next: () => void) => {
    charge(await limit.take(addressOf(req)));
    next();
  };
}

/** How the app checks each kind of credential. */
type Authenticators = {
  owner(token: string): Promise<{ ownerId: string; scope: OwnerScope }>;
  operator(token: string): Promise<string>;
  agent(agentId: string, key: string): Promise<void>;
};

/**
 * Rate limit and authentication of a route's request (issues #15 and #33). Without an account, the
 * request is charged to its client address. With one, the address must have failed authentications
 * left (else a 429 before any lookup); a failure is charged to the address; a success to the account
 * (owner id, operator name), never to the credential, so a made-up token gets no bucket of its own.
 * An account's budget is spent only by its holder: an agent's key is checked by its route's handler
 * (a check-in checks it in its own read of the agent), so until the handler calls `keyVerified` the
 * request is charged to its client address; only then is the point moved to the agent.
 */
async function admit(route: Route, req: Request, limits: RateLimits, authenticate: Authenticators): Promise<Caller> {
  const address = addressOf(req);
  if (route.auth === "none") {
    charge(await limits.address.take(address));
    return NOBODY;
  }
  charge(await limits.authFailures.peek(address));
  let credential = "";
  try {
    credential = bearer(req);
    if (route.auth === "owner") {
      const { ownerId, scope } = await authenticate.owner(credential);
      charge(await limits.account.take(`o:${ownerId}`));
      // Here, once for every owner route: a read-only token reads, and changes nothing (issue #29).
      if (scope === "read" && route.method !== "get") throw readOnly();
      return { ...NOBODY, ownerId, credential };
    }
    if (route.auth === "operator") {
      const operatorName = await authenticate.operator(credential);
      charge(await limits.account.take(`op:${operatorName}`));
      return { ...NOBODY, operatorName, credential };
    }
    charge(await limits.address.take(address));
    return agentCaller(credential, `a:${req.params.id}`, address, limits);
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    charge(await limits.authFailures.take(address));
    throw withCredentialHint(error, route.auth, credential, undefined);
  }
}

/** 403 of a write asked with a read-only owner token. */
const readOnly = () =>
  new ForbiddenError(
    "read_only_token",
    "this is a read-only owner token (vor_…): it can read everything its owner can and change nothing; " +
      "send the owner token (vo_…) to change anything",
  );

/** The credentials the service hands out, told apart by their prefix (src/service/accounts.ts, operators.ts). */
const CREDENTIALS: ReadonlyArray<{ prefix: string; kind: CredentialKind; is: string }> = [
  { prefix: "vop_", kind: "operator", is: "an operator token (vop_…)" },
  { prefix: "vo_", kind: "owner", is: "an owner token (vo_…)" },
  { prefix: "vor_", kind: "owner", is: "a read-only owner token (vor_…)" },
  { prefix: "va_", kind: "agent", is: "an agent key (va_…)" },
];
type CredentialKind = "owner" | "operator" | "agent";
/** What each kind of route takes, and where it comes from. */
const WANTED: Readonly<Record<CredentialKind, string>> = {
  owner: "the owner token (vo_…) that POST /v1/owners returned",
  agent: "the agent's key (va_…) that POST /v1/agents returned with its agentId",
  operator: "an operator token (vop_…: OPERATOR_TOKEN, or vrai operator add; vrai dev keeps one in ./data/operator-token)",
};

/**
 * A failed authentication whose credential is plainly of another kind gets a hint naming the kind it is and the
 * one the route takes (issue #31): an agent key sent to an owner route, an owner token to a check-in, an agent's
 * key to another agent's route. Only the prefix and the agent id it starts with are read, never the secret.
 */
function withCredentialHint(
  error: UnauthorizedError,
  wanted: CredentialKind,
  credential: string,
  agentId: string | undefined,
): UnauthorizedError {
  const sent = CREDENTIALS.find((c) => credential.startsWith(c.prefix));
  if (sent === undefined) return error;
  if (sent.kind !== wanted)
    return new UnauthorizedError(error.code, `${error.message}: this is ${sent.is}; this route takes ${WANTED[wanted]}`);
  const keyOf = /^va_([A-Za-z0-9_-]{1,64})\./.exec(credential)?.[1];
  if (wanted === "agent" && keyOf !== undefined && agentId !== undefined && keyOf !== agentId) {
    return new UnauthorizedError(error.code, `${error.message}: this is the key of agent ${keyOf}, not of agent ${agentId}`);
  }
  return error;
}

/** An agent route's caller: charged to `address` until `keyVerified`, then to the agent's `account` instead. */
function agentCaller(credential: string, account: string, address: string, limits: RateLimits): Caller {
  let verified = false;
  return {
    ...NOBODY,
    credential,
    isKeyVerified: () => verified,
    async keyVerified() {
      if (verified) return;
      verified = true;
      await limits.address.giveBack(address);
      charge(await limits.account.take(account));
    },
  };
}

/**
 * The body of a JSON route: 415 for any other content type, and for a request without one, even with
 * no body (issue #33): a browser sends a cross-site request with no content type without asking, so a
 * request that could change something must say it is JSON.
 */
async function jsonBody(req: Request, res: Response): Promise<void> {
  const type = req.headers["content-type"];
  if (type === undefined || !isJson(type)) {
    throw new BaseError("unsupported_media_type", "the request must be sent as Content-Type: application/json (an empty body as {})", {
      status: 415,
    });
  }
  await new Promise<void>((resolve, reject) => parseJson(req, res, (error?: unknown) => (error === undefined ? resolve() : reject(error))));
}

const parseJson = express.json({ limit: BODY_LIMIT, strict: true, type: () => true });

/** Whether a content type is JSON: `application/json` or `application/<something>+json`, any parameters (charset). */
function isJson(contentType: string): boolean {
  const media = contentType.split(";", 1)[0].trim().toLowerCase();
  return media === "application/json" || /^application\/[!#$%&'*.^_`|~0-9a-z-]+\+json$/.test(media);
}

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
    res
      .set("Cache-Control", NO_STORE)
      .type(metrics.registry.contentType)
      .send(await metrics.registry.metrics());
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
