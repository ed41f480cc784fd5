/**
 * The owners' console under /console (issue #29): signing in (an owner token through a form that needs no script, or
 * Sign-In with Ethereum through the console's script), signing out, the sessions and tokens pages, the script file,
 * and the pages other modules add behind the same session (`pages`). Every answer is a page a person reads, never
 * JSON, but for the two requests the script sends (`/console/siwe/*`), which answer the API's JSON error shape.
 */
import type { Logger } from "pino";
import express, { type NextFunction, type Request, type Response, type Router } from "express";
import { BaseError } from "../../errors";
import type { Clock } from "../../service/clock";
import type { ConsoleSessions, SignInContext } from "../../service/console-sessions";
import type { OwnerTokens } from "../../service/owner-tokens";
import { addressLimiter, addressOf, charge } from "../express";
import { errorReply, sendError } from "../http";
import type { RateLimits } from "../rate-limit";
import { readTokenName } from "../owner-token-routes";
import {
  CONSOLE_HEADERS,
  clearSessionCookie,
  consoleCookie,
  consoleOf,
  cookieValue,
  crossOriginRefusal,
  formField,
  fromOrigin,
  requireSession,
  setSessionCookie,
  SIGN_IN_PATH,
  type ConsoleRefusal,
} from "./session";
import type { ConsoleViews, TokensView } from "./views";

/** The console's paths (under /console) a read-only session may POST to. */
const READ_SCOPE_POSTS: ReadonlySet<string> = new Set(["/sign-out"]);

/** A module of console pages behind the session (`consoleOf(res)` gives who is signed in); registered after this layer's. */
export type ConsolePages = (router: Router) => void;

export type ConsoleRouterOptions = {
  sessions: ConsoleSessions;
  tokens: OwnerTokens;
  views: ConsoleViews;
  clock: Clock;
  limits: RateLimits;
  /** The console's public origin: PUBLIC_URL's, else the listener's URL. */
  origin: () => string;
  /** Where a signed-in owner lands (default /console/sessions). */
  home?: string;
  logger: Logger;
  /** Further pages behind the session (agents, proofs, webhooks). */
  pages?: readonly ConsolePages[];
};

