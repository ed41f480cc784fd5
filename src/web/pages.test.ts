import { expect } from "chai";
import { request } from "node:http";
import { TEST_STORES } from "../test-helpers/db";
import { useSiteServer } from "../test-helpers/site";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z

for (const store of TEST_STORES)
  describe(`the site's pages on ${store.name}`, () => {
    const ctx = useSiteServer(T0, store.create);
    const claimAgent = (name: string) => ctx.site.claimAgent(name);

    it("serves the page of a claimed agent as HTML that allows no script", async () => {
      const agentId = await claimAgent("route agent");
      const res = await fetch(`${ctx.site.server.url}/agents/${agentId}`);
      expect(res.status).to.equal(200);
      expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
      expect(res.headers.get("content-security-policy")).to.contain("default-src 'none'");
      const page = await res.text();
      expect(page).to.contain("<h1>route agent</h1>");
      expect(page).to.contain('<p class="total" id="total">200</p>');
      // Claimed at 10:00 UTC: no check-in yet today, and its first daily score at the next 00:00 UTC (issue #31).
      expect(page).to.contain("No check-in counted yet today (2026-11-02, UTC).");
      expect(page).to.contain(
        'The first daily score of this claim is computed at <time datetime="2026-11-03T00:00:00Z">2026-11-03 00:00:00 UTC</time>, in 14 h 0 min',
      );
    });

    it("counts today's check-ins of the latest claim on the agent page (issue #31)", async () => {
      const post = async (path: string, token: string | undefined, headers: Record<string, string> = {}) =>
        (
          await fetch(ctx.site.server.url + path, {
            method: "POST",
            headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
            body: "{}",
          })
        ).json();
      const owner = await post("/v1/owners", undefined);
      const agent = await post("/v1/agents", owner.token);
      expect((await post(`/v1/agents/${agent.agentId}/checkins`, agent.agentKey, { "idempotency-key": "page-1" })).result).to.equal(
        "counted",
      );
      const page = await (await fetch(`${ctx.site.server.url}/agents/${agent.agentId}`)).text();
      expect(page).to.contain('<p id="today-checkins"><strong>1</strong> check-in counted today (2026-11-02, UTC), 0 on time.');
    });

    it("charts the agent's stored daily totals of the last 90 days, the days before its claim marked, with its badge snippet", async () => {
      const agentId = await claimAgent("history agent");
      ctx.site.clock.set(T0 + 3 * 86400); // 2026-11-05T10:00:00Z
      try {
        for (const day of ["2026-11-03", "2026-11-04", "2026-11-05"]) await ctx.site.server.service.scoring.recomputeDay(day);
        const page = await (await fetch(`${ctx.site.server.url}/agents/${agentId}`)).text();
        expect(page).to.contain('data-days="90"');
        expect(page).to.contain("Daily totals from 2026-08-08 to 2026-11-05");
        expect(page.match(/<circle class="point"/g)).to.have.length(3);
        expect(page).to.contain("<title>2026-11-05: 200</title>");
        // 2026-08-08 to 2026-11-01 ended before the claim at 2026-11-02T10:00:00Z.
        expect(page.match(/<rect class="before-claim"/g)).to.have.length(86);
        expect(page).to.contain(
          `[![Vrai Score](${ctx.site.server.url}/agents/${agentId}/badge.svg)](${ctx.site.server.url}/agents/${agentId})`,
        );
        // Its first daily score came: the page no longer says when.
        expect(page).to.not.contain('id="first-daily"');
      } finally {
        ctx.site.clock.set(T0);
      }
    });

    it("answers an unknown agent with a 404 HTML page saying so", async () => {
      const res = await fetch(`${ctx.site.server.url}/agents/agt_nobody`);
      expect(res.status).to.equal(404);
      expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
      const page = await res.text();
      expect(page).to.contain("<h1>Agent not found</h1>");
      expect(page).to.contain("Vrai has no agent with the id <code>agt_nobody</code>.");
    });

    it("answers an invalid id with a 404 HTML page, the id escaped", async () => {
      const res = await fetch(`${ctx.site.server.url}/agents/${encodeURIComponent("<img src=x onerror=alert(1)>")}`);
      expect(res.status).to.equal(404);
      expect(res.headers.get("content-type")).to.equal("text/html; charset=utf-8");
      const page = await res.text();
      expect(page).to.contain("<code>&lt;img src=x onerror=alert(1)&gt;</code> is not a valid agent id");
      expect(page).not.to.contain("<img");
    });

    it("says so when the agent has no score yet", async () => {
      const owner = await ctx.site.server.service.accounts.createOwner();
      await ctx.site.server.service.store.transaction((tx) =>
        tx.insertAgent({
          id: "agt_unscored",
          name: null,
          ownerId: owner.ownerId,
          claimId: 0,
          claimedAt: 0,
          keyHash: "",
          last: null,
          lateDeadline: null,
          releasedAt: null,
          createdAt: T0,
        }),
      );
      const res = await fetch(`${ctx.site.server.url}/agents/agt_unscored`);
      expect(res.status).to.equal(200);
      const page = await res.text();
      expect(page).to.contain('<h2 id="score-heading">No score yet</h2>');
      expect(page).not.to.contain('id="total"');
    });

    it("leaves the API's JSON 404 for other paths as it was", async () => {
      const res = await fetch(`${ctx.site.server.url}/nothing-here`);
      expect(res.status).to.equal(404);
      expect(await res.json()).to.deep.equal({
        error: { code: "not_found", message: "no such route (the API is under /v1; /v1/openapi.json lists every route)" },
      });
    });

    describe("GET /agents/:id/badge.svg", () => {
      it("serves the latest score as an SVG with an ETag, a short Cache-Control, nosniff and a policy that runs nothing", async () => {
        const agentId = await claimAgent("badge agent");
        const res = await fetch(`${ctx.site.server.url}/agents/${agentId}/badge.svg`);
        expect(res.status).to.equal(200);
        expect(res.headers.get("content-type")).to.equal("image/svg+xml; charset=utf-8");
        expect(res.headers.get("cache-control")).to.equal("public, max-age=300");
        expect(res.headers.get("x-content-type-options")).to.equal("nosniff");
        expect(res.headers.get("content-security-policy")).to.contain("default-src 'none'");
        expect(res.headers.get("etag")).to.match(/^W\/"badge-\d+-[0-9a-f]{16}"$/);
        expect(await res.text()).to.contain("<title>vrai: 200 · provisional</title>");
      });

      /** A GET with only the headers given (fetch adds Cache-Control: no-cache to a conditional request). */
      function get(path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
        return new Promise((resolve, reject) => {
          request(`${ctx.site.server.url}${path}`, { headers }, (res) => {
            let body = "";
            res.on("data", (chunk) => (body += chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          })
            .on("error", reject)
            .end();
        });
      }

      it("answers 304 with no body to If-None-Match of the current ETag, and 200 to another", async () => {
        const agentId = await claimAgent("cached agent");
        const etag = (await fetch(`${ctx.site.server.url}/agents/${agentId}/badge.svg`)).headers.get("etag") ?? "";
        const again = await get(`/agents/${agentId}/badge.svg`, { "if-none-match": etag });
        expect(again).to.deep.equal({ status: 304, body: "" });
        const other = await get(`/agents/${agentId}/badge.svg`, { "if-none-match": 'W/"badge-0-0000000000000000"' });
        expect(other.status).to.equal(200);
        expect(other.body).to.contain("<title>vrai: 200 · provisional</title>");
      });

      it("gives an unknown agent, and an id that cannot be one, a neutral unknown badge with 404", async () => {
        for (const id of ["agt_nobody", encodeURIComponent("<script>")]) {
          const res = await fetch(`${ctx.site.server.url}/agents/${id}/badge.svg`);
          expect(res.status).to.equal(404);
          expect(res.headers.get("content-type")).to.equal("image/svg+xml; charset=utf-8");
          const svg = await res.text();
          expect(svg).to.contain("<title>vrai: unknown</title>");
          expect(svg).not.to.contain("<script");
        }
      });
    });
  });
