import { expect } from "chai";
import { CURRENT_METHOD, type DayAggregate, type MethodVersion } from "../method";
import { createVraiService } from "../service";
import { createManualClock } from "../service/clock";
import type { AgentFactRows, AgentRow } from "../service/ports";
import { addDailyScores } from "../service/score-rows";
import { buildScoreInputs, scoreFromInputs } from "../method";
import { createSqlScoreBatch, factRowsFromMessage, scoreBatchMessage } from "../store/scores";
import { createSqlStore } from "../store/sql-store";
import { createMigratedTestDb, createTestPgliteDb } from "../test-helpers/db";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { PROJECT_ROOT } from "../project-root";
import { createScoreWorkers, type ScoreJob, type ScoreJobAnswer, workerScript } from "./score-workers";
import { factRowsMessage } from "../store/scores";

const DAY = "2026-10-05";
const MIDNIGHT = Date.UTC(2026, 9, 5) / 1000;

/** Day `k` days before DAY. */
const dayBefore = (k: number) => new Date((MIDNIGHT - k * 86_400) * 1000).toISOString().slice(0, 10);

/**
 * `n` agents' fact rows of varied shapes: days of check-ins (as text, as `dailyFactRows` reads them, for even agents;
 * as objects for odd ones), proofs, penalties active and revoked, a check-in at the scored midnight.
 */
function factRows(n: number): AgentFactRows[] {
  const rows: AgentFactRows[] = [];
  for (let i = 0; i < n; i++) {
    const agent: AgentRow = {
      id: `agt_w${String(i).padStart(4, "0")}`,
      name: null,
      ownerId: `own_${i % 7}`,
      claimId: i + 1,
      claimedAt: MIDNIGHT - (40 - (i % 35)) * 86_400,
      keyHash: "h",
      last: null,
      lateDeadline: null,
      releasedAt: null,
      createdAt: MIDNIGHT - 50 * 86_400,
    };
    const days: DayAggregate[] = [];
    for (let k = 1 + (i % 3); k <= i % 31; k++) {
      const checkins = (i + k) % 25;
      days.push({
        day: dayBefore(k),
        checkins,
        onTime: checkins,
        creditS: 2400 * checkins,
        coverageS: Math.min(86_400, 3600 * checkins),
        digest: checkins > 0 ? ((i * 31 + k) % 256).toString(16).padStart(2, "0").repeat(32) : "",
      });
    }
    days.reverse();
    const plain = {
      agent,
      // Days before the window with check-ins, counted by the store (or not given: all are listed).
      earlierCheckinDays: i % 4 === 3 ? undefined : i % 3,
      atMidnight: i % 5 === 0 ? 1 : 0,
      proofs: i % 4 === 0 ? [{ kind: "github" as const }, { kind: "wallet" as const }] : i % 4 === 1 ? [{ kind: "domain" as const }] : [],
      penalties:
        i % 6 === 0
          ? [
              {
                id: `pen_${i}a`,
                agentId: agent.id,
                code: "rate_abuse",
                points: 10,
                days: 30,
                addedAt: MIDNIGHT - 86_400,
                reason: "t",
                revokedAt: null,
                revokeReason: null,
                addedBy: "admin",
                revokedBy: null,
              },
              {
                id: `pen_${i}b`,
                agentId: agent.id,
                code: "rate_abuse",
                points: 5,
                days: 30,
                addedAt: MIDNIGHT - 2 * 86_400,
                reason: "t",
                revokedAt: MIDNIGHT - 86_400,
                revokeReason: "appeal",
                addedBy: "admin",
                revokedBy: "admin",
              },
            ]
          : [],
    } as Omit<AgentFactRows, "days">;
    const text = days.map((d) => [d.day, d.checkins, d.onTime, d.creditS, d.coverageS, d.digest].join(",")).join(";");
    rows.push(i % 2 === 0 ? factRowsFromMessage([{ ...plain, daysText: days.length > 0 ? text : null }])[0] : { ...plain, days });
  }
  return rows;
}

const onThisThread = (rows: readonly AgentFactRows[], method: MethodVersion = CURRENT_METHOD) => {
  const batch = createSqlScoreBatch();
  addDailyScores(rows, MIDNIGHT, method, batch);
  return scoreBatchMessage(batch);
};