/** A `next` a sign-in may go on to: a path of the console, nothing that leaves it. */
function nextPath(value: unknown, home: string): string {
  return typeof value === "string" && /^\/console(?:[/?#]|$)/.test(value) && !value.startsWith("//") ? value : home;
}

/** The console's router, to mount at /console. */
export function createConsoleRouter(options: ConsoleRouterOptions): Router {
  const { sessions, tokens, views, limits, clock } = options;
  const home = options.home ?? "/console/agents";
  const router = express.Router({ strict: false });
  const cookieOf = () => consoleCookie(options.origin());
  const html = (res: Response, status: number, page: string) => void res.status(status).type("html").send(page);
  const refuse = (_req: Request, res: Response, refusal: ConsoleRefusal) => {
    const viewer = typeof res.locals.console === "object" ? consoleOf(res) : undefined;
    html(res, refusal.status, views.refusal({ ...refusal, viewer }));
  };
  const contextOf = (req: Request): SignInContext => ({
    previousSecret: cookieValue(req, cookieOf().name),
    userAgent: req.get("user-agent"),
  });
  /** A sign-in attempt: refused at once after too many failures from the address; a failure counts one more. */
  const attempt = async <T>(req: Request, signIn: () => Promise<T>): Promise<T> => {
    charge(await limits.authFailures.peek(addressOf(req)));
    try {
      return await signIn();
    } catch (error) {
      if (error instanceof BaseError && (error.status === 400 || error.status === 401))
        charge(await limits.authFailures.take(addressOf(req)));
      throw error;
    }
  };

  router.use((_req, res, next) => {
    res.set(CONSOLE_HEADERS);
    next();
  });
  router.use(addressLimiter(limits.address));

  // The script file: its name carries its content's hash, so it is kept for a year.
  router.get("/assets/:file", (req, res) => {
    const script = views.script;
    if (script === null || req.path !== script.path.slice("/console".length)) return refuse(req, res, notFound());
    res.set("Cache-Control", "public, max-age=31536000, immutable").type("application/javascript").send(script.body);
  });

  router.get("/sign-in", async (req, res) => {
    const next = nextPath(req.query.next, home);
    const secret = cookieValue(req, cookieOf().name);
    if (secret !== undefined && (await sessions.resume(secret)) !== null) return res.redirect(303, next);
    html(res, 200, views.signIn({ next, notice: req.query.signedOut === "1" ? "You are signed out." : undefined }));
  });

  // Signing in changes which owner the browser is: from this origin only (no login CSRF), as every POST here.
  const sameOriginOnly = (json: boolean) => (req: Request, res: Response, next: NextFunction) => {
    if (fromOrigin(req, options.origin())) return next();
    const refusal = crossOriginRefusal(req, options.origin());
    if (json) sendError(res, 403, "cross_origin_refused", refusal.message);
    else refuse(req, res, refusal);
  };

  const json = express.json({ limit: "16kb", strict: true });
  router.post("/siwe/nonce", sameOriginOnly(true), json, async (req, res) => {
    const address = formField(req, "address");
    if (address === undefined) return sendError(res, 400, "invalid_request", "body.address: the address to sign in with is required");
    const { message, expiresAt } = await sessions.siweMessage(address);
    res.json({ message, expiresAt });
  });
  router.post("/siwe", sameOriginOnly(true), json, async (req, res) => {
    const message = formField(req, "message");
    const signature = formField(req, "signature");
    if (message === undefined || signature === undefined)
      return sendError(res, 400, "invalid_request", "the body needs the signed message and its signature");
    const signedIn = await attempt(req, () => sessions.signInWithSiwe({ message, signature }, contextOf(req)));
    setSessionCookie(res, cookieOf(), signedIn.secret, signedIn.session, clock.now());
    res.json({ redirect: nextPath(formField(req, "next"), home), created: signedIn.created });
  });

  router.use(express.urlencoded({ extended: false, limit: "16kb", parameterLimit: 20 }));

  router.post("/sign-in", sameOriginOnly(false), async (req, res) => {
    const next = nextPath(formField(req, "next"), home);
    const token = formField(req, "token")?.trim() ?? "";
    if (token === "") return html(res, 400, views.signIn({ next, error: "Paste your owner token (vo_…) or a read-only token (vor_…)." }));
    try {
      const signedIn = await attempt(req, () => sessions.signInWithToken(token, contextOf(req)));
      setSessionCookie(res, cookieOf(), signedIn.secret, signedIn.session, clock.now());
      res.redirect(303, next);
    } catch (error) {
      if (!(error instanceof BaseError) || error.status !== 401) throw error;
      html(
        res,
        401,
        views.signIn({
          next,
          error:
            "That is not a valid owner token. Paste the whole token (vo_… from POST /v1/owners, or vor_… for a read-only one); " +
            "a token that was rotated or revoked no longer works.",
        }),
      );
    }
  });

  // Everything from here on is behind a session.
  router.use(requireSession({ sessions, origin: options.origin, refuse, readScopePosts: READ_SCOPE_POSTS }));

  router.get("/", (_req, res) => res.redirect(303, home));

  router.post("/sign-out", async (req, res) => {
    const secret = cookieValue(req, cookieOf().name);
    if (secret !== undefined) await sessions.signOut(secret);
    clearSessionCookie(res, cookieOf());
    res.redirect(303, `${SIGN_IN_PATH}?signedOut=1`);
  });

  router.get("/sessions", async (_req, res) => {
    const viewer = consoleOf(res);
    html(res, 200, views.sessions({ viewer, sessions: await sessions.list(viewer.ownerId) }));
  });
  router.post("/sessions/sign-out-everywhere", async (_req, res) => {
    await sessions.signOutEverywhere(consoleOf(res).ownerId);
    clearSessionCookie(res, cookieOf());
    res.redirect(303, `${SIGN_IN_PATH}?signedOut=1`);
  });
  router.post("/sessions/:id/revoke", async (req, res) => {
    const viewer = consoleOf(res);
    await sessions.revoke(viewer.ownerId, String(req.params.id));
    if (req.params.id === viewer.sessionId) {
      clearSessionCookie(res, cookieOf());
      return res.redirect(303, `${SIGN_IN_PATH}?signedOut=1`);
    }
    html(res, 200, views.sessions({ viewer, sessions: await sessions.list(viewer.ownerId), notice: "That session is signed out." }));
  });

  const tokensPage = async (res: Response, status: number, extra: Omit<TokensView, "viewer" | "tokens">) => {
    const viewer = consoleOf(res);
    html(res, status, views.tokens({ viewer, tokens: await tokens.listReadTokens(viewer.ownerId), ...extra }));
  };
  router.get("/tokens", (_req, res) => tokensPage(res, 200, {}));
  router.post("/tokens", async (req, res) => {
    const name = readTokenName.safeParse(formField(req, "name") ?? "");
    if (!name.success) return tokensPage(res, 400, { error: "Give the token a name of 1 to 100 characters, to tell it from the others." });
    try {
      const created = await tokens.createReadToken(consoleOf(res).ownerId, name.data);
      await tokensPage(res, 201, { shown: { kind: "read", name: created.name, token: created.token } });
    } catch (error) {
      if (!(error instanceof BaseError) || error.status !== 409) throw error;
      await tokensPage(res, 409, { error: error.message });
    }
  });
  router.post("/tokens/owner/rotate", async (_req, res) => {
    const viewer = consoleOf(res);
    const { token } = await tokens.rotateOwnerToken(viewer.ownerId, { keepSession: viewer.sessionId });
    await tokensPage(res, 200, { shown: { kind: "owner", token } });
  });
  router.post("/tokens/:id/revoke", async (req, res) => {
    await tokens.revokeReadToken(consoleOf(res).ownerId, String(req.params.id));
    await tokensPage(res, 200, { notice: "The token is revoked: it no longer works, and the sessions signed in with it are signed out." });
  });

  for (const pages of options.pages ?? []) pages(router);

  router.use((req, res) => refuse(req, res, notFound()));
  router.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    if (error instanceof BaseError && error.retryAfterS !== undefined) res.set("Retry-After", String(error.retryAfterS));
    const { status, code, message } = errorReply(error, (failure) => options.logger.error({ err: failure }, "console request failed"));
    if (req.path.startsWith("/siwe")) return sendError(res, status, code, message);
    const said = status >= 500 ? "Something went wrong on our side: nothing was changed. Try again in a moment." : sentence(message);
    refuse(req, res, { status, title: titleOf(status), message: said });
  });
  return router;
}

const notFound = (): ConsoleRefusal => ({ status: 404, title: "Not found", message: "There is no such page in the console." });

/** A heading for a refusal of `status`. */
function titleOf(status: number): string {
  if (status === 404) return "Not found";
  if (status === 429) return "Too many requests";
  if (status >= 500) return "Something went wrong";
  return "Not done";
}

/** A service's message (`the token is …`) as a sentence on a page. */
const sentence = (message: string): string => `${message.charAt(0).toUpperCase()}${message.slice(1)}${/[.!?]$/.test(message) ? "" : "."}`;
