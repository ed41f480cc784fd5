import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import type { Browser, Page } from "playwright-core";
import { axeViolations, launchBrowser } from "../test-helpers/browser";
import { SITE_OPERATOR_TOKEN, startSiteServer, type SiteServer } from "../test-helpers/site";

const DAY = 86400;
const CLAIMED_AT = Date.UTC(2026, 10, 2, 9, 0, 0) / 1000;
const SCRIPT_NAME = "<script>alert(1)</script>";

type Row = { id: string; name: string; total: number; band: string; state: string };

describe("directory page in headless Chromium", function () {
  this.timeout(180_000);
  let site: SiteServer;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];
  /** The directory as the JSON route ranks it: what the page must show. */
  let ranking: Row[];

  async function call(method: string, urlPath: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(site.server.url + urlPath, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return { status: res.status, json: await res.json() };
  }
  const penalize = async (agentId: string, points: number) =>
    expect(
      (
        await call("POST", "/v1/operator/penalties", {
          token: SITE_OPERATOR_TOKEN,
          body: { agentId, code: "rate_abuse", points, days: 30, reason: "directory test" },
        })
      ).status,
    ).to.equal(201);

  /** The rows the page shows, top to bottom. */
  const rows = () =>
    page.$$eval("#directory tbody tr", (trs) =>
      trs.map((tr) => {
        const cells = Array.from(tr.querySelectorAll("td")).map((td) => td.textContent?.trim() ?? "");
        return {
          id: tr.getAttribute("data-agent-id") ?? "",
          name: tr.querySelector("th a")?.textContent ?? "",
          total: Number(cells[0]),
          band: cells[1],
          state: cells[2],
        };
      }),
    );

  before(async () => {
    site = await startSiteServer(CLAIMED_AT);
    // 26 agents: names with "Crawler" in mixed case, totals from V7 penalties (200 - points), ties kept.
    const names = [
      SCRIPT_NAME,
      ...Array.from({ length: 25 }, (_, i) =>
        i % 4 === 0 ? `Web CRAWLER ${i}` : i % 4 === 1 ? `crawler ${i}` : `agent ${String(i).padStart(2, "0")}`,
      ),
    ];
    const ids: string[] = [];
    // Agents 4 and 9 are claimed here, keeping their keys: they check in below.
    const keys = new Map<string, string>();
    for (const [i, name] of names.entries()) {
      if (i !== 4 && i !== 9) {
        ids.push(await site.claimAgent(name));
        continue;
      }
      const owner = await call("POST", "/v1/owners", { body: {} });
      const claim = await call("POST", "/v1/agents", { token: owner.json.token, body: { name } });
      expect(claim.status).to.equal(201);
      ids.push(claim.json.agentId);
      keys.set(claim.json.agentId, claim.json.agentKey);
    }
    for (let i = 0; i < ids.length; i++) if (i % 3 !== 0) await penalize(ids[i], 10 + (i % 5) * 10);
    // Two agents become established (V8: counted check-ins on 14 different UTC days), then a penalty rescores them at once (V9).
    for (let d = 0; d < 14; d++) {
      site.clock.set(CLAIMED_AT + 3600 + d * DAY);
      for (const [agentId, key] of keys) {
        expect(
          (await call("POST", `/v1/agents/${agentId}/checkins`, { token: key, headers: { "idempotency-key": `day-${d}` } })).status,
        ).to.equal(201);
      }
    }
    site.clock.set(CLAIMED_AT + 14 * DAY);
    for (const agentId of keys.keys()) await penalize(agentId, 10);
    const json = await call("GET", "/v1/agents?limit=100");
    ranking = json.json.agents.map((a: { agentId: string; name: string; total: number; band: string; state: string }) => ({
      id: a.agentId,
      name: a.name,
      total: a.total,
      band: a.band.replace("-", "\u2013"),
      state: a.state === "established" ? "Established" : "Provisional",
    }));
    expect(ranking).to.have.length(26);
    expect(ranking.filter((r) => r.state === "Established")).to.have.length(2);

    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
  });
  after(async () => {
    await browser?.close();
    await site?.close();
  });

  it("shows the first 20 agents of the ranking with total, band and state, and the same security headers as the agent page", async () => {
    const res = await page.goto(`${site.server.url}/agents`);
    expect(res?.status()).to.equal(200);
    const headers = res!.headers();
    expect(headers["content-security-policy"])
      .to.include("default-src 'none'")
      .and.include("frame-ancestors 'none'")
      .and.include("form-action 'self'");
    expect(headers["content-security-policy"]).to.not.match(/script-src/);
    expect(headers["x-content-type-options"]).to.equal("nosniff");
    expect(headers["access-control-allow-origin"]).to.equal(undefined);
    expect(await rows()).to.deep.equal(ranking.slice(0, 20));
    const text = await page.textContent("main");
    expect(text).to.not.match(/missed/i);
    expect(text).to.not.match(/\b(good|bad|poor|excellent|grade)\b/i);
  });

  it("shows an agent named <script>alert(1)</script> as text", async () => {
    await page.goto(`${site.server.url}/agents?q=${encodeURIComponent("<script>")}`);
    expect((await rows()).map((r) => r.name)).to.deep.equal([SCRIPT_NAME]);
    expect(await page.$$eval("main script", (s) => s.length)).to.equal(0);
    expect(dialogs).to.deep.equal([]);
  });

  it("searches names in any case from the form, keeping the search in the field", async () => {
    await page.goto(`${site.server.url}/agents`);
    await page.fill("#q", "CrAwLeR");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    expect(new URL(page.url()).searchParams.get("q")).to.equal("CrAwLeR");
    expect(await page.inputValue("#q")).to.equal("CrAwLeR");
    expect(await rows()).to.deep.equal(ranking.filter((r) => /crawler/i.test(r.name)));
  });

  it("filters by state and by band from the form", async () => {
    await page.goto(`${site.server.url}/agents`);
    await page.selectOption("#state", "established");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    expect(await rows()).to.deep.equal(ranking.filter((r) => r.state === "Established"));
    await page.selectOption("#state", "");
    await page.selectOption("#band", "0-199");
    await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
    expect(await page.inputValue("#band")).to.equal("0-199");
    expect(await rows()).to.deep.equal(ranking.filter((r) => r.band === "0\u2013199"));
    expect((await rows()).length).to.be.within(1, 25);
  });

  it("pages by cursor: the next page has no agent of the first, together they are the whole ranking, and previous goes back", async () => {
    await page.goto(`${site.server.url}/agents`);
    const first = await rows();
    expect(await page.$("#prev-page")).to.equal(null);
    await Promise.all([page.waitForNavigation(), page.click("#next-page")]);
    const second = await rows();
    expect(second.filter((r) => first.some((f) => f.id === r.id))).to.deep.equal([]);
    expect([...first, ...second]).to.deep.equal(ranking);
    expect(await page.$("#next-page")).to.equal(null);
    await Promise.all([page.waitForNavigation(), page.click("#prev-page")]);
    expect(await rows()).to.deep.equal(first);
    // A filter is kept from page to page.
    await page.goto(`${site.server.url}/agents?q=crawler&limit=5`);
    const a = await rows();
    await Promise.all([page.waitForNavigation(), page.click("#next-page")]);
    expect(new URL(page.url()).searchParams.get("q")).to.equal("crawler");
    expect([...a, ...(await rows())]).to.deep.equal(ranking.filter((r) => /crawler/i.test(r.name)).slice(0, 10));
  });

  it("answers a bad parameter with a 400 page naming it", async () => {
    for (const [query, field] of [
      ["band=excellent", "query.band"],
      ["cursor=forged", "query.cursor"],
      ["limit=500", "query.limit"],
    ]) {
      const res = await page.goto(`${site.server.url}/agents?${query}`);
      expect(res?.status(), query).to.equal(400);
      expect(res!.headers()["content-type"]).to.match(/^text\/html/);
      expect(await page.textContent("#bad-request-reason"), query).to.include(`${field}:`);
    }
  });

  it("has no accessibility violations (axe), on a full page, a filtered one and the 400 page", async () => {
    for (const query of ["", "?q=crawler&state=provisional", "?band=nope"]) {
      await page.goto(`${site.server.url}/agents${query}`);
      expect(await axeViolations(page), query).to.deep.equal([]);
    }
  });

  it("reads well at 360 px and on a desktop (screenshots saved)", async () => {
    for (const [label, width] of [
      ["desktop", 1280],
      ["360px", 360],
    ] as const) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${site.server.url}/agents`);
      // Nothing wider than the screen: no sideways scrolling to read a row.
      expect(await page.evaluate(() => document.documentElement.scrollWidth), label).to.be.at.most(width);
      const file = path.join(os.tmpdir(), `vrai-directory-${label}-${process.pid}.png`);
      await page.screenshot({ path: file, fullPage: true });
      console.log(`      directory page screenshot (${label}): ${file}`);
    }
  });
});
