/**
 * The owner's console in headless Chromium (issue #29): a test wallet (an EIP-1193 provider backed by a viem local
 * account) signs in for the first time with Sign-In with Ethereum, creates an agent, the agent checks in with the key
 * the console showed (the SDK, through the real check-in route), a wallet proof is signed in the page, a domain proof
 * is read from a DNS server on 127.0.0.1, and the score that counts both is shown. Webhooks are added, tested and
 * redelivered to a receiver on 127.0.0.1. The key page's Copy buttons copy its command and snippet, and an agent is
 * unclaimed through its confirmation page. Every console page of agents, proofs and webhooks: axe finds no violation,
 * nothing overflows at 360 and 1280 px, and a screenshot of each is saved under the temporary directory.
 */
import { Resolver } from "node:dns/promises";
import { expect } from "chai";
import pino from "pino";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../../app/server";
import { createVraiAgent } from "../../sdk/agent";
import { createManualClock } from "../../service/clock";
import { checkPageAtWidths, launchBrowser } from "../../test-helpers/browser";
import { ensureConsoleScript, injectTestWallet, signInPageWithToken, signInPageWithWallet } from "../../test-helpers/console";
import { createTestPgliteDb, type TestDb } from "../../test-helpers/db";
import { startDnsServer, type TestDnsServer } from "../../test-helpers/dns-server";
import { startHttpServer, type TestHttpServer } from "../../test-helpers/http-server";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const DOMAIN = "agent.example.org";

