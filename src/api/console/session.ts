/**
 * The owners' console's session layer (issue #29), as Express middleware: the session cookie, the headers
 * every console answer carries, and the checks of every state-changing request (its session's CSRF token
 * and its `Origin`). A page behind it finds its session in `consoleOf(res)`.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { ConsoleSession, ConsoleSessions } from "../../service/console-sessions";
import type { OwnerScope } from "../../service/ports";

/** Who is signed in, as the console's pages see it (`res.locals.console`). */
export type ConsoleLocals = {
  ownerId: string;
  /** `read`: signed in with a read-only token; every POST but sign-out is refused. */
  scope: OwnerScope;
  /** What every state-changing form sends back as its `csrf` field (or an `X-CSRF-Token` header). */
  csrfToken: string;
  /** The session's public handle (`ses_…`), as the sessions page lists it. */
  sessionId: string;
};

/** A refusal a person reads: the console's page for it, never JSON. */
export type ConsoleRefusal = { status: number; title: string; message: string };

/**
 * The headers of every console answer: never stored by a cache, framed by nobody, and a policy that runs only the
 * console's own script file (`script-src 'self'`, no inline script) and sends forms and requests to this site only.
 * `same-origin` referrers: under `no-referrer` a browser sends `Origin: null` with a form, which the Origin check refuses.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "Cache-Control": "no-store",
  "Content-Security-Policy":
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; " +
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "same-origin",
};

/** Where a browser without a session is sent. */
export const SIGN_IN_PATH = "/console/sign-in";

/** The session cookie: `__Host-` (Secure, path /, no domain) whenever the console is served over https. */
export type ConsoleCookie = { name: string; secure: boolean };

/** The cookie of a console whose public origin is `origin`. */
export function consoleCookie(origin: string): ConsoleCookie {
  const secure = origin.startsWith("https:");
  return { name: secure ? "__Host-vrai_session" : "vrai_session", secure };
}

/** The value of cookie `name` in a request's Cookie header, or undefined. */
export function cookieValue(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** Sets the session cookie: HttpOnly, SameSite=Lax, Secure over https, for as long as the session may last (its absolute timeout). */
export function setSessionCookie(res: Response, cookie: ConsoleCookie, secret: string, session: ConsoleSession, now: number): void {
  res.cookie(cookie.name, secret, {
    httpOnly: true,
    sameSite: "lax",
    secure: cookie.secure,
    path: "/",
    maxAge: Math.max(0, session.expiresAt - now) * 1000,
  });
}

/** Removes the session cookie from the browser. */
export function clearSessionCookie(res: Response, cookie: ConsoleCookie): void {
  res.clearCookie(cookie.name, { httpOnly: true, sameSite: "lax", secure: cookie.secure, path: "/" });
}

/** The signed-in session of a page behind `requireSession`. @throws Error when the page is not behind it (a wiring mistake) */
export function consoleOf(res: Response): ConsoleLocals {
  const locals: unknown = res.locals.console;
  if (!isConsoleLocals(locals)) throw new Error("consoleOf: this route is not behind the console's requireSession");
  return locals;
}

function isConsoleLocals(value: unknown): value is ConsoleLocals {
  return typeof value === "object" && value !== null && "ownerId" in value && "csrfToken" in value;
}

/** A text field of a form's body, or undefined when it is absent or not text. */
export function formField(req: Request, name: string): string | undefined {
  const body: unknown = req.body;
  if (typeof body !== "object" || body === null) return undefined;
  const value: unknown = Reflect.get(body, name);
  return typeof value === "string" ? value : undefined;
}

/** Whether a state-changing request comes from the console's own origin (its `Origin` header, which browsers send with every POST). */
export function fromOrigin(req: Request, origin: string): boolean {
  return req.headers.origin === origin;
}

/** The refusal of a request from another origin, in words that say what to do. */
export function crossOriginRefusal(req: Request, origin: string): ConsoleRefusal {
  const sent = req.headers.origin;
  return {
    status: 403,
    title: "Request refused",
    message:
      `This form was not sent from ${origin} (the browser said ${sent === undefined ? "nothing of where it came from" : `it came from ${sent}`}), ` +
      `so it was not carried out. Open the console at ${origin}/console and send it again from there. ` +
      "If that is where you are, the service's PUBLIC_URL is not the address you use.",
  };
}

/** What the session middleware needs. */
export type SessionOptions = {
  sessions: ConsoleSessions;
  /** The console's public origin (PUBLIC_URL's, else the listener's). */
  origin: () => string;
  /** Answers a refusal with the console's page for it. */
  refuse(req: Request, res: Response, refusal: ConsoleRefusal): void;
  /** The POST paths (under /console) a read-only session may send: signing out. */
  readScopePosts: ReadonlySet<string>;
};

/**
 * The session of every console page behind it: the cookie's session when it is live (`res.locals.console`), else a
 * GET is sent to the sign-in page (to come back after) and anything else refused. Every other method is a change:
 * it must come from the console's origin, carry the session's CSRF token, and not be asked by a read-only session.
 */
export function requireSession(options: SessionOptions): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const cookie = consoleCookie(options.origin());
      const secret = cookieValue(req, cookie.name);
      const session = secret === undefined ? null : await options.sessions.resume(secret);
      const reading = req.method === "GET" || req.method === "HEAD";
      if (session === null) {
        if (reading) {
          res.redirect(303, `${SIGN_IN_PATH}?next=${encodeURIComponent(req.originalUrl)}`);
          return;
        }
        options.refuse(req, res, {
          status: 401,
          title: "Signed out",
          message:
            "Your session has ended (signed out, or unused for too long), so this was not carried out. Sign in again, then send it again.",
        });
        return;
      }
      res.locals.console = {
        ownerId: session.ownerId,
        scope: session.scope,
        csrfToken: session.csrfToken,
        sessionId: session.id,
      } satisfies ConsoleLocals;
      if (reading) return next();
      if (!fromOrigin(req, options.origin())) return options.refuse(req, res, crossOriginRefusal(req, options.origin()));
      const token = formField(req, "csrf") ?? req.get("x-csrf-token");
      if (token === undefined || !options.sessions.csrfMatches(session, token)) {
        options.refuse(req, res, {
          status: 403,
          title: "Request refused",
          message:
            "This form's security token is missing or is not this session's (it may come from a page opened before you signed in again), " +
            "so it was not carried out. Reload the page and send it again.",
        });
        return;
      }
      if (session.scope === "read" && !options.readScopePosts.has(req.path)) {
        options.refuse(req, res, {
          status: 403,
          title: "Read-only session",
          message:
            "You signed in with a read-only token: you can look at everything and change nothing. " +
            "Sign in with your owner token or your wallet to change this.",
        });
        return;
      }
      next();
    } catch (error) {
      next(error);
    }
  };
}
