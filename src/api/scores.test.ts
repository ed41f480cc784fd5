import http from "node:http";
import { expect } from "chai";
import pino from "pino";
import { createManualClock } from "../service/clock";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { startApiServer, type ApiServer } from "../app/server";
import * as examples from "./examples";
import { scoreJson, scoreJsonText } from "./service-routes";
import { createVraiService } from "../service";
import type { Db } from "../store/db";
import { createSqlStore } from "../store/sql-store";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

/** A GET with node:http (fetch adds `Cache-Control: no-cache` to conditional requests, which disables 304). */
function get(url: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode as number, text }));
      })
      .on("error", reject);
  });
}

describe("scoreJsonText", () => {
  it("writes the fields of scoreJson in the same order, the result's text put in as it is", () => {
    const row = {
      id: 7,
      agentId: "agt_x",
      method: "0.2",
      at: T0,
      trigger: "change" as const,
      day: null,
      sha256: "ab".repeat(32),
      total: 230,
    };
    // A real result (the documented example's), with a string that JSON escapes.
    const result = { ...examples.score.result, agent: 'a "quoted" \\ value' };
    const { text } = scoreJsonText({ ...row, resultJson: JSON.stringify(result, null, 1), packed: null });
    expect(text).to.equal(
      JSON.stringify(scoreJson({ ...row, result })).replace(
        `"result":${JSON.stringify(result)}`,
        `"result":${JSON.stringify(result, null, 1)}`,
      ),
    );
    expect(JSON.parse(text)).to.deep.equal(scoreJson({ ...row, result }));
  });
});