describe("the daily recompute's pages scored on a worker thread (issue #30)", () => {
  it("score a page exactly as the calling thread does: the same insert parameters, byte for byte, in the same order", async () => {
    const rows = factRows(300);
    const workers = createScoreWorkers(CURRENT_METHOD);
    try {
      const [first, second] = await Promise.all([workers.score(rows.slice(0, 250), MIDNIGHT), workers.score(rows.slice(250), MIDNIGHT)]);
      expect([first.size, second.size]).to.deep.equal([250, 50]);
      expect(scoreBatchMessage(first)).to.deep.equal(onThisThread(rows.slice(0, 250)));
      expect(scoreBatchMessage(second)).to.deep.equal(onThisThread(rows.slice(250)));
      // The rows reach what they are meant to: proofs, penalties, days and the midnight check-in make different totals.
      expect(new Set(scoreBatchMessage(first).scores.map((s) => s.total)).size).to.be.greaterThan(5);
    } finally {
      await workers.close();
    }
  });

  it("fail a page with the error scoring it threw, its code kept, and score the next page", async () => {
    const workers = createScoreWorkers("9.9" as MethodVersion);
    try {
      const failed = await workers.score(factRows(3), MIDNIGHT).then(
        () => null,
        (e: unknown) => e,
      );
      expect(failed).to.include({ code: "unknown_method" });
      expect(String((failed as Error).message)).to.match(/9\.9/);
    } finally {
      await workers.close();
    }
    const good = createScoreWorkers(CURRENT_METHOD);
    try {
      expect((await good.score(factRows(2), MIDNIGHT)).size).to.equal(2);
    } finally {
      await good.close();
    }
  });

  it("fail the pages a closed worker held, and start another for a page asked for afterwards", async () => {
    const workers = createScoreWorkers(CURRENT_METHOD);
    const held = workers.score(factRows(400), MIDNIGHT).then(
      () => null,
      (e: unknown) => e,
    );
    await workers.close();
    expect(await held).to.include({ code: "score_worker_exited" });
    try {
      const batch = await workers.score(factRows(4), MIDNIGHT);
      expect(scoreBatchMessage(batch)).to.deep.equal(onThisThread(factRows(4)));
    } finally {
      await workers.close();
    }
  });

  it("store, through a recompute on PGlite, the scores of each agent's facts read one by one (V9)", async () => {
    const testDb = await createMigratedTestDb(createTestPgliteDb);
    try {
      const store = createSqlStore(testDb.db);
      const clock = createManualClock(MIDNIGHT - 2 * 86_400);
      const service = createVraiService({ store, clock, busy: () => false });
      const { ownerId } = await service.accounts.createOwner();
      const agents: string[] = [];
      for (let i = 0; i < 6; i++) agents.push((await service.accounts.claimNewAgent(ownerId)).agentId);
      for (let t = MIDNIGHT - 86_400; t < MIDNIGHT; t += 4 * 3600) {
        clock.set(t);
        for (const agentId of agents.slice(0, 3)) await service.checkins.checkIn(agentId, `k${t}`, () => undefined);
      }
      clock.set(MIDNIGHT - 600);
      await service.operator.addPenalty({ id: "pen_w", agentId: agents[5], code: "rate_abuse", points: 10, days: 30, reason: "t" });
      clock.set(MIDNIGHT + 60);
      const pages: number[] = [];
      const threaded = createVraiService({
        store,
        clock,
        busy: () => false,
        pageScorers: (method) => {
          const workers = createScoreWorkers(method, { minRows: 1 });
          return {
            ...workers,
            score(rows, at) {
              pages.push(rows.length);
              return workers.score(rows, at);
            },
          };
        },
      });
      expect(await threaded.scoring.recomputeDay(DAY)).to.equal(agents.length);
      expect(pages.reduce((a, b) => a + b, 0)).to.equal(agents.length);
      const daily = (await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily");
      expect(daily).to.have.length(agents.length);
      for (const s of daily) {
        const one = await store.transaction(async (tx) =>
          scoreFromInputs(buildScoreInputs(await service.scoring.factsAt(tx, (await tx.getAgent(s.agentId))!, MIDNIGHT))),
        );
        expect([s.agentId, s.sha256, s.inputs]).to.deep.equal([s.agentId, one.sha256, one.canonical]);
      }
      expect(new Set(daily.map((s) => s.total)).size).to.be.greaterThan(1);
    } finally {
      await testDb.drop();
    }
  });

  it("run from the bundle's own worker script once built (dist/score-worker.cjs, npm run build), with the same answers", async () => {
    const dist = path.join(PROJECT_ROOT, "dist");
    const script = workerScript(dist);
    expect(script, "dist/score-worker.cjs is missing: npm run build makes it").to.deep.equal({
      file: path.join(dist, "score-worker.cjs"),
      execArgv: [],
    });
    // Beside the sources there is no built script: the TypeScript, through tsx.
    expect(workerScript(__dirname).file).to.equal(path.join(__dirname, "score-worker.ts"));
    const worker = new Worker(script.file);
    try {
      const rows = factRows(30);
      const job: ScoreJob = { id: 7, at: MIDNIGHT, method: CURRENT_METHOD, rows: factRowsMessage(rows) };
      const answer = await new Promise<ScoreJobAnswer>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
        worker.postMessage(job);
      });
      expect(answer).to.deep.equal({ id: 7, scores: onThisThread(rows) });
    } finally {
      await worker.terminate();
    }
  });
});
