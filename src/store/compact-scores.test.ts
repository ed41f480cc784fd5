import { expect } from "chai";
import { DAY_S, utcDay } from "../method";
import { createVraiService } from "../service";
import { verifyStoredScores } from "../service/audit-scores";
import { createManualClock } from "../service/clock";
import type { AgentRow } from "../service/ports";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { createSqlStore } from "./sql-store";

const T0 = Date.UTC(2026, 10, 1) / 1000; // 2026-11-01T00:00:00Z
const H = 3600;

function authenticate(agent: AgentRow | null): asserts agent is AgentRow {
  if (!agent) throw new Error("no such agent");
}

/**
 * Migration 010: scores written by the service keep the compact form of their inputs and no result,
 * and every read rebuilds both exactly, also after the facts they were computed from moved on: a day's
 * coverage growing after midnight (V10), an excused check-in reaching back over an outage (V4), a new
 * claim (V2), a penalty (V7).
 */
for (const { name, create } of TEST_STORES) {
  describe(`compact stored scores on ${name} (migration 010, V9)`, function () {
    this.timeout(120_000);
    let testDb: TestDb;
    const clock = createManualClock(T0);
    const written = new Map<number, { inputs: string; resultJson: string }>();

    before(async () => {
      testDb = await createMigratedTestDb(create);
      const store = createSqlStore(testDb.db);
      const service = createVraiService({ store, clock, busy: () => false });
      clock.set(T0 + 10 * H);
      const { ownerId } = await service.accounts.createOwner();
      const steady = (await service.accounts.claimNewAgent(ownerId)).agentId;
      const silent = (await service.accounts.claimNewAgent(ownerId)).agentId;
      let key = 0;
      const checkIn = async (agentId: string) =>
        expect((await service.checkins.checkIn(agentId, `k${++key}`, authenticate)).type).to.equal("counted");
      const remember = (score: { id: number; inputs: string; result: unknown }) =>
        written.set(score.id, { inputs: score.inputs, resultJson: JSON.stringify(score.result) });
      const daily = async (day: string) => {
        await service.scoring.recomputeDay(day);
        for (const agentId of [steady, silent]) remember((await store.read.latestScore(agentId))!);
      };
      // `steady` checks in every hour (the first of each day at 00:40, reaching back into the day before
      // after that day's score was stored); `silent` stops after day 2, an outage covers its silence, and
      // its excused check-in on day 5 reaches back over days that earlier scores listed.
      for (let t = T0 + 11 * H; t < T0 + 7 * DAY_S; t += H) {
        const hourOfDay = (t - T0) % DAY_S;
        if (hourOfDay === 0) {
          clock.set(t);
          await daily(utcDay(t));
          clock.set(t + 40 * 60);
        } else clock.set(t);
        if (hourOfDay !== 0) await checkIn(steady);
        if (t < T0 + 2 * DAY_S + 5 * H) await checkIn(silent);
        if (t === T0 + 2 * DAY_S + 5 * H) {
          await service.operator.declareOutage({ start: t - H, end: t + 3 * DAY_S, reason: "maintenance" });
        }
        if (t === T0 + 5 * DAY_S + 5 * H) await checkIn(silent);
        if (t === T0 + 4 * DAY_S + 12 * H) {
          remember(await service.scoring.scoreNow(steady));
          await service.operator.addPenalty({ agentId: steady, code: "rate_abuse", points: 20, days: 30, reason: "test" });
          remember((await store.read.latestScore(steady))!);
          await service.accounts.reclaim(ownerId, steady);
          remember((await store.read.latestScore(steady))!);
        }
      }
      clock.set(T0 + 7 * DAY_S);
      await daily(utcDay(T0 + 7 * DAY_S));
    });
    after(() => testDb.drop());

    it("keeps every score the service wrote in the compact form, a few hundred bytes each, with no result", async () => {
      const { rows } = await testDb.db.query<{ n: number; legacy: number; max: number }>(
        `SELECT count(*)::int AS n,
           count(*) FILTER (WHERE facts IS NULL OR inputs IS NOT NULL OR result IS NOT NULL)::int AS legacy,
           max(octet_length(facts))::int AS max
         FROM scores`,
      );
      expect(rows[0].n).to.be.greaterThan(15);
      expect(rows[0].legacy).to.equal(0);
      expect(rows[0].max).to.be.below(400);
    });

    it("rebuilds each score's inputs and result byte for byte as they were written, and --verify finds nothing", async () => {
      const store = createSqlStore(testDb.db);
      expect(written.size).to.be.greaterThan(15);
      for (const [id, w] of written) {
        const read = (await store.read.getScore(id))!;
        expect(read.inputs, `score ${id}`).to.equal(w.inputs);
        expect(JSON.stringify(read.result), `score ${id}`).to.equal(w.resultJson);
      }
      const { checked, mismatches } = await verifyStoredScores(store);
      expect(mismatches).to.deep.equal([]);
      expect(checked).to.equal(Number((await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM scores")).rows[0].n));
    });

    it("serves the latest score's result text from the rebuilt inputs", async () => {
      const store = createSqlStore(testDb.db);
      const { rows } = await testDb.db.query<{ agent_id: string }>("SELECT DISTINCT agent_id FROM scores");
      for (const { agent_id: agentId } of rows) {
        const summary = (await store.latestScoreSummary(agentId)).score!;
        expect(summary.resultJson).to.equal(written.get(Number(summary.id))!.resultJson);
      }
    });

    it("refuses to serve a score whose settled day aggregate changed under it (its digest no longer matches)", async () => {
      const store = createSqlStore(testDb.db);
      const latest = (
        await testDb.db.query<{ id: number; agent_id: string; claim_id: number }>(
          "SELECT id, agent_id, claim_id FROM scores WHERE trigger = 'daily' ORDER BY id DESC LIMIT 1",
        )
      ).rows[0];
      await testDb.db.query(
        `UPDATE agent_days SET credit_s = credit_s + 1
         WHERE (agent_id, claim_id, day) =
           (SELECT agent_id, claim_id, day FROM agent_days WHERE agent_id = $1 AND claim_id = $2 AND checkins > 0 ORDER BY day LIMIT 1)`,
        [latest.agent_id, latest.claim_id],
      );
      let error: unknown;
      await store.read.getScore(Number(latest.id)).catch((e: unknown) => (error = e));
      expect(error).to.have.property("code", "score_inputs_mismatch");
      const { mismatches } = await verifyStoredScores(store);
      expect(mismatches.map((m) => m.id)).to.include(Number(latest.id));
      expect(mismatches.find((m) => m.id === Number(latest.id))!.problem).to.contain("digest differs");
    });
  });
}
