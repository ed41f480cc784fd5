import http from "node:http";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { verifyMessage } from "viem";
import type { ConsolePages } from "../../api/console/router";
import { consoleOf, formField } from "../../api/console/session";
import { axeViolations, launchBrowser } from "../../test-helpers/browser";
import {
  injectTestWallet,
  signInPageWithToken,
  signInPageWithWallet,
  startConsoleServer,
  type ConsoleServer,
} from "../../test-helpers/console";
import { html } from "../html";
import { csrfField, renderConsolePage } from "./layout";

const WALLET_MESSAGE = "I control this wallet.\nNonce: 1234";

/** A console page of the kind other modules add (a wallet proof): a form the console's script has the wallet sign. */
const walletSignPage: ConsolePages = (router) => {
  router.get("/test-wallet-sign", (_req, res) => {
    const viewer = consoleOf(res);
    res.type("html").send(
      renderConsolePage({
        title: "Sign",
        viewer,
        main: html`<h1>Sign</h1><form method="post" action="/console/test-wallet-sign" data-wallet-sign>${csrfField(viewer)}
<textarea name="message" aria-label="Message">${WALLET_MESSAGE}</textarea>
<input type="hidden" name="signature" value=""><input type="hidden" name="address" value="">
<p data-wallet-error hidden role="alert"></p><button type="submit">Sign with my wallet</button></form>`,
      }),
    );
  });
  router.post("/test-wallet-sign", async (req, res) => {
    const address = formField(req, "address") ?? "";
    const signature = formField(req, "signature") ?? "";
    // The service checks the message it gave, never the one sent back: a form sends a textarea's newlines as CRLF.
    const message = WALLET_MESSAGE;
    const valid =
      /^0x[0-9a-fA-F]{40}$/.test(address) &&
      /^0x[0-9a-fA-F]+$/.test(signature) &&
      (await verifyMessage({ address: address as `0x${string}`, message, signature: signature as `0x${string}` }));
    res.type("html").send(
      renderConsolePage({
        title: "Signed",
        viewer: consoleOf(res),
        main: html`<p id="verdict">${valid ? `signed by ${address}` : "not signed"}</p>`,
      }),
    );
  });
};

