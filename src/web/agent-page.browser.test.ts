import crypto from "node:crypto";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import pino from "pino";
import type { Browser, Page } from "playwright-core";
import { startApiServer, type ApiServer } from "../app/server";
import { CURRENT_METHOD, identityMax, METHODS, toRfc3339 } from "../method";
import { createManualClock } from "../service/clock";
import { launchBrowser } from "../test-helpers/browser";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const OPERATOR_TOKEN = "operator-test-token-0123456789";
const HOUR = 3600;
const CLAIMED_AT = Date.UTC(2026, 10, 2, 9, 0, 0) / 1000; // 2026-11-02T09:00:00Z
const CHECKINS = 72; // one an hour for 3 days, the first at 09:01 on the day of the claim
const OUTAGE = { start: "2026-11-03T11:30:00Z", end: "2026-11-03T12:10:00Z", declaredAt: Date.UTC(2026, 10, 3, 12, 30, 0) / 1000 };
const SCORED_AT = Date.UTC(2026, 10, 5, 10, 0, 0) / 1000; // 2026-11-05T10:00:00Z: window 2026-10-06 … 2026-11-04
const AGENT_NAME = "<script>alert(1)</script> weather bot";

type Json = Record<string, any>;

describe("agent page in headless Chromium", function () {
  this.timeout(120_000);
  let testDb: TestDb;
  let server: ApiServer;
  let browser: Browser;
  let page: Page;
  let agentId: string;
  let apiScore: Json;
  const dialogs: string[] = [];
  const clock = createManualClock(CLAIMED_AT);

  async function call(
    method: string,
    urlPath: string,
    options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; json: Json }> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(server.url + urlPath, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      clock,
      logger: pino({ level: "silent" }),
      rateLimit: { perMinute: 100_000, burst: 10_000 },
    });

    const owner = await call("POST", "/v1/owners", { body: {} });
    const claim = await call("POST", "/v1/agents", { token: owner.json.token, body: { name: AGENT_NAME } });
    expect(claim.status).to.equal(201);
    agentId = claim.json.agentId;

    let outageDeclared = false;
    for (let i = 0; i < CHECKINS; i++) {
      const arrival = CLAIMED_AT + 60 + i * HOUR;
      if (!outageDeclared && arrival > OUTAGE.declaredAt) {
        clock.set(OUTAGE.declaredAt);
        const declared = await call("POST", "/v1/operator/outages", {
          token: OPERATOR_TOKEN,
          body: { start: OUTAGE.start, end: OUTAGE.end, reason: "hosting allowance used up" },
        });
        expect(declared.status).to.equal(201);
        outageDeclared = true;
      }
      clock.set(arrival);
      const checkin = await call("POST", `/v1/agents/${agentId}/checkins`, {
        token: claim.json.agentKey,
        headers: { "idempotency-key": `hour-${i}` },
      });
      expect(checkin.status).to.equal(201);
    }

    // Adding a penalty recomputes the score at once (V9), at this instant.
    clock.set(SCORED_AT);
    const penalty = await call("POST", "/v1/operator/penalties", {
      token: OPERATOR_TOKEN,
      body: { agentId, code: "rate_abuse", points: 10, days: 30, reason: "burst of requests in the test" },
    });
    expect(penalty.status).to.equal(201);
    apiScore = (await call("GET", `/v1/agents/${agentId}/score`)).json;
    expect(apiScore.at).to.equal(toRfc3339(SCORED_AT));

    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const response = await page.goto(`${server.url}/agents/${agentId}`);
    expect(response?.status()).to.equal(200);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await testDb?.drop();
  });

  it("shows the agent's name as text and runs no script from it", async () => {
    expect(await page.title()).to.equal(`${AGENT_NAME}: Vrai Score 203 — Vrai`);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).to.equal(AGENT_NAME);
    expect(await page.locator("#agent-id").textContent()).to.equal(agentId);
    expect(dialogs).to.deep.equal([]);
    expect(await page.locator("script").count()).to.equal(0);
  });

  it("shows the total, the band as a range, the state, the method, the score type and when it was computed", async () => {
    expect(apiScore.total).to.equal(203);
    expect(await page.locator("#total").textContent()).to.equal("203");
    expect(await page.locator("#band").textContent()).to.contain("200–399: the range of 200 points the total falls in");
    expect(await page.locator("#band").textContent()).to.contain("it is not a grade");
    expect(await page.locator("#state").textContent()).to.equal(
      "Provisional. The agent has not yet checked in on 14 different UTC days since its latest claim.",
    );
    expect(await page.locator("#method").textContent()).to.equal(CURRENT_METHOD);
    expect(await page.locator("#score-type").textContent()).to.equal("vrai");
    expect(await page.locator("#computed-at time").getAttribute("datetime")).to.equal("2026-11-05T10:00:00Z");
  });

  it("shows the three components with their values and maxima, and Shield as not active", async () => {
    const value = (key: string) => page.locator(`[data-component="${key}"] .component-value`).textContent();
    expect(await value("identity"))
      .to.equal(String(apiScore.result.components.identity.value))
      .and.to.equal("100");
    expect(await value("reliability"))
      .to.equal(String(apiScore.result.components.reliability.value))
      .and.to.equal("13");
    expect(await value("integrity"))
      .to.equal(String(apiScore.result.components.integrity.value))
      .and.to.equal("90");
    expect(await page.locator('[data-component="identity"] h3').textContent()).to.equal(
      `Identity 0–${identityMax(METHODS[CURRENT_METHOD].identity)}`,
    );
    expect(await page.locator('[data-component="reliability"] h3').textContent()).to.equal("Reliability 0–150");
    expect(await page.locator('[data-component="integrity"] h3').textContent()).to.equal("Integrity 0–100");
    expect(await page.locator('[data-component="identity"] .proofs').textContent()).to.equal("Claim: 100");
    expect(await page.locator('[data-component="integrity"] .penalties').textContent()).to.contain(
      "rate_abuse −10, added 2026-11-05 10:00:00 UTC",
    );
    const shield = page.locator('[data-component="shield"]');
    expect(await shield.locator(".value").textContent()).to.equal("Not active");
    expect(await shield.locator(".component-value").count()).to.equal(0);
  });

  it("draws the 30 days of the window as SVG bars matching the API, days before the claim marked", async () => {
    const chart = page.getByRole("img", { name: "Check-ins over the 30 days of the window" });
    expect(await chart.isVisible()).to.equal(true);
    const days = await page.locator("svg.window-chart g.day").evaluateAll((groups) =>
      groups.map((g) => ({
        day: g.getAttribute("data-day"),
        checkins: Number(g.getAttribute("data-checkins")),
        on_time: Number(g.getAttribute("data-on-time")),
        coverage_s: Number(g.getAttribute("data-coverage-s")),
        before_claim: g.getAttribute("data-before-claim") === "true",
        hatched: g.classList.contains("before-claim"),
        bars: g.querySelectorAll("rect.bar").length,
      })),
    );
    expect(days).to.have.length(30);
    expect(days.map(({ hatched: _h, bars: _b, ...d }) => d)).to.deep.equal(apiScore.result.window);
    expect(days.every((d) => d.bars === 1 && d.hatched === d.before_claim)).to.equal(true);
    expect(days.filter((d) => d.before_claim).map((d) => d.day))
      .to.have.length(27)
      .and.to.include("2026-11-01")
      .and.not.to.include("2026-11-02");
    expect(days.slice(-3).map((d) => [d.day, d.checkins, d.on_time])).to.deep.equal([
      ["2026-11-02", 15, 14],
      ["2026-11-03", 24, 24],
      ["2026-11-04", 24, 24],
    ]);
    expect(await page.locator("svg.window-chart .before-claim-label text").textContent()).to.equal(
      "Before the latest claim: shown, not counted",
    );
  });

  it("lists the declared outage with its start, end and declared_at", async () => {
    const row = await page.locator("table.outages tbody tr").allTextContents();
    expect(row).to.deep.equal(["2026-11-03 11:30:00 UTC2026-11-03 12:10:00 UTC2026-11-03 12:30:00 UTChosting allowance used up"]);
  });

  it("publishes no count of missed check-ins", async () => {
    const text = (await page.locator("body").innerText()).toLowerCase();
    expect(text).not.to.contain("missed");
    expect(text).not.to.contain("missing");
  });

  it("links the score JSON and the inputs, whose bytes hash to the digest shown in full", async () => {
    const digest = (await page.locator("#sha256").textContent()) ?? "";
    expect(digest)
      .to.match(/^[0-9a-f]{64}$/)
      .and.to.equal(apiScore.sha256);
    expect(await page.locator("#score-link").getAttribute("href")).to.equal(`/v1/scores/${apiScore.id}`);
    const inputsPage = await browser.newPage();
    try {
      const href = (await page.locator("#inputs-link").getAttribute("href")) ?? "";
      expect(href).to.equal(`/v1/scores/${apiScore.id}/inputs`);
      const response = await inputsPage.goto(new URL(href, page.url()).href);
      expect(response?.status()).to.equal(200);
      const bytes = await response!.body();
      expect(crypto.createHash("sha256").update(bytes).digest("hex")).to.equal(digest);
    } finally {
      await inputsPage.close();
    }
  });

  it("saves a screenshot of the page", async () => {
    const file = path.join(os.tmpdir(), `vrai-agent-page-${process.pid}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`      agent page screenshot: ${file}`);
  });

  it("shows a 404 page, not JSON, for an agent that does not exist", async () => {
    const notFound = await browser.newPage();
    try {
      const response = await notFound.goto(`${server.url}/agents/agt_nobody`);
      expect(response?.status()).to.equal(404);
      expect(response?.headers()["content-type"]).to.equal("text/html; charset=utf-8");
      expect(await notFound.getByRole("heading", { level: 1 }).textContent()).to.equal("Agent not found");
      expect(await notFound.locator("main").innerText()).to.contain("Vrai has no agent with the id agt_nobody.");
    } finally {
      await notFound.close();
    }
  });
});