describe("the owner's console in headless Chromium: first sign-in to the score shown (issue #29)", function () {
  this.timeout(180_000);
  let testDb: TestDb;
  let server: ApiServer;
  let dns: TestDnsServer;
  let receiver: TestHttpServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const clock = createManualClock(T0);
  const account = privateKeyToAccount(generatePrivateKey());
  let signed: string[] = [];
  let agentId = "";
  /** The key the console showed at the agent's creation. */
  let firstKey = "";
  let webhookId = "";
  const dialogs: string[] = [];

  before(async () => {
    await ensureConsoleScript();
    testDb = await createTestPgliteDb();
    dns = await startDnsServer();
    receiver = await startHttpServer();
    receiver.route("POST", "/hook", { status: 200, body: "ok" });
    const resolver = new Resolver();
    resolver.setServers([dns.address]);
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "operator-test-token-console-pages-0123",
      clock,
      logger: pino({ level: "silent" }),
      rateLimit: { ownersPerHour: 10_000, authFailuresPerMinute: 10_000, perMinute: 100_000, burst: 10_000 },
      // Only loopback: the domain's TXT record from the test's DNS server, its vrai.json and the webhook receiver on 127.0.0.1.
      proofSources: {
        resolveTxt: (name) => resolver.resolveTxt(name),
        wellKnownUrl: (domain) => `${receiver.url}/${domain}/.well-known/vrai.json`,
        allowLoopbackLiteralsForTests: true,
        sleep: async () => undefined,
        retry: { tries: 1, baseDelayMs: 1 },
      },
      webhooks: {
        allowLoopback: true,
        worker: false,
        timeoutMs: 2000,
        resolveAddresses: async () => [{ address: "127.0.0.1", family: 4 }],
      },
    });
    browser = await launchBrowser();
    context = await browser.newContext();
    signed = await injectTestWallet(context, account);
    page = await context.newPage();
    // An alert would mean something a person typed (a webhook's URL, a proof's subject) ran as script.
    page.on("dialog", (dialog) => void dialog.dismiss().finally(() => dialogs.push(dialog.message())));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await dns?.close();
    await receiver?.close();
    await testDb?.drop();
  });

  const text = (selector: string) => page.$eval(selector, (e) => (e.textContent ?? "").trim());
  const submit = (selector: string) => Promise.all([page.waitForEvent("load"), page.click(selector)]);

  /** axe finds nothing and nothing overflows at 1280 and 360 px, as the page is (no reload); screenshots saved. */
  async function checkPage(label: string): Promise<void> {
    await checkPageAtWidths(page, `console-${label}`);
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  it(
    "signs in with a new wallet, creates an agent whose shown key checks in, proves a wallet and a domain, and shows the score " +
      "(over a minute: axe at two widths on each of its eight pages)",
    async () => {
      await signInPageWithWallet(page, server.url);
      expect(new URL(page.url()).pathname).to.match(/^\/console\//);
      await page.goto(`${server.url}/console/agents`);
      expect(await text("h1")).to.equal("Your agents");
      await checkPage("agents-empty");

      await page.fill("#agent-name", "research-agent");
      await submit("form[action='/console/agents'] button");
      const agentKey = await text("#agent-key");
      firstKey = agentKey;
      const command = await text("#heartbeat-command");
      agentId = /--agent (\S+)/.exec(command)?.[1] ?? "";
      expect(command).to.contain(`--api ${server.url}`).and.contain(agentKey);
      expect(await text("#sdk-snippet")).to.contain(`agentId: "${agentId}"`);
      await checkPage("agent-key");

      // The agent checks in with the key the page showed, through the SDK and the real route.
      const checkin = await createVraiAgent({ baseUrl: server.url, agentId, agentKey }).checkIn();
      expect(checkin.result).to.equal("counted");

      // A wallet proof of the owner, signed in the page by the wallet.
      await page.goto(`${server.url}/console/proofs`);
      await checkPage("proofs");
      await page.fill("#subject-wallet", account.address);
      await Promise.all([page.waitForURL(/\/console\/proofs\/challenges\//), page.click("li[data-proof-kind='wallet'] button")]);
      await checkPage("challenge-wallet");
      const message = await text("#sign-message");
      await submit("#evidence-form button[type='submit']");
      expect(signed.at(-1)).to.equal(message);
      expect(await text("[role='status']")).to.contain(`Proof verified: Wallet ${account.address.toLowerCase()}`);
      expect(await page.$$eval("ul.owner-proofs li", (lis) => lis.map((li) => li.getAttribute("data-kind")))).to.deep.equal(["wallet"]);

      // A domain proof of the agent: the TXT record the challenge page names, served by the DNS server on 127.0.0.1.
      await page.goto(`${server.url}/console/agents/${agentId}`);
      await page.fill("#subject-domain", DOMAIN);
      await Promise.all([page.waitForURL(/\/console\/proofs\/challenges\//), page.click("li[data-proof-kind='domain'] button")]);
      await checkPage("challenge-domain");
      const record = await page.$eval("li[data-publication='dns-txt']", (li) => ({
        name: li.querySelector("code")?.textContent ?? "",
        value: li.querySelector("pre")?.textContent ?? "",
      }));
      expect(record.name).to.equal(`_vrai.${DOMAIN}`);
      // First without the record: the reason, in words, on the challenge's page.
      await submit("#evidence-form button[type='submit']");
      expect(await text("[role='alert']")).to.match(/TXT record/i);
      dns.setTxt(record.name, [record.value]);
      await submit("#evidence-form button[type='submit']");
      expect(new URL(page.url()).pathname).to.equal("/console/proofs");
      expect(await text("[role='status']")).to.contain(`Proof verified: Domain ${DOMAIN}`);

      // The score: claim 100 + wallet 30 + domain 40 + integrity 100, recomputed at the domain proof (V6, V9).
      await page.goto(`${server.url}/console/agents/${agentId}`);
      expect(await text("[data-field='total']")).to.equal("270");
      expect(await text("[data-field='band']")).to.equal("200–399");
      expect(await text("[data-field='last-checkin']")).to.equal("2026-11-02 10:00:00 UTC");
      // Both proven in the same second of the manual clock: listed by id after that, so in either order.
      expect((await page.$$eval("[data-field='proofs'] li", (lis) => lis.map((li) => li.getAttribute("data-kind")))).sort()).to.deep.equal([
        "domain",
        "wallet",
      ]);
      await checkPage("agent");
      await page.goto(`${server.url}/console/agents`);
      expect(await text(`li[data-agent='${agentId}'] h2`)).to.equal("research-agent");
      expect(await text(`li[data-agent='${agentId}'] [data-field='total']`)).to.equal("270");
      await checkPage("agents");
      expect(dialogs).to.deep.equal([]);
    },
  );

  it("rotates the key in the page: the new key is shown once, its Copy buttons copy, and the old key is refused at once", async () => {
    await page.goto(`${server.url}/console/agents/${agentId}`);
    await submit(`form[action='/console/agents/${agentId}/rotate-key'] button`);
    const newKey = await text("#agent-key");
    expect(newKey).to.not.equal(firstKey);
    // The script's Copy buttons (progressive enhancement: the page works without them), one after each text to copy.
    expect(await page.$$eval("button.copy-button", (buttons) => buttons.map((b) => b.getAttribute("data-copies")))).to.deep.equal([
      "agent-key",
      "heartbeat-command",
      "sdk-snippet",
    ]);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
    for (const id of ["heartbeat-command", "sdk-snippet"]) {
      await page.click(`button[data-copies='${id}']`);
      await page.waitForFunction((which) => document.querySelector(`button[data-copies='${which}']`)?.textContent === "Copied", id);
      expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(await page.$eval(`#${id}`, (e) => e.textContent));
    }
    await checkPage("agent-key-rotated");
    const refused = await createVraiAgent({ baseUrl: server.url, agentId, agentKey: firstKey })
      .checkIn()
      .then(
        () => null,
        (e: { code?: string }) => e.code,
      );
    expect(refused).to.equal("invalid_agent_key");
    // Past V3.2's 1,200 s, within the session's idle hour.
    clock.set(T0 + 1800);
    expect((await createVraiAgent({ baseUrl: server.url, agentId, agentKey: newKey }).checkIn()).result).to.equal("counted");
  });

  it(
    "adds a webhook endpoint (secret shown once), pings it, shows the delivery, redelivers it, rotates the secret " +
      "(about a minute: axe at two widths on each of its four pages)",
    async () => {
      await page.goto(`${server.url}/console/webhooks`);
      await checkPage("webhooks-empty");
      // Refused in words first: no event chosen.
      await page.fill("#webhook-url", `http://127.0.0.1:${new URL(receiver.url).port}/hook`);
      await page.fill("#webhook-description", "alerts");
      for (const box of await page.$$("input[name='events']")) await box.uncheck();
      await submit("form[action='/console/webhooks'] button");
      expect(await text("[role='alert']")).to.contain("choose at least one event");
      expect(await page.inputValue("#webhook-url")).to.contain("/hook");
      await page.check("input[value='agent.late']");
      await submit("form[action='/console/webhooks'] button");
      expect(await text("#webhook-secret")).to.match(/^whsec_/);
      webhookId =
        /\/console\/webhooks\/(whk_[\w-]+)/.exec(await page.$eval("form[action$='/test']", (f) => f.getAttribute("action") ?? ""))?.[1] ??
        "";
      expect(webhookId).to.match(/^whk_/);
      await checkPage("webhook-created");

      await submit(`form[action='/console/webhooks/${webhookId}/test'] button`);
      expect(await text("[role='status']")).to.contain("A ping is on its way");
      await server.webhooks.worker.runOnce();
      await page.goto(`${server.url}/console/webhooks/${webhookId}`);
      expect(await page.$$eval("table.deliveries tbody tr", (trs) => trs.length)).to.equal(1);
      expect(await text("table.deliveries tbody tr td:nth-child(4)")).to.equal("HTTP 200");
      await checkPage("webhook");
      await submit("table.deliveries tbody tr form button");
      await server.webhooks.worker.runOnce();
      await page.goto(`${server.url}/console/webhooks/${webhookId}`);
      expect(await page.$$eval("table.deliveries tbody tr", (trs) => trs.length)).to.equal(2);
      expect(receiver.requestsTo("/hook")).to.have.length(2);

      await submit(`form[action='/console/webhooks/${webhookId}/rotate-secret'] button`);
      expect(await text("#webhook-secret")).to.match(/^whsec_/);
      await page.goto(`${server.url}/console/webhooks`);
      expect(await page.$$eval("ul.webhooks li", (lis) => lis.map((li) => li.getAttribute("data-webhook")))).to.deep.equal([webhookId]);
      await checkPage("webhooks");
    },
  );

  it("a read-only session sees every page and no form that changes anything", async () => {
    const { token } = await server.service.ownerTokens.createReadToken(await ownerOf(agentId), "browser test");
    const readContext = await browser.newContext();
    const readPage = await readContext.newPage();
    try {
      await signInPageWithToken(readPage, server.url, token);
      for (const where of [
        `/console/agents`,
        `/console/agents/${agentId}`,
        "/console/proofs",
        "/console/webhooks",
        `/console/webhooks/${webhookId}`,
      ]) {
        await readPage.goto(`${server.url}${where}`);
        expect(await readPage.$eval("h1", (h) => h.textContent), where).to.be.a("string");
        const actions = await readPage.$$eval("form[method='post']", (forms) => forms.map((f) => f.getAttribute("action")));
        expect(actions, where).to.deep.equal(["/console/sign-out"]);
      }
      await readPage.goto(`${server.url}/console/agents/${agentId}`);
      expect(await readPage.textContent("[data-field='total']")).to.equal("270");
    } finally {
      await readContext.close();
    }
  });

  it(
    "unclaims an agent through its confirmation page: the box ticked, the agents page says so, and its key is refused " +
      "(axe at two widths on two of its pages: 5-13 s)",
    async () => {
      await page.goto(`${server.url}/console/agents`);
      await page.fill("#agent-name", "short-lived");
      await submit("form[action='/console/agents'] button");
      const key = await text("#agent-key");
      const id = /--agent (\S+)/.exec(await text("#heartbeat-command"))?.[1] ?? "";
      await page.goto(`${server.url}/console/agents/${id}`);
      await Promise.all([page.waitForURL(`${server.url}/console/agents/${id}/unclaim`), page.click("#unclaim-link")]);
      expect(await text("h1")).to.equal("Unclaim short-lived?");
      await checkPage("unclaim");
      // The browser holds the form until the box is ticked (required); the service checks it too.
      await page.click(`form[action='/console/agents/${id}/unclaim'] button`);
      expect(new URL(page.url()).pathname).to.equal(`/console/agents/${id}/unclaim`);
      await page.check("#unclaim-confirm");
      await submit(`form[action='/console/agents/${id}/unclaim'] button`);
      expect(new URL(page.url()).pathname + new URL(page.url()).search).to.equal(`/console/agents?unclaimed=${id}`);
      expect(await text("[role='status']")).to.contain(`Agent ${id} is unclaimed`);
      expect(await page.$$eval("li[data-agent]", (lis) => lis.map((li) => li.getAttribute("data-agent")))).to.deep.equal([agentId]);
      await checkPage("agents-after-unclaim");
      const refused = await createVraiAgent({ baseUrl: server.url, agentId: id, agentKey: key })
        .checkIn()
        .then(
          () => null,
          (e: { code?: string }) => e.code,
        );
      expect(refused).to.equal("invalid_agent_key");
      await page.goto(`${server.url}/console/agents/${id}`);
      expect(await text("[role='alert']")).to.contain("this agent is unclaimed");
      expect(dialogs).to.deep.equal([]);
    },
  );

  /** The owner of an agent, as the store has it. */
  async function ownerOf(id: string): Promise<string> {
    return (await server.reads.agent(id)).ownerId;
  }
});
