import { expect } from "chai";
import { useSiteServer } from "../test-helpers/site";
import { renderHomePage } from "./home-page";

const T0 = Date.UTC(2026, 10, 20, 10, 0, 0) / 1000; // 2026-11-20T10:00:00Z

describe("home page", () => {
  const page = renderHomePage({
    topAgents: [
      { id: "agt_a", name: "<script>alert(1)</script>", total: 230, band: "200-399", state: "established" },
      { id: "agt_b", name: null, total: 200, band: "200-399", state: "provisional" },
    ],
    outages: [{ start: "2026-11-05T10:00:00Z", end: null, declaredAt: "2026-11-05T10:05:00Z", reason: "db <failover>" }],
  });

  it("says what the score measures and what it does not, and why the three score types are never mixed", () => {
    expect(page).to.contain("It does <strong>not</strong> measure whether an agent's work is good, safe or accurate");
    for (const type of ["vrai", "sdk-derived", "platform-network"]) expect(page).to.contain(`<code>${type}</code>`);
    expect(page).to.contain("one number mixing them would mean nothing");
  });

  it("has a search form that GETs /agents with q", () => {
    expect(page).to.contain('<form class="search" method="get" action="/agents" role="search">');
    expect(page).to.contain('<input id="q" name="q" type="search"');
  });

  it("lists the top agents with band as a range and state, names escaped, id when unnamed", () => {
    expect(page).to.contain(
      '<td><a href="/agents/agt_a">&lt;script&gt;alert(1)&lt;/script&gt;</a></td><td>230</td><td>200–399</td><td>established</td>',
    );
    expect(page).to.contain('<td><a href="/agents/agt_b">agt_b</a></td><td>200</td>');
    expect(page).not.to.contain("<script>");
  });

  it("lists the latest windows with open ends and links to the method, the directory, the API and the verification how-to", () => {
    expect(page).to.contain("to open, declared at");
    expect(page).to.contain("db &lt;failover&gt;");
    for (const href of ["/method", "/agents", "/v1/openapi.json", "/method#verify-heading", "/method#outages-heading"])
      expect(page).to.contain(`href="${href}"`);
  });

  it("says so while no agent has a score and no window was declared", () => {
    const empty = renderHomePage({ topAgents: [], outages: [] });
    expect(empty).to.contain("No agent has a score yet.");
    expect(empty).to.contain("Vrai has declared no window.");
  });
});

describe("GET / on PGlite", () => {
  const ctx = useSiteServer(T0);

  it("serves the home page with the directory's top and the latest window, under the page headers", async () => {
    const agentId = await ctx.site.claimAgent("home <b>agent</b>");
    await ctx.site.server.service.store.transaction((tx) =>
      tx.insertOutage({
        id: "out_home",
        start: T0 - 3600,
        end: null,
        declaredAt: T0 - 3000,
        closedAt: null,
        reason: "home window",
        declaredBy: "admin",
        closedBy: null,
      }),
    );
    const res = await fetch(`${ctx.site.server.url}/`);
    expect(res.status).to.equal(200);
    expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
    expect(res.headers.get("x-content-type-options")).to.equal("nosniff");
    expect(res.headers.get("content-security-policy")).to.contain("form-action 'self'");
    const page = await res.text();
    expect(page).to.contain(
      `<a href="/agents/${agentId}">home &lt;b&gt;agent&lt;/b&gt;</a></td><td>200</td><td>200–399</td><td>provisional</td>`,
    );
    expect(page).to.contain("home window");
    expect(page).to.contain('<a href="/" aria-current="page">Home</a>');
  });

  it("shows owners the way to claim an agent (issue #31), every call it names one the API declares", async () => {
    const page = await (await fetch(`${ctx.site.server.url}/`)).text();
    expect(page).to.contain('<a href="#claim-heading">Claim your agent</a>');
    expect(page).to.contain('<h2 id="claim-heading">Claim your agent</h2>');
    const text = page.replace(/<[^>]+>/g, "").replace(/&quot;/g, '"');
    const named = [...text.matchAll(/\b(GET|POST) (\/v1\/[^\s,.]+)/g)].map((m) => [m[1].toLowerCase(), m[2].replace(/\{(\w+)\}/g, "{id}")]);
    expect(named.map(([method, path]) => `${method} ${path}`)).to.include.members([
      "post /v1/owners",
      "post /v1/agents",
      "post /v1/agents/{id}/checkins",
      "post /v1/proofs/challenges",
      "post /v1/proofs",
    ]);
    const openApi = (await (await fetch(`${ctx.site.server.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const [method, path] of named) expect(openApi.paths[path]?.[method], `${method} ${path}`).to.not.equal(undefined);
    expect(text).to.contain('POST /v1/agents with {"name": "my agent"}');
  });
});