for (const { name, create } of TEST_STORES) {
  describe(`GET /v1/agents/:id/score on ${name}`, () => {
    let testDb: TestDb;
    let server: ApiServer;

    before(async () => {
      testDb = await create();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: "operator-scores-test-0123456789",
        clock: createManualClock(T0),
        logger: pino({ level: "silent" }),
        rateLimit: { perMinute: 100_000, burst: 10_000 },
        overload: { maxInFlight: 100_000, maxLoopDelayMs: 60_000 },
      });
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    async function newAgent(): Promise<string> {
      const owner = (await (
        await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      ).json()) as { token: string };
      const res = await fetch(`${server.url}/v1/agents`, {
        method: "POST",
        headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
        body: "{}",
      });
      return ((await res.json()) as { agentId: string }).agentId;
    }

    it("looks up the latest scores asked for in one turn of the event loop with one statement", async () => {
      const statements: string[] = [];
      const counting: Db = {
        ...testDb.db,
        query: (sql, params) => {
          statements.push(sql);
          return testDb.db.query(sql, params);
        },
      };
      const store = createSqlStore(counting);
      const service = createVraiService({ store, clock: createManualClock(T0), busy: () => false });
      const { ownerId } = await service.accounts.createOwner();
      const a = await service.accounts.claimNewAgent(ownerId);
      const b = await service.accounts.claimNewAgent(ownerId);
      statements.length = 0;
      const [ra, rb, missing, again] = await Promise.all(
        [a.agentId, b.agentId, "agt_nobodyhere00", a.agentId].map((id) => store.latestScoreSummary(id)),
      );
      expect(statements).to.have.length(1);
      expect(ra.score).to.include({ agentId: a.agentId, total: 200 });
      expect(JSON.parse(ra.score!.resultJson).total).to.equal(200);
      expect(rb.score).to.include({ agentId: b.agentId });
      expect(missing).to.deep.equal({ agentExists: false, score: null });
      expect(again).to.deep.equal(ra);
      // The next turn's reads are a statement of their own.
      await store.latestScoreSummary(b.agentId);
      expect(statements).to.have.length(2);
    });

    it("sends at most two statements of latest scores at once: reads of later turns leave together with the next (issue #30)", async () => {
      // Statements held until released, so that the test decides when each comes back.
      const held: Array<{ sql: string; release: () => void }> = [];
      const holding: Db = {
        ...testDb.db,
        async query<Row>(sql: string, params?: unknown[]) {
          await new Promise<void>((release) => held.push({ sql, release }));
          return testDb.db.query<Row>(sql, params);
        },
      };
      const service = createVraiService({ store: createSqlStore(testDb.db), clock: createManualClock(T0), busy: () => false });
      const { ownerId } = await service.accounts.createOwner();
      const ids = await Promise.all(Array.from({ length: 5 }, async () => (await service.accounts.claimNewAgent(ownerId)).agentId));
      const store = createSqlStore(holding);
      const turn = () => new Promise((resolve) => setImmediate(resolve));
      // Five reads in five turns of the event loop: the first two leave each in a statement of its own...
      const answers: Array<Promise<{ agentExists: boolean }>> = [];
      for (const id of ids) {
        answers.push(store.latestScoreSummary(id));
        await turn();
      }
      await turn();
      expect(held).to.have.length(2);
      // ...and the other three wait for one of them to come back, then leave in one.
      held[0].release();
      await answers[0];
      for (let i = 0; i < 5 && held.length < 3; i++) await turn();
      expect(held).to.have.length(3);
      for (const h of held.slice(1)) h.release();
      expect((await Promise.all(answers)).map((a) => a.agentExists)).to.deep.equal([true, true, true, true, true]);
      expect(held).to.have.length(3);
    });

    it("answers many agents asked at once, each with its own score or 404", async () => {
      const agents = await Promise.all(Array.from({ length: 5 }, () => newAgent()));
      // One agent without a score: claimed beside the server (its cache never saw it), its score row removed.
      const beside = createVraiService({ store: createSqlStore(testDb.db), clock: createManualClock(T0), busy: () => false });
      const { agentId: unscored } = await beside.accounts.claimNewAgent((await beside.accounts.createOwner()).ownerId);
      await testDb.db.query("DELETE FROM scores WHERE agent_id = $1", [unscored]);
      agents.push(unscored);
      const asked = [...agents, agents[0], "agt_doesnotexist000", agents[3]];
      const answers = await Promise.all(asked.map((id) => fetch(`${server.url}/v1/agents/${id}/score`)));
      const bodies = (await Promise.all(answers.map((r) => r.json()))) as Array<Record<string, any>>;
      const stored = await testDb.db.query<{ id: number; agent_id: string; sha256: string }>("SELECT id, agent_id, sha256 FROM scores");
      asked.forEach((id, i) => {
        const row = stored.rows.find((r) => r.agent_id === id);
        if (id === "agt_doesnotexist000") {
          expect(answers[i].status).to.equal(404);
          expect(bodies[i].error.code).to.equal("agent_not_found");
        } else if (!row) {
          expect(answers[i].status).to.equal(404);
          expect(bodies[i].error.code).to.equal("score_not_found");
        } else {
          expect(answers[i].status).to.equal(200);
          expect(bodies[i]).to.include({ id: row.id, agentId: id, scoreType: "vrai", sha256: row.sha256, total: 200 });
          expect(bodies[i].result.total).to.equal(200);
          expect(Object.keys(bodies[i])).to.deep.equal([
            "id",
            "scoreType",
            "agentId",
            "method",
            "at",
            "trigger",
            "day",
            "sha256",
            "total",
            "result",
            "links",
          ]);
        }
      });
    });

    it("gives the score a validator and answers 304 when the client already has it", async () => {
      const agentId = await newAgent();
      const first = await fetch(`${server.url}/v1/agents/${agentId}/score`);
      const etag = first.headers.get("etag");
      expect(etag).to.match(/^W\/"score-1-\d+-[0-9a-f]{16}"$/);
      expect(first.headers.get("content-type")).to.equal("application/json; charset=utf-8");
      const text = await first.text();
      expect(Number(first.headers.get("content-length"))).to.equal(Buffer.byteLength(text));
      const again = await get(`${server.url}/v1/agents/${agentId}/score`, { "if-none-match": etag as string });
      expect(again).to.deep.equal({ status: 304, text: "" });
      const other = await get(`${server.url}/v1/agents/${agentId}/score`, { "if-none-match": 'W/"something-else"' });
      expect(other).to.deep.equal({ status: 200, text });
    });
  });
}