describe("the console's sign-in, sessions and tokens in headless Chromium (issue #29)", function () {
  this.timeout(120_000);
  let cs: ConsoleServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  before(async () => {
    cs = await startConsoleServer({ console: { pages: [walletSignPage] } });
    browser = await launchBrowser();
  });
  after(() => browser?.close().finally(() => cs?.close()));
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
  });

  /** A new browser profile (its own cookies), with JavaScript unless told otherwise; no script error may happen in it. */
  const newPage = async (
    options: { javaScriptEnabled?: boolean } = {},
  ): Promise<{ context: BrowserContext; page: Page; errors: string[] }> => {
    const context = await browser.newContext(options);
    contexts.push(context);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    return { context, page, errors };
  };

  it("signs in with a wallet through window.ethereum: the service's message signed, a new owner, its session listed", async () => {
    const { context, page, errors } = await newPage();
    const account = privateKeyToAccount(generatePrivateKey());
    const signed = await injectTestWallet(context, account);
    await signInPageWithWallet(page, cs.url);
    expect(new URL(page.url()).pathname).to.equal("/console/agents");
    expect(signed).to.have.length(1);
    expect(signed[0]).to.contain(`${new URL(cs.url).host} wants you to sign in with your Ethereum account:\n${account.address}`);
    expect(signed[0]).to.contain("Sign in to the Vrai console.");
    await page.goto(`${cs.url}/console/sessions`);
    expect(await page.textContent("main")).to.contain(`wallet ${account.address.toLowerCase()}`);
    expect(await page.textContent(".who")).to.match(/^own_[0-9a-f]{16}$/);
    expect(errors).to.deep.equal([]);
  });

  it("says so when the wallet declines, and signs in on the next try", async () => {
    const { context, page } = await newPage();
    const account = privateKeyToAccount(generatePrivateKey());
    await injectTestWallet(context, account);
    await page.goto(`${cs.url}/console/sign-in`);
    // The person says no once (EIP-1193 4001).
    await page.evaluate(() => {
      const wallet = window.ethereum;
      if (wallet === undefined) throw new Error("no test wallet");
      const request = wallet.request;
      let declined = false;
      wallet.request = async (args) => {
        if (args.method === "personal_sign" && !declined) {
          declined = true;
          throw Object.assign(new Error("User rejected the request."), { code: 4001 });
        }
        return request(args);
      };
    });
    await page.click("#siwe-sign-in");
    await page.waitForSelector("#siwe-error:not([hidden])");
    expect(await page.textContent("#siwe-error")).to.equal("You declined in your wallet: nothing was signed.");
    await Promise.all([page.waitForURL(/\/console\/agents$/), page.click("#siwe-sign-in")]);
  });

  it("signs in with a token through the form, and signs out with the header's button", async () => {
    const { page, errors } = await newPage();
    const { ownerId, token } = await cs.createOwner();
    await signInPageWithToken(page, cs.url, token);
    expect(new URL(page.url()).pathname).to.equal("/console/agents");
    expect(await page.textContent(".who")).to.equal(ownerId);
    await Promise.all([page.waitForURL(/\/console\/sign-in\?signedOut=1$/), page.click(".console-header button")]);
    expect(await page.textContent("[role=status]")).to.contain("You are signed out.");
    await page.goto(`${cs.url}/console/tokens`);
    expect(new URL(page.url()).pathname).to.equal("/console/sign-in");
    expect(errors).to.deep.equal([]);
  });

  it("without JavaScript the token form signs in, and the wallet's button stays hidden", async () => {
    const { page } = await newPage({ javaScriptEnabled: false });
    const { token } = await cs.createOwner();
    await page.goto(`${cs.url}/console/sign-in`);
    expect(await page.isVisible("#siwe-sign-in")).to.equal(false);
    expect(await page.textContent("#siwe-unavailable")).to.contain("needs JavaScript");
    await signInPageWithToken(page, cs.url, token);
    expect(new URL(page.url()).pathname).to.equal("/console/agents");
  });

  it("without a wallet the page says so, and the token form is there", async () => {
    const { page } = await newPage();
    await page.goto(`${cs.url}/console/sign-in`);
    expect(await page.textContent("#siwe-unavailable")).to.contain("No wallet was found in this browser");
    expect(await page.isVisible("#siwe-sign-in")).to.equal(false);
    expect(await page.isVisible("#token")).to.equal(true);
  });

  it("a wrong token: the sign-in page again, the reason in words, announced", async () => {
    const { page } = await newPage();
    await page.goto(`${cs.url}/console/sign-in`);
    await page.fill("#token", "vo_own_0000000000000000.t_not-a-token");
    await Promise.all([page.waitForNavigation(), page.click("form[action='/console/sign-in'] button")]);
    expect(await page.textContent("[role=alert]")).to.contain("That is not a valid owner token");
  });

  it("a form a page of another origin on the same site sends is refused with a page that says why", async () => {
    const { page } = await newPage();
    const { token } = await cs.createOwner();
    await signInPageWithToken(page, cs.url, token);
    const csrf = await page.getAttribute("input[name=csrf]", "value");
    // Another port of 127.0.0.1 is another origin of the same site: the browser sends the SameSite=Lax cookie with
    // its POST, so only the Origin check stands between it and the change (what CSRF tokens leaked to it would pass).
    const other = http.createServer((_req, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>x</title>"),
    );
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const address = other.address();
    const otherOrigin = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
    try {
      await page.goto(otherOrigin);
      await page.evaluate(
        ({ action, csrfToken }) => {
          const form = document.createElement("form");
          form.method = "post";
          form.action = action;
          const field = document.createElement("input");
          field.name = "csrf";
          field.value = csrfToken ?? "";
          form.append(field);
          document.body.append(form);
          form.submit();
        },
        { action: `${cs.url}/console/sessions/sign-out-everywhere`, csrfToken: csrf },
      );
      await page.waitForURL(`${cs.url}/console/sessions/sign-out-everywhere`);
    } finally {
      other.close();
    }
    expect(await page.textContent("h1")).to.equal("Request refused");
    expect(await page.textContent("[role=alert]")).to.contain(`it came from ${otherOrigin}`);
    await page.goto(`${cs.url}/console/sessions`);
    expect(new URL(page.url()).pathname, "still signed in").to.equal("/console/sessions");
  });

  it("signs a message in a page with the wallet: a form marked data-wallet-sign, and window.vraiConsole.signWithWallet", async () => {
    const { context, page, errors } = await newPage();
    const account = privateKeyToAccount(generatePrivateKey());
    const signed = await injectTestWallet(context, account);
    const { token } = await cs.createOwner();
    await signInPageWithToken(page, cs.url, token);
    await page.goto(`${cs.url}/console/test-wallet-sign`);
    await Promise.all([page.waitForURL(/\/console\/test-wallet-sign$/), page.click("form[data-wallet-sign] button")]);
    expect(await page.textContent("#verdict")).to.equal(`signed by ${account.address}`);
    expect(signed).to.deep.equal([WALLET_MESSAGE]);
    const direct = await page.evaluate((message) => window.vraiConsole?.signWithWallet(message), "another message");
    expect(direct?.address).to.equal(account.address);
    expect(
      await verifyMessage({ address: account.address, message: "another message", signature: direct!.signature as `0x${string}` }),
    ).to.equal(true);
    expect(errors).to.deep.equal([]);
  });

  describe("every page of this layer: axe reports no violations, nothing overflows at 360 px or 1280 px (screenshots saved)", () => {
    let page: Page;
    let readPage: Page;
    let token: string;
    let readToken: string;
    const own: BrowserContext[] = [];
    before(async () => {
      const context = await browser.newContext();
      const readContext = await browser.newContext();
      own.push(context, readContext);
      await injectTestWallet(context, privateKeyToAccount(generatePrivateKey()));
      page = await context.newPage();
      readPage = await readContext.newPage();
      ({ token } = await cs.createOwner());
      const created = await fetch(`${cs.url}/v1/owner/read-tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "look" }),
      });
      readToken = (await created.json()).token;
    });
    after(async () => {
      for (const context of own) await context.close();
    });

    /** Opens `pathname` signed in with `signInToken` (through the form the first time). */
    const signedIn = async (p: Page, signInToken: string, pathname: string) => {
      await p.goto(`${cs.url}${pathname}`);
      if (new URL(p.url()).pathname === "/console/sign-in") await signInPageWithToken(p, cs.url, signInToken);
      await p.goto(`${cs.url}${pathname}`);
    };
    const pages: Array<[string, () => Page, () => Promise<unknown>]> = [
      ["sign-in", () => page, () => page.goto(`${cs.url}/console/sign-in`)],
      [
        "sign-in-error",
        () => page,
        async () => {
          await page.goto(`${cs.url}/console/sign-in`);
          await page.fill("#token", "vo_wrong.t_wrong");
          await Promise.all([page.waitForNavigation(), page.click("form[action='/console/sign-in'] button")]);
        },
      ],
      ["sessions", () => page, () => signedIn(page, token, "/console/sessions")],
      [
        "tokens-shown",
        () => page,
        async () => {
          await signedIn(page, token, "/console/tokens");
          await page.fill("#token-name", "dashboard");
          await Promise.all([page.waitForNavigation(), page.click("form[action='/console/tokens'] button")]);
        },
      ],
      ["tokens", () => page, () => signedIn(page, token, "/console/tokens")],
      ["not-found", () => page, () => signedIn(page, token, "/console/no-such-page")],
      ["read-only-tokens", () => readPage, () => signedIn(readPage, readToken, "/console/tokens")],
      ["read-only-sessions", () => readPage, () => signedIn(readPage, readToken, "/console/sessions")],
    ];
    for (const [label, pageOf, open] of pages) {
      it(`${label} (axe run twice, at 1280 px and 360 px: 10 to 20 s)`, async () => {
        const p = pageOf();
        for (const width of [1280, 360]) {
          await p.setViewportSize({ width, height: 900 });
          await open();
          expect(await axeViolations(p), `${label} at ${width} px`).to.deep.equal([]);
          expect(await p.evaluate(() => document.documentElement.scrollWidth), `${label} at ${width} px`).to.be.at.most(width);
          const file = path.join(os.tmpdir(), `vrai-console-${label}-${width}px-${process.pid}.png`);
          await p.screenshot({ path: file, fullPage: true });
          console.log(`      console ${label} (${width} px): ${file}`);
        }
      });
    }
  });
});
