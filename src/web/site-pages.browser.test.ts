import { expect } from "chai";
import type { Browser, Page } from "playwright-core";
import { METHOD_VERSIONS } from "../method";
import { checkPageAtWidths, launchBrowser } from "../test-helpers/browser";
import { startSiteServer, type SiteServer } from "../test-helpers/site";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z
const SCRIPT_NAME = "<script>alert(1)</script>";

describe("home, method and agent pages in headless Chromium", function () {
  this.timeout(180_000);
  let site: SiteServer;
  let browser: Browser;
  let page: Page;
  let agentId: string;
  const dialogs: string[] = [];

  before(async () => {
    site = await startSiteServer(T0);
    agentId = await site.claimAgent(SCRIPT_NAME);
    await site.claimAgent("Second agent");
    // Three daily scores, then 25 windows an hour apart for the method page's pages.
    site.clock.set(T0 + 3 * 86400);
    for (const day of ["2026-11-03", "2026-11-04", "2026-11-05"]) await site.server.service.scoring.recomputeDay(day);
    await site.server.service.store.transaction(async (tx) => {
      for (let i = 0; i < 25; i++) {
        const start = T0 - 10 * 86400 + i * 3600;
        await tx.insertOutage({
          id: `out_${String(i).padStart(2, "0")}`,
          start,
          end: i === 24 ? null : start + 600,
          declaredAt: start + 60,
          closedAt: null,
          reason: `window ${i} <b>`,
          declaredBy: "admin",
          closedBy: null,
        });
      }
    });
    browser = await launchBrowser();
    page = await (await browser.newContext()).newPage();
    // An alert would mean an agent's name ran as script: record it and go on.
    page.on("dialog", (dialog) => void dialog.dismiss().finally(() => dialogs.push(dialog.message())));
  });
  after(() => browser?.close().finally(() => site?.close()));

  const text = (selector: string) => page.$eval(selector, (e) => e.textContent ?? "");

  it("home: what Vrai measures, the top agents (names as text), the latest windows, and a search that reaches the directory", async () => {
    await page.goto(`${site.server.url}/`);
    expect(await text("#measures-heading")).to.equal("What the Vrai Score measures");
    expect(await page.$$eval(".top-agents tbody tr", (trs) => trs.map((tr) => tr.querySelector("a")?.textContent))).to.include(SCRIPT_NAME);
    expect(await page.$$eval(".latest-windows li", (lis) => lis.length)).to.equal(3);
    expect(await text(".latest-windows li")).to.contain("window 24 <b>");
    await page.fill("#q", "second");
    await Promise.all([page.waitForURL(/\/agents\?q=second$/), page.click(".search button")]);
    expect(await page.content()).to.contain("Second agent");
    expect(dialogs).to.deep.equal([]);
  });

  it("method: every version, and every declared window over two pages with no overlap", async () => {
    await page.goto(`${site.server.url}/method`);
    expect(await page.$$eval(".versions li", (lis) => lis.map((li) => li.getAttribute("data-version")))).to.deep.equal([
      ...METHOD_VERSIONS,
    ]);
    const reasons = () => page.$$eval(".outages tbody tr", (trs) => trs.map((tr) => tr.querySelectorAll("td")[3]?.textContent ?? ""));
    const first = await reasons();
    expect(first).to.have.length(20);
    expect(first[0]).to.equal("window 24 <b>");
    await Promise.all([page.waitForURL(/cursor=/), page.click('a[rel="next"]')]);
    const second = await reasons();
    expect(second).to.deep.equal(["window 4 <b>", "window 3 <b>", "window 2 <b>", "window 1 <b>", "window 0 <b>"]);
    expect(first.filter((r) => second.includes(r))).to.deep.equal([]);
  });

  it("agent page: the 90-day history with the days before the claim marked, and the badge snippet and image", async () => {
    await page.goto(`${site.server.url}/agents/${agentId}`);
    expect(await text("h1")).to.equal(SCRIPT_NAME);
    expect(await page.$eval(".history-chart", (svg) => svg.getAttribute("data-days"))).to.equal("90");
    expect(await page.$$eval(".history-chart circle.point", (c) => c.length)).to.equal(3);
    expect(await page.$$eval(".history-chart rect.before-claim", (r) => r.length)).to.equal(86);
    expect(await text("#badge-markdown")).to.equal(
      `[![Vrai Score](${site.server.url}/agents/${agentId}/badge.svg)](${site.server.url}/agents/${agentId})`,
    );
    expect(await page.$eval("#badge-heading ~ p img", (img) => (img instanceof HTMLImageElement ? img.naturalWidth : 0))).to.be.greaterThan(
      0,
    );
    expect(dialogs).to.deep.equal([]);
  });

  for (const [label, route] of [
    ["home", "/"],
    ["method", "/method"],
    ["agent", "/agents/AGENT"],
  ] as const) {
    it(`${label} page: axe reports no violations, and it reads at 360 px and on a desktop (screenshots saved)`, async () => {
      const url = `${site.server.url}${route.replace("AGENT", agentId)}`;
      await checkPageAtWidths(page, label, async () => {
        await page.goto(url);
      });
    });
  }
});
