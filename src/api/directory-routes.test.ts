import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { bandOf } from "../method";
import { createManualClock } from "../service/clock";
import { encodeCursor } from "../service/directory";
import { createSqlStore, type SqlStore } from "../store/sql-store";
import { TEST_STORES, type TestDb } from "../test-helpers/db";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

type Entry = {
  agentId: string;
  name: string | null;
  scoreType: string;
  total: number;
  band: string;
  state: string;
  at: string;
  links: { score: string; page: string };
};
type Answer = { agents: Entry[]; nextCursor: string | null; prevCursor: string | null };

for (const { name, create } of TEST_STORES) {
  describe(`GET /v1/agents (the directory) on ${name}`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    let store: SqlStore;
    let scoreAt = T0;
    /** Agent ids by name, in the order they were claimed. */
    const ids = new Map<string, string>();

    /** A new latest score for the agent with `total` and `state` (V8 band of the total), the rest as its previous one. */
    async function rescore(agentId: string, total: number, state: "provisional" | "established"): Promise<void> {
      const previous = await store.read.latestScore(agentId);
      if (!previous) throw new Error(`no score for ${agentId}`);
      scoreAt += 1;
      const { id: _id, ...rest } = previous;
      await store.read.insertScore({ ...rest, at: scoreAt, total, result: { ...previous.result, total, band: bandOf(total), state } });
    }

    async function get(query: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
      const res = await fetch(`${server.url}/v1/agents${query}`, { headers });
      return { status: res.status, body: await res.json(), headers: res.headers };
    }
    const page = async (query: string): Promise<Answer> => {
      const answer = await get(query);
      expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
      return answer.body;
    };
    /** Every page from the first, following nextCursor. */
    async function walk(query: string): Promise<Entry[][]> {
      const pages: Entry[][] = [];
      let cursor: string | null = "";
      while (cursor !== null) {
        const answer: Answer = await page(`?${query}${cursor ? `&cursor=${cursor}` : ""}`);
        pages.push(answer.agents);
        cursor = answer.nextCursor;
      }
      return pages;
    }

    before(async () => {
      testDb = await create();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: "operator-directory-test-0123456789",
        clock: createManualClock(T0),
        logger: pino({ level: "silent" }),
        rateLimit: { perMinute: 100_000, burst: 10_000 },
        overload: { maxInFlight: 100_000, maxLoopDelayMs: 60_000 },
      });
      store = createSqlStore(testDb.db);
      const { ownerId } = await server.service.accounts.createOwner();
      // [name, total, state]: ties at 230 and 200 (200 is what a claim alone scores, V8).
      const agents: Array<[string, number, "provisional" | "established" | null]> = [
        ["Alpha Crawler", 430, "established"],
        ["beta crawler", 230, "provisional"],
        ["Gamma", 230, "established"],
        ["delta", 200, null],
        ["Epsilon 100%", 330, "established"],
        ["zeta", 200, null],
        ["Eta", 610, "established"],
        ["theta", 230, "provisional"],
        ["iota", 150, "provisional"],
        ["kappa_x", 200, null],
        ["Lambda CRAWLER", 480, "provisional"],
      ];
      for (const [agentName, total, state] of agents) {
        const { agentId } = await server.service.accounts.claimNewAgent(ownerId, { name: agentName });
        ids.set(agentName, agentId);
        if (state) await rescore(agentId, total, state);
      }
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    /** Every agent in directory order, computed here from the scores as stored. */
    async function expectedOrder(): Promise<Array<{ agentId: string; total: number; state: string }>> {
      const rows = [];
      for (const agentId of ids.values()) {
        const s = await store.read.latestScore(agentId);
        rows.push({ agentId, total: s!.total, state: s!.result.state });
      }
      return rows.sort((a, b) => b.total - a.total || (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0));
    }

    it("ranks claimed agents by the total of their latest score, ties by agent id, each with its band and state as stored", async () => {
      const answer = await page("?limit=100");
      const expected = await expectedOrder();
      expect(answer.agents.map((a) => a.agentId)).to.deep.equal(expected.map((e) => e.agentId));
      expect(answer.nextCursor).to.equal(null);
      expect(answer.prevCursor).to.equal(null);
      const eta = answer.agents[0];
      expect(eta).to.deep.include({
        agentId: ids.get("Eta"),
        name: "Eta",
        scoreType: "vrai",
        total: 610,
        band: "600-799",
        state: "established",
      });
      expect(eta.links).to.deep.equal({ score: `/v1/agents/${ids.get("Eta")}/score`, page: `/agents/${ids.get("Eta")}` });
      const ties = answer.agents.filter((a) => a.total === 230).map((a) => a.agentId);
      expect(ties).to.have.length(3);
      expect(ties).to.deep.equal([...ties].sort());
      expect(answer.agents.find((a) => a.name === "delta")).to.deep.include({ total: 200, band: "200-399", state: "provisional" });
    });

    it("filters by band and by state, alone and together", async () => {
      const expected = await expectedOrder();
      const band = await page("?band=200-399&limit=100");
      expect(band.agents.map((a) => a.agentId)).to.deep.equal(
        expected.filter((e) => e.total >= 200 && e.total <= 399).map((e) => e.agentId),
      );
      expect(band.agents.every((a) => a.band === "200-399")).to.equal(true);
      const established = await page("?state=established&limit=100");
      expect(established.agents.map((a) => a.agentId)).to.deep.equal(
        expected.filter((e) => e.state === "established").map((e) => e.agentId),
      );
      const both = await page("?band=200-399&state=established&limit=100");
      expect(both.agents.map((a) => a.name)).to.deep.equal(["Epsilon 100%", "Gamma"]);
      expect((await page("?band=800-1000")).agents).to.deep.equal([]);
      // Empty parameters (a form left on "any") mean no filter.
      expect((await page("?band=&state=&q=&limit=100")).agents).to.have.length(ids.size);
    });

    it("searches names case-insensitively as substrings, and agent ids exactly", async () => {
      expect((await page("?q=CRAWLER")).agents.map((a) => a.name)).to.deep.equal(["Lambda CRAWLER", "Alpha Crawler", "beta crawler"]);
      expect((await page("?q=crawler&state=provisional")).agents.map((a) => a.name)).to.deep.equal(["Lambda CRAWLER", "beta crawler"]);
      expect((await page(`?q=${ids.get("zeta")}`)).agents.map((a) => a.name)).to.deep.equal(["zeta"]);
      // Part of an id is not a match; "%" and "_" are themselves.
      expect((await page(`?q=${ids.get("zeta")!.slice(0, -2)}`)).agents).to.deep.equal([]);
      expect((await page("?q=100%25")).agents.map((a) => a.name)).to.deep.equal(["Epsilon 100%"]);
      expect((await page("?q=a_x")).agents.map((a) => a.name)).to.deep.equal(["kappa_x"]);
      expect((await page("?q=nobody")).agents).to.deep.equal([]);
    });

    it("pages by cursor: no page overlaps another and together they are the whole ranking; prevCursor goes back", async () => {
      const whole = (await page("?limit=100")).agents.map((a) => a.agentId);
      const pages = await walk("limit=3");
      expect(pages.map((p) => p.length)).to.deep.equal([3, 3, 3, 2]);
      expect(pages.flat().map((a) => a.agentId)).to.deep.equal(whole);
      expect(new Set(pages.flat().map((a) => a.agentId)).size).to.equal(whole.length);

      const first = await page("?limit=3");
      const second = await page(`?limit=3&cursor=${first.nextCursor}`);
      expect(second.agents.map((a) => a.agentId)).to.deep.equal(whole.slice(3, 6));
      const back = await page(`?limit=3&cursor=${second.prevCursor}`);
      expect(back.agents.map((a) => a.agentId)).to.deep.equal(whole.slice(0, 3));
      expect(back.prevCursor).to.equal(null);
      const third = await page(`?limit=3&cursor=${second.nextCursor}`);
      expect(third.agents.map((a) => a.agentId)).to.deep.equal(whole.slice(6, 9));
      expect((await page(`?limit=3&cursor=${third.prevCursor}`)).agents.map((a) => a.agentId)).to.deep.equal(whole.slice(3, 6));
      // Filters page the same way.
      const crawlers = await walk("q=crawler&limit=2");
      expect(crawlers.flat().map((a) => a.name)).to.deep.equal(["Lambda CRAWLER", "Alpha Crawler", "beta crawler"]);
    });

    it("does not show twice or skip an agent that did not move when scores change between two pages", async () => {
      const before = (await page("?limit=100")).agents;
      const first = await page("?limit=4");
      // Between the pages: the last agent of the ranking rises to the top, one of the first page falls to the bottom.
      const riser = before[before.length - 1].agentId;
      const faller = first.agents[1].agentId;
      await rescore(riser, 700, "established");
      await rescore(faller, 100, "provisional");
      const rest: Entry[] = [];
      let cursor = first.nextCursor;
      while (cursor !== null) {
        const answer: Answer = await page(`?limit=4&cursor=${cursor}`);
        rest.push(...answer.agents);
        cursor = answer.nextCursor;
      }
      const seen = [...first.agents, ...rest].map((a) => a.agentId);
      for (const { agentId } of before.filter((a) => a.agentId !== riser && a.agentId !== faller)) {
        expect(
          seen.filter((id) => id === agentId),
          agentId,
        ).to.have.length(1);
      }
      expect((await page("?limit=1")).agents[0].agentId).to.equal(riser);
    });

    it("takes 1 to 100 agents a page, 20 unless asked", async () => {
      const { ownerId } = await server.service.accounts.createOwner();
      for (let i = 0; i < 12; i++) await server.service.accounts.claimNewAgent(ownerId, { name: `filler ${i}` });
      const all = ids.size + 12;
      const byDefault = await page("");
      expect(byDefault.agents).to.have.length(20);
      expect(byDefault.nextCursor).to.be.a("string");
      expect((await page("?limit=1")).agents).to.have.length(1);
      expect((await page("?limit=100")).agents).to.have.length(all);
      for (const limit of ["0", "101", "-1", "2.5", "many"]) {
        const answer = await get(`?limit=${limit}`);
        expect(answer.status, limit).to.equal(400);
        expect(answer.body.error.code).to.equal("invalid_request");
        expect(answer.body.error.message).to.match(/^query\.limit: /);
      }
    });

    it("answers 400 naming the field for a bad cursor, band, state, sort or search", async () => {
      const forged = Buffer.from("a:200:not an id!").toString("base64url");
      const cases: Array<[string, string]> = [
        ["?cursor=nonsense", "query.cursor"],
        [`?cursor=${forged}`, "query.cursor"],
        ["?cursor=%2F%2F%2F", "query.cursor"],
        [`?cursor=${Buffer.from("a:1001:agt_x").toString("base64url")}`, "query.cursor"],
        ["?band=200-400", "query.band"],
        ["?band=good", "query.band"],
        ["?state=active", "query.state"],
        ["?sort=name", "query.sort"],
        [`?q=${"x".repeat(101)}`, "query.q"],
        ["?q=a&q=b", "query.q"],
      ];
      for (const [query, field] of cases) {
        const answer = await get(query);
        expect(answer.status, query).to.equal(400);
        expect(answer.body.error.message, query).to.match(new RegExp(`^${field.replace(".", "\\.")}: `));
      }
      // A well-formed cursor of a position that names no agent still pages from there.
      const there = await page(`?limit=100&cursor=${encodeCursor({ direction: "after", total: 230, agentId: "agt_zzzz" }, {})}`);
      expect(there.agents.every((a) => a.total < 230)).to.equal(true);
      // A cursor belongs to the directory under its filter (issue #33): under another band, state or search it is a 400.
      const unfiltered = encodeCursor({ direction: "after", total: 230, agentId: "agt_zzzz" }, {});
      for (const query of [
        `?band=200-399&cursor=${unfiltered}`,
        `?state=provisional&cursor=${unfiltered}`,
        `?q=agent&cursor=${unfiltered}`,
      ]) {
        const answer = await get(query);
        expect([answer.status, answer.body.error.message.split(":")[0]], query).to.deep.equal([400, "query.cursor"]);
      }
      const banded = encodeCursor({ direction: "after", total: 230, agentId: "agt_zzzz" }, { band: "200-399" });
      expect((await get(`?band=200-399&cursor=${banded}`)).status).to.equal(200);
    });

    it("is in the OpenAPI document with its parameters and response schema", async () => {
      const doc = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as any;
      const op = doc.paths["/v1/agents"].get;
      expect(op.security).to.deep.equal([]);
      expect(op.parameters.map((p: { name: string }) => p.name)).to.deep.equal(["sort", "band", "state", "q", "cursor", "limit"]);
      expect(op.parameters.every((p: { required: boolean; in: string }) => !p.required && p.in === "query")).to.equal(true);
      expect(JSON.stringify(op.parameters.find((p: { name: string }) => p.name === "band").schema)).to.include("800-1000");
      const schema = op.responses["200"].content["application/json"].schema;
      expect(schema.required).to.include.members(["agents", "nextCursor", "prevCursor"]);
      expect(schema.properties.agents.items.required).to.include.members(["agentId", "total", "band", "state"]);
      expect(op.responses["400"]).to.be.an("object");
      expect(doc.paths["/v1/agents"].post.security).to.deep.equal([{ ownerToken: [] }]);
    });

    describe("CORS", () => {
      const origin = { origin: "https://dapp.example" };

      it("lets any origin read the public routes, without credentials, and answers their preflight", async () => {
        const agentId = ids.get("Eta")!;
        for (const path of [
          "/v1/agents",
          `/v1/agents/${agentId}/score`,
          "/v1/method",
          "/v1/outages",
          "/v1/openapi.json",
          "/v1/agents/agt_nobody/score",
        ]) {
          const res = await fetch(`${server.url}${path}`, { headers: origin });
          expect(res.headers.get("access-control-allow-origin"), path).to.equal("*");
          expect(res.headers.get("access-control-allow-credentials"), path).to.equal(null);
          await res.arrayBuffer();
          const preflight = await fetch(`${server.url}${path}`, {
            method: "OPTIONS",
            headers: { ...origin, "access-control-request-method": "GET", "access-control-request-headers": "if-none-match" },
          });
          expect(preflight.status, path).to.equal(204);
          expect(preflight.headers.get("access-control-allow-origin"), path).to.equal("*");
          expect(preflight.headers.get("access-control-allow-methods"), path).to.equal("GET, HEAD, OPTIONS");
          expect(preflight.headers.get("access-control-allow-headers"), path).to.equal("If-None-Match");
          expect(preflight.headers.get("access-control-allow-credentials"), path).to.equal(null);
        }
        const head = await fetch(`${server.url}/v1/agents`, { method: "HEAD", headers: origin });
        expect(head.status).to.equal(200);
        expect(head.headers.get("access-control-allow-origin")).to.equal("*");
        // A bad request is readable too, so a dApp sees why.
        expect((await get("?limit=0", origin)).headers.get("access-control-allow-origin")).to.equal("*");
      });

      it("sends none on owner, agent and operator routes, nor on their preflight", async () => {
        const owner = (await (
          await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { ...origin, "content-type": "application/json" }, body: "{}" })
        ).json()) as { token: string };
        const claim = await fetch(`${server.url}/v1/agents`, {
          method: "POST",
          headers: { ...origin, authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
          body: "{}",
        });
        expect(claim.status).to.equal(201);
        expect(claim.headers.get("access-control-allow-origin")).to.equal(null);
        const { agentId, agentKey } = (await claim.json()) as { agentId: string; agentKey: string };
        const requests: Array<[string, RequestInit]> = [
          ["/v1/owners/me", { headers: { ...origin, authorization: `Bearer ${owner.token}` } }],
          [
            `/v1/agents/${agentId}/checkins`,
            { method: "POST", headers: { ...origin, authorization: `Bearer ${agentKey}`, "idempotency-key": "cors-test-key-0001" } },
          ],
          ["/v1/operator/audit", { headers: { ...origin, authorization: "Bearer operator-directory-test-0123456789" } }],
          ["/v1/operator/audit", { headers: origin }],
        ];
        for (const [path, init] of requests) {
          const res = await fetch(`${server.url}${path}`, init);
          expect(res.status, path).to.be.lessThan(500);
          expect(res.headers.get("access-control-allow-origin"), path).to.equal(null);
          await res.arrayBuffer();
        }
        for (const [path, method] of [
          ["/v1/owners/me", "GET"],
          [`/v1/agents/${agentId}/checkins`, "POST"],
          ["/v1/operator/audit", "GET"],
          ["/v1/operator/busy", "PUT"],
        ]) {
          const preflight = await fetch(`${server.url}${path}`, {
            method: "OPTIONS",
            headers: { ...origin, "access-control-request-method": method, "access-control-request-headers": "authorization" },
          });
          expect(preflight.headers.get("access-control-allow-origin"), path).to.equal(null);
          expect(preflight.headers.get("access-control-allow-methods"), path).to.equal(null);
          await preflight.arrayBuffer();
        }
      });
    });
  });
}
