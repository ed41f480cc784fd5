/**
 * The service held to the check-in rules over random timelines (V3–V10, F2): the same timeline played through
 * the real check-in, outage and scoring services, on the memory store and on PGlite, answers what the pure
 * rules answer (src/method/play.test.ts holds their properties) and stores a score that recomputes from its
 * inputs byte for byte.
 */
import { expect } from "chai";
import fc from "fast-check";
import { buildScoreInputs, scoreFromInputs, validateScoreInputs, type MethodVersion } from "../method/score";
import { DAY_S } from "../method/time";
import { createVraiService } from ".";
import type { CheckinOutcome } from "./checkins";
import { createManualClock } from "./clock";
import type { Store } from "./ports";
import { createSqlStore } from "../store/sql-store";
import { createMemoryStore } from "../store/memory-store";
import { createMigratedTestDb, createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { modelTimeline, rejectionCode, shiftTimeline, timelineArb, type Timeline, type TimelineAnswer } from "../test-helpers/timelines";

/** What an answer says, as F2 prints it: a check-in's result and figures, or an operator event's acceptance. */
function said(answer: TimelineAnswer | CheckinOutcome): unknown {
  if (answer.type === "counted" || answer.type === "duplicate") {
    const c = answer.type === "duplicate" ? answer.original : answer;
    return {
      result: answer.type,
      arrival: c.arrival,
      nextHeartbeatS: c.nextHeartbeatS,
      onTime: c.onTime,
      excused: c.excused,
      credit: c.credit,
    };
  }
  if (answer.type === "refused") return { result: "refused", retryAfterS: answer.retryAfterS };
  return answer;
}

/** A store to play timelines on, one after the other, and how to close it. */
type StoreUnderTest = { name: string; runs: number; open(): Promise<{ store: Store; close(): Promise<void> }> };

const STORES: readonly StoreUnderTest[] = [
  { name: "the memory store of vrai replay", runs: 100, open: async () => ({ store: createMemoryStore(), close: async () => undefined }) },
  {
    name: "PGlite",
    runs: 15,
    async open() {
      const testDb: TestDb = await createMigratedTestDb(createTestPgliteDb);
      return { store: createSqlStore(testDb.db), close: () => testDb.drop() };
    },
  },
];

/** Timelines played on one store start this far apart: a run's windows are closed before the next begins, and never touch it. */
const RUN_SPACING_S = 60 * DAY_S;

/**
 * Plays `timeline` through the service on `store` (claim, check-ins, busy, outages), then scores the agent at
 * `timeline.end`; windows left open are closed afterwards so that later timelines on the store do not see them.
 */
async function playOnService(store: Store, timeline: Timeline, method: MethodVersion, agentId: string) {
  const clock = createManualClock(timeline.claimedAt);
  let busy = false;
  const service = createVraiService({ store, clock, busy: () => busy, method });
  const { ownerId } = await service.accounts.createOwner();
  await service.accounts.claimNewAgent(ownerId, { agentId });
  const answers: Array<TimelineAnswer | CheckinOutcome> = [];
  const open = new Set<string>();
  for (const e of timeline.events) {
    clock.set(e.at);
    try {
      if (e.type === "checkin") answers.push(await service.checkins.checkIn(agentId, e.key, () => undefined));
      else if (e.type === "busy") {
        busy = e.on;
        answers.push({ type: "ok" });
      } else if (e.type === "outage") {
        await service.operator.declareOutage({ id: e.id, start: e.start, end: e.end, reason: "property test" });
        if (e.end === null) open.add(e.id);
        answers.push({ type: "ok" });
      } else {
        await service.operator.closeOutage(e.id, e.end);
        open.delete(e.id);
        answers.push({ type: "ok" });
      }
    } catch (error) {
      answers.push({ type: "rejected", code: rejectionCode(error) });
    }
  }
  clock.set(timeline.end);
  const score = await service.scoring.scoreNow(agentId);
  const stored = await store.read.getScore(score.id);
  for (const id of open) await service.operator.closeOutage(id, timeline.end);
  return { answers, score, stored };
}

for (const setup of STORES) {
  describe(`the service on ${setup.name}, held to the rules over random timelines (V3–V10, F2, properties)`, () => {
    let store: Store;
    let close: () => Promise<void>;
    // A new PGlite and its migrations take seconds, far more on a busy machine: the hook's bound, not a test's.
    before(async function () {
      this.timeout(120_000);
      ({ store, close } = await setup.open());
    });
    after(() => close());

    it("answers every event as the rules do, and stores the score the rules compute, which recomputes from its stored inputs byte for byte (V9)", async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(timelineArb({ maxEvents: 30 }), fc.constantFrom<MethodVersion>("0.2", "0.1"), async (generated, method) => {
          run++;
          const timeline = shiftTimeline(generated, run * RUN_SPACING_S, `run${run}-`);
          const agentId = `agt_property_${run}`;
          const model = modelTimeline(timeline);
          const { answers, score, stored } = await playOnService(store, timeline, method, agentId);
          expect(answers.map(said)).to.deep.equal(model.answers.map(said));

          const expected = scoreFromInputs(
            buildScoreInputs({
              agent: agentId,
              method,
              at: timeline.end,
              claimedAt: timeline.claimedAt,
              proofs: [],
              penalties: [],
              days: model.days,
            }),
          );
          expect(score.inputs).to.equal(expected.canonical);
          expect(score.sha256).to.equal(expected.sha256);
          expect(JSON.stringify(score.result)).to.equal(JSON.stringify(expected.result));

          // V9: the stored inputs, read back, are enough to recompute the stored result, byte for byte.
          expect(stored, "the score is stored").to.not.equal(null);
          const recomputed = scoreFromInputs(validateScoreInputs(JSON.parse(stored!.inputs)));
          expect(recomputed.canonical).to.equal(stored!.inputs);
          expect(recomputed.sha256).to.equal(stored!.sha256);
          expect(JSON.stringify(recomputed.result)).to.equal(JSON.stringify(stored!.result));
        }),
        { numRuns: setup.runs, seed: 3010 },
      );
    });
  });
}
