import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { CURRENT_METHOD, METHOD_VERSIONS, METHODS, reachableMax } from "../method";
import { TEST_STORES } from "../test-helpers/db";
import { useSiteServer } from "../test-helpers/site";
import { renderMethodPage } from "./method-page";

const T0 = Date.UTC(2026, 10, 20, 10, 0, 0) / 1000; // 2026-11-20T10:00:00Z

describe("method page", () => {
  const page = renderMethodPage({ outages: [], nextPage: null, laterPage: false });

  it("lists every version of the method registry with its date and what changed, the current one first", () => {
    expect(page).to.contain(`<strong id="current-method">${CURRENT_METHOD}</strong>`);
    for (const v of METHOD_VERSIONS) {
      expect(page).to.contain(`<li data-version="${v}"><h3>Method ${v}`);
      expect(page).to.contain(`<time datetime="${METHODS[v].published}">`);
      expect(page).to.contain(METHODS[v].changes.replace(/'/g, "&#39;"));
    }
    expect(page.indexOf('data-version="0.2"')).to.be.lessThan(page.indexOf('data-version="0.1"'));
  });

  it("gives each proof its points, its owner and how often it is checked again (V6)", () => {
    expect(page).to.contain(
      `<tr data-proof="github"><th scope="row">GitHub</th><td>${METHODS[CURRENT_METHOD].identity.github?.points}</td>` +
        "<td>the owner: counts for each agent the owner has claimed</td><td>every 30 days</td></tr>",
    );
    expect(page).to.contain("<td>never: a signature stays valid</td>");
    expect(page).to.contain('<tr data-proof="domain"><th scope="row">Domain</th><td>40</td><td>one agent</td><td>every 7 days</td></tr>');
    expect(page).to.contain("<td>every 7 days, and at once when the identity token moves</td>");
  });

  it("states the numbers of V3–V8 and the verification command", () => {
    for (const text of [
      "3,600 seconds",
      "7,200 seconds",
      "1,200 seconds",
      "600 seconds",
      "2,592,000",
      `0 to ${reachableMax(CURRENT_METHOD)}`,
      "100 + 0 + 100 = 200",
      "200–399",
      "14 or more different UTC days",
      "it is not a grade",
      "npx --yes --package ./vrai-sdk-0.1.0.tgz vrai-verify AGENT_ID",
    ]) {
      expect(page).to.contain(text);
    }
    // A command that works outside a checkout: the SDK package's bin, never `npx vrai` (a name the project does not own on the registry).
    expect(page).to.not.match(/npx vrai(?!-)/);
    const bins = (
      JSON.parse(fs.readFileSync(path.resolve(__dirname, "../../packages/sdk/package.json"), "utf8")) as { bin: Record<string, string> }
    ).bin;
    expect(bins).to.have.property("vrai-verify");
  });

  it("shows every window's start, end or open, declared at and reason, escaped, with the pager links", () => {
    const html = renderMethodPage({
      outages: [{ start: "2026-11-05T10:00:00Z", end: null, declaredAt: "2026-11-05T10:05:00Z", reason: "<script>alert(1)</script>" }],
      nextPage: "/method?cursor=abc#outages-heading",
      laterPage: true,
    });
    expect(html).to.contain(
      '<td><time datetime="2026-11-05T10:00:00Z">2026-11-05 10:00:00 UTC</time></td><td>open</td><td><time datetime="2026-11-05T10:05:00Z">',
    );
    expect(html).to.contain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.to.contain("<script>");
    expect(html).to.contain('<a rel="next" href="/method?cursor=abc#outages-heading">Older windows</a>');
    expect(html).to.contain('<a href="/method#outages-heading">Newest windows</a>');
  });
});

for (const store of TEST_STORES)
  describe(`GET /method on ${store.name}`, () => {
    const ctx = useSiteServer(T0, store.create);

    before(async () => {
      // 25 windows an hour apart, two of them starting in the same second (the id breaks the tie).
      await ctx.site.server.service.store.transaction(async (tx) => {
        for (let i = 0; i < 25; i++) {
          const start = T0 - 86400 * 10 + (i === 24 ? 23 : i) * 3600;
          await tx.insertOutage({
            id: `out_${String(i).padStart(2, "0")}`,
            start,
            end: i === 24 ? null : start + 600,
            declaredAt: start + 60,
            closedAt: null,
            reason: `window ${i}`,
            declaredBy: "admin",
            closedBy: null,
          });
        }
      });
    });

    const reasons = (page: string) => [...page.matchAll(/<td>(window \d+)<\/td>/g)].map((m) => m[1]);

    it("pages every declared window newest first, 20 then 5, with no overlap and none missed", async () => {
      const first = await fetch(`${ctx.site.server.url}/method`);
      expect(first.status).to.equal(200);
      expect(first.headers.get("content-security-policy")).to.contain("frame-ancestors 'none'");
      const page1 = await first.text();
      const one = reasons(page1);
      expect(one).to.have.length(20);
      expect(one.slice(0, 3)).to.deep.equal(["window 24", "window 23", "window 22"]);
      expect(page1).to.contain("<td>open</td>");
      const next = /<a rel="next" href="([^"]+)">/.exec(page1)?.[1] ?? "";
      expect(next).to.match(/^\/method\?cursor=/);
      const page2 = await (await fetch(`${ctx.site.server.url}${next.replace(/&amp;/g, "&")}`)).text();
      const two = reasons(page2);
      expect(two).to.deep.equal(["window 4", "window 3", "window 2", "window 1", "window 0"]);
      expect(one.filter((r) => two.includes(r))).to.deep.equal([]);
      expect(page2).not.to.contain('rel="next"');
    });

    it("answers a cursor no page gave with a 400 page naming it, and changes nothing", async () => {
      const res = await fetch(`${ctx.site.server.url}/method?cursor=bm90LWEtY3Vyc29y`);
      expect(res.status).to.equal(400);
      expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
      expect(await res.text()).to.contain("cursor: not a cursor of this list");
      expect(reasons(await (await fetch(`${ctx.site.server.url}/method`)).text())).to.have.length(20);
    });

    it("is where the agent page's link to every declared window points", async () => {
      const agentId = await ctx.site.claimAgent("linked agent");
      expect(await (await fetch(`${ctx.site.server.url}/agents/${agentId}`)).text()).to.contain(
        '<a href="/method#outages-heading">Every declared window</a>',
      );
    });
  });
