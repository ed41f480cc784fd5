/**
 * The owners' console in tests (issue #29): a server with the console, signing in through the real routes (a token
 * through the sign-in form, Sign-In with Ethereum through /console/siwe), the session's cookie and CSRF token, and a
 * test wallet (an EIP-1193 provider backed by a viem local account) for headless Chromium.
 */
import pino from "pino";
import type { BrowserContext, Page } from "playwright-core";
import type { LocalAccount } from "viem/accounts";
import { startApiServer, type ApiServer, type ConsoleOptions } from "../app/server";
import { createManualClock, type Clock } from "../service/clock";
import { buildConsoleScript } from "../web/console/bundle";
import { createTestPgliteDb, type TestDb } from "./db";

/** The operator token of the console's test server. */
export const CONSOLE_OPERATOR_TOKEN = "operator-test-token-console-0123456789";

export type ConsoleServer = {
  server: ApiServer;
  /** The server's URL, which is also the console's origin (unless `publicUrl` says another). */
  url: string;
  clock: Clock & { set(t: number): void };
  testDb: TestDb;
  /** Creates an owner through POST /v1/owners. */
  createOwner(): Promise<{ ownerId: string; token: string }>;
  close(): Promise<void>;
};

let scriptBuilt: Promise<void> | undefined;

/** Builds the console's script (dist/console.js) once per test run, from the sources under test. */
export function ensureConsoleScript(): Promise<void> {
  scriptBuilt ??= buildConsoleScript();
  return scriptBuilt;
}

/**
 * A server with the console on a new database (PGlite unless `create` says otherwise) and a manual clock at `start`.
 * @example const consoleServer = await startConsoleServer({ start: T0 }); const { token } = await consoleServer.createOwner();
 */
export async function startConsoleServer(
  options: { start?: number; create?: () => Promise<TestDb>; console?: ConsoleOptions } = {},
): Promise<ConsoleServer> {
  await ensureConsoleScript();
  const testDb = await (options.create ?? createTestPgliteDb)();
  const clock = createManualClock(options.start ?? Math.floor(Date.now() / 1000));
  const server = await startApiServer({
    db: testDb.db,
    operatorToken: CONSOLE_OPERATOR_TOKEN,
    clock,
    logger: pino({ level: "silent" }),
    // Tests sign in and fail to many times from one address: the limits are not what they test.
    rateLimit: { ownersPerHour: 10_000, authFailuresPerMinute: 10_000, perMinute: 100_000, burst: 10_000 },
    console: options.console,
  });
  return {
    server,
    url: server.url,
    clock,
    testDb,
    async createOwner() {
      const res = await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      return res.json();
    },
    async close() {
      await server.close();
      await testDb.drop();
    },
  };
}

/** A signed-in session, as a program holds it: the Cookie header to send, and the session's CSRF token. */
export type SignedInClient = { cookie: string; csrfToken: string };

/** `name=value` of a response's session cookie (vrai_session or __Host-vrai_session), or undefined when it sets none. */
export function sessionCookieOf(res: Response): string | undefined {
  const set = res.headers.getSetCookie().find((c) => /^(__Host-)?vrai_session=/.test(c));
  const pair = set?.split(";", 1)[0];
  return pair === undefined || pair.endsWith("=") ? undefined : pair;
}

/** The CSRF token of a session: the hidden field of a page's forms. */
export async function csrfTokenOf(baseUrl: string, cookie: string): Promise<string> {
  const res = await fetch(`${baseUrl}/console/sessions`, { headers: { cookie }, redirect: "manual" });
  const token = /name="csrf" value="([0-9a-f]{64})"/.exec(await res.text())?.[1];
  if (res.status !== 200 || token === undefined) throw new Error(`no session for ${cookie}: GET /console/sessions answered ${res.status}`);
  return token;
}

/**
 * POSTs a console form as a browser at `origin` (default: the server's own) would send it; never follows a redirect.
 * @example await consolePost(url, "/console/sign-out", { cookie, fields: { csrf: csrfToken } });
 */
