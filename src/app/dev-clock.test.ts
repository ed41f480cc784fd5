import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import pino from "pino";
import { createManualClock, createOffsetClock } from "../service/clock";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { DEV_CLOCK_FILE, openDevClock } from "./dev-clock-file";
import { apiDocument, startApiServer, type ApiServer } from "./server";

const OPERATOR_TOKEN = "operator-token-dev-clock-test";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

describe("the development clock of vrai dev (issue #31)", () => {
  describe("an offset clock", () => {
    it("is its base plus whole seconds, moved forward only", () => {
      const base = createManualClock(T0);
      const clock = createOffsetClock(base, 86_400);
      expect(clock.now()).to.equal(T0 + 86_400);
      base.set(T0 + 5);
      expect(clock.now()).to.equal(T0 + 86_405);
      clock.advance(86_400);
      expect([clock.now(), clock.offsetS()]).to.deep.equal([T0 + 2 * 86_400 + 5, 2 * 86_400]);
      for (const bad of [0, -1, 1.5]) expect(() => clock.advance(bad)).to.throw(RangeError);
      expect(() => createOffsetClock(base, -86_400)).to.throw(RangeError);
    });
  });

  describe("its file in the data directory", () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-dev-clock-"));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("starts at the machine's clock, keeps each move (0600), and a restart finds the clock where it was moved", () => {
      const first = openDevClock(dir);
      expect(first.clock.offsetS()).to.equal(0);
      expect(fs.existsSync(path.join(dir, DEV_CLOCK_FILE))).to.equal(false);
      first.clock.advance(3 * 86_400);
      first.persist(first.clock.offsetS());
      const file = path.join(dir, DEV_CLOCK_FILE);
      expect(JSON.parse(fs.readFileSync(file, "utf8"))).to.deep.equal({ offsetS: 259_200, offsetDays: 3 });
      expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
      expect(fs.readdirSync(dir)).to.deep.equal([DEV_CLOCK_FILE]);
      const again = openDevClock(dir);
      expect(again.clock.offsetS()).to.equal(259_200);
      expect(again.clock.now() - Math.floor(Date.now() / 1000)).to.be.within(259_199, 259_201);
    });

    it("refuses a file that is not whole days of offset, naming it and the fix", () => {
      for (const text of ["{", '{"offsetS": 3600}', '{"offsetS": -86400}', "null"]) {
        fs.writeFileSync(path.join(dir, DEV_CLOCK_FILE), text);
        expect(() => openDevClock(dir), text).to.throw(
          /dev-clock\.json: .*delete it to start the development clock again from the machine's/,
        );
      }
    });
  });

  describe("over HTTP", () => {
    let testDb: TestDb;
    let server: ApiServer;
    const base = createManualClock(T0);
    const clock = createOffsetClock(base);
    const persisted: number[] = [];
    const chainMoves: number[] = [];
    let firstAgent = "";
    const { call, ownerWithAgent } = apiClient(() => server.url);

    before(async () => {
      testDb = await createTestPgliteDb();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        logger: pino({ level: "silent" }),
        ownerRecomputeWorker: false,
        // The chain's part is the local chain's (src/cli/local-chain.ts), run by the quick start's test: here, where it is asked to go.
        devClock: { clock, persist: (offset) => void persisted.push(offset), moveChainTo: async (t) => void chainMoves.push(t) },
      });
      await server.scheduler.tick();
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    it("says where it stands; an agent claimed today has no daily score until its clock passes the next 00:00 UTC", async () => {
      expect((await call("GET", "/v1/dev/clock")).json).to.deep.equal({
        now: "2026-11-02T10:00:00Z",
        offsetDays: 0,
        nextDailyAt: "2026-11-03T00:00:00Z",
      });
      const { agent } = await ownerWithAgent();
      const history = (await call("GET", `/v1/agents/${agent.agentId}/scores`)).json;
      expect(history.scores).to.deep.equal([]);
      // Where no daily score exists yet, the answer says when the first comes.
      expect(history).to.include({
        firstDailyAt: "2026-11-03T00:00:00Z",
        message:
          `agent ${agent.agentId} has no daily score yet: ` +
          "the first is computed at 2026-11-03T00:00:00Z (the first 00:00 UTC after its claim, V9) and anchored on chain after it",
      });
      firstAgent = agent.agentId;
    });

    it("refuses a move without an operator token (401) or of days outside 1-60 (400), and moves nothing", async () => {
      expect((await call("POST", "/v1/dev/clock/advance", undefined, { days: 1 })).status).to.equal(401);
      for (const days of [0, 61, 1.5, "1"]) {
        const refused = await call("POST", "/v1/dev/clock/advance", OPERATOR_TOKEN, { days });
        expect(refused.status, String(days)).to.equal(400);
        expect(refused.json.error.message).to.match(/^body\.days: /);
      }
      expect([clock.offsetS(), persisted, chainMoves]).to.deep.equal([0, [], []]);
    });

    it("moves the clock and the chain by whole days, one at a time, running each day's daily recompute and tree, kept for a restart", async () => {
      const { owner, agent } = await ownerWithAgent();
      const keyed = await fetch(`${server.url}/v1/agents/${agent.agentId}/checkins`, {
        method: "POST",
        headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": crypto.randomUUID(), "content-type": "application/json" },
        body: "{}",
      });
      expect(keyed.status).to.equal(201);
      const moved = await call("POST", "/v1/dev/clock/advance", OPERATOR_TOKEN, { days: 2 });
      expect(moved.status).to.equal(200);
      // Two agents claimed by 2026-11-03 00:00 (the one above and the previous test's): two daily scores a day, no anchor writer here.
      expect(moved.json).to.deep.equal({
        now: "2026-11-04T10:00:00Z",
        offsetDays: 2,
        nextDailyAt: "2026-11-05T00:00:00Z",
        days: [
          { day: "2026-11-03", scores: 2, anchor: { status: "off" } },
          { day: "2026-11-04", scores: 2, anchor: { status: "off" } },
        ],
      });
      expect(persisted).to.deep.equal([86_400, 172_800]);
      expect(chainMoves).to.deep.equal([T0 + 86_400, T0 + 172_800]);
      const daily = (await call("GET", `/v1/agents/${agent.agentId}/scores`)).json.scores as Array<{
        id: number;
        day: string;
        trigger: string;
      }>;
      const firstHistory = (await call("GET", `/v1/agents/${firstAgent}/scores`)).json;
      expect(firstHistory.firstDailyAt).to.equal("2026-11-03T00:00:00Z");
      expect(firstHistory).to.not.have.property("message");
      expect(daily.map((s) => [s.day, s.trigger])).to.deep.equal([
        ["2026-11-03", "daily"],
        ["2026-11-04", "daily"],
      ]);
      // The day's tree is built; with no anchor writer its root is not mined, and no proof is served against it (issue #26).
      const proof = await call("GET", `/v1/scores/${daily[1].id}/proof`);
      expect(proof.status).to.equal(404);
      expect(proof.json.error.code).to.equal("proof_not_ready");
      expect(proof.json.error.message).to.match(/\(2026-11-04\) is not anchored yet: its root 0x[0-9a-f]{64} is not mined/);
      // What the service does from now on happens at its clock's time.
      const next = await fetch(`${server.url}/v1/agents/${agent.agentId}/checkins`, {
        method: "POST",
        headers: { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": crypto.randomUUID(), "content-type": "application/json" },
        body: "{}",
      });
      expect(((await next.json()) as { arrival: string }).arrival).to.equal("2026-11-04T10:00:00Z");
      expect((await call("GET", "/v1/owners/me", owner.token)).status).to.equal(200);
    });

    it("publishes the OpenAPI document apiDocument() builds in-process from the route declarations (the SDK's types, npm run gen:api-types)", async () => {
      expect((await call("GET", "/v1/openapi.json")).json).to.deep.equal(apiDocument());
    });

    it("is not served without a development clock: the routes of vrai serve have none", async () => {
      const plain = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: pino({ level: "silent" }) });
      try {
        expect((await fetch(`${plain.url}/v1/dev/clock`)).status).to.equal(404);
        expect(plain.devClock).to.equal(undefined);
        const openApi = (await (await fetch(`${plain.url}/v1/openapi.json`)).json()) as { paths: Record<string, unknown> };
        expect(Object.keys(openApi.paths).filter((p) => p.startsWith("/v1/dev/"))).to.deep.equal([]);
      } finally {
        await plain.close();
      }
    });
  });
});