export function consolePost(
  baseUrl: string,
  path: string,
  options: { cookie?: string; fields?: Record<string, string>; origin?: string | null },
): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  const origin = options.origin === undefined ? new URL(baseUrl).origin : options.origin;
  if (origin !== null) headers.origin = origin;
  return fetch(`${baseUrl}${path}`, { method: "POST", headers, body: new URLSearchParams(options.fields ?? {}), redirect: "manual" });
}

/** Signs in with an owner token (full or read-only) through the sign-in form's route, as a browser without JavaScript does. */
export async function signInWithToken(baseUrl: string, token: string): Promise<SignedInClient> {
  const res = await consolePost(baseUrl, "/console/sign-in", { fields: { token } });
  const cookie = sessionCookieOf(res);
  if (res.status !== 303 || cookie === undefined) throw new Error(`the sign-in with a token answered ${res.status}: ${await res.text()}`);
  return { cookie, csrfToken: await csrfTokenOf(baseUrl, cookie) };
}

/** A JSON POST to the console's Sign-In with Ethereum routes, from the server's origin. */
export function siwePost(
  baseUrl: string,
  path: "/console/siwe/nonce" | "/console/siwe",
  body: unknown,
  origin?: string,
): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: origin ?? new URL(baseUrl).origin },
    body: JSON.stringify(body),
  });
}

/** The message the service asks `address` to sign (POST /console/siwe/nonce). */
export async function siweMessageFor(baseUrl: string, address: string): Promise<string> {
  const res = await siwePost(baseUrl, "/console/siwe/nonce", { address });
  if (res.status !== 200) throw new Error(`POST /console/siwe/nonce answered ${res.status}: ${await res.text()}`);
  return (await res.json()).message;
}

/** Signs in with Sign-In with Ethereum through the routes the console's script calls, `account` signing the service's message. */
export async function signInWithSiwe(baseUrl: string, account: LocalAccount): Promise<SignedInClient & { created: boolean }> {
  const message = await siweMessageFor(baseUrl, account.address);
  const signature = await account.signMessage({ message });
  const res = await siwePost(baseUrl, "/console/siwe", { message, signature });
  const cookie = sessionCookieOf(res);
  if (res.status !== 200 || cookie === undefined) throw new Error(`POST /console/siwe answered ${res.status}: ${await res.text()}`);
  const { created } = await res.json();
  return { cookie, csrfToken: await csrfTokenOf(baseUrl, cookie), created };
}

/**
 * Gives every page of `context` a wallet: `window.ethereum`, an EIP-1193 provider whose one account is `account`
 * (eth_requestAccounts, eth_accounts, eth_chainId, personal_sign signed by the local account in the test's process).
 * @returns the messages it signed, in order
 */
export async function injectTestWallet(context: BrowserContext, account: LocalAccount, chainId = 1): Promise<string[]> {
  const signed: string[] = [];
  await context.exposeFunction("__vraiTestWalletSign", async (hexMessage: `0x${string}`) => {
    signed.push(Buffer.from(hexMessage.slice(2), "hex").toString("utf8"));
    return account.signMessage({ message: { raw: hexMessage } });
  });
  await context.addInitScript(
    ({ address, chainHex }) => {
      Reflect.set(window, "ethereum", {
        async request({ method, params }: { method: string; params?: unknown[] }) {
          if (method === "eth_requestAccounts" || method === "eth_accounts") return [address];
          if (method === "eth_chainId") return chainHex;
          if (method === "personal_sign") return Reflect.get(window, "__vraiTestWalletSign")(params?.[0]);
          throw Object.assign(new Error(`the test wallet does not do ${method}`), { code: 4200 });
        },
      });
    },
    { address: account.address, chainHex: `0x${chainId.toString(16)}` },
  );
  return signed;
}

/** Signs `page` in with a token through the sign-in page's form, as a person does; resolves on the page it lands on. */
export async function signInPageWithToken(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console/sign-in`);
  await page.fill("#token", token);
  await Promise.all([page.waitForURL((url) => url.pathname !== "/console/sign-in"), page.click("form[action='/console/sign-in'] button")]);
}

/** Signs `page` in with its injected wallet (`injectTestWallet`) through the sign-in page's button; resolves on the page it lands on. */
export async function signInPageWithWallet(page: Page, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/console/sign-in`);
  await Promise.all([page.waitForURL((url) => url.pathname !== "/console/sign-in"), page.click("#siwe-sign-in")]);
}
