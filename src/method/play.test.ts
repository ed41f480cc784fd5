/**
 * Properties of the check-in rules (V3–V5, V10) over random timelines, and the service held to them: the
 * same timeline played through the real check-in, outage and scoring services, on the memory store and on
 * PGlite, answers what the pure rules answer and stores a score that recomputes from its inputs byte for byte.
 */
import { expect } from "chai";
import fc from "fast-check";
import { MIN_INTERVAL_S, decideCheckin, deadlineOf, type CheckinDecision, type CountedCheckin } from "./checkin";
import { buildScoreInputs, scoreFromInputs, validateScoreInputs, type MethodVersion } from "./score";
import { DAY_S } from "./time";
import { createVraiService } from "../service";
import type { CheckinOutcome } from "../service/checkins";
import { createManualClock } from "../service/clock";
import type { Store } from "../service/ports";
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

describe("check-in rules over random timelines (V3–V5, V10, properties)", () => {
  it("counts check-ins at least 1,200 s apart, refuses the rest saying when to come back, and credits only the time since the previous (V3.2, V3.5)", () => {
    fc.assert(
      fc.property(timelineArb(), (timeline) => {
        const { answers, counted } = modelTimeline(timeline);
        let previous: { arrival: number } | null = null;
        timeline.events.forEach((e, i) => {
          const a = answers[i] as CheckinDecision;
          if (e.type !== "checkin" || a.type === "duplicate") return;
          if (a.type === "refused") {
            expect(previous, "the first check-in after a claim is never refused (V3.4)").to.not.equal(null);
            expect(a.retryAfterS).to.equal(MIN_INTERVAL_S - (e.at - previous!.arrival));
            expect(a.retryAfterS).to.be.within(1, MIN_INTERVAL_S);
            return;
          }
          if (previous === null) expect(a).to.include({ onTime: null, excused: false, credit: 0 });
          else {
            expect(e.at - previous.arrival).to.be.at.least(MIN_INTERVAL_S);
            expect(a.credit).to.equal(a.onTime ? e.at - previous.arrival : 0);
          }
          previous = a;
        });
        expect(counted.map((c) => c.arrival)).to.deep.equal(
          answers.filter((a): a is Extract<CheckinDecision, { type: "counted" }> => a.type === "counted").map((c) => c.arrival),
        );
      }),
      { numRuns: 300, seed: 3001 },
    );
  });

  it("answers a repeated key with the check-in it names, changing nothing, and judges a key of a refused request afresh (V3.1)", () => {
    fc.assert(
      fc.property(timelineArb(), (timeline) => {
        const { answers } = modelTimeline(timeline);
        const countedByKey = new Map<string, CountedCheckin>();
        timeline.events.forEach((e, i) => {
          if (e.type !== "checkin") return;
          const a = answers[i] as CheckinDecision;
          const original = countedByKey.get(e.key);
          if (original === undefined) expect(a.type).to.not.equal("duplicate");
          else expect(a).to.deep.equal({ type: "duplicate", original });
          if (a.type === "counted") {
            const { type: _counted, ...checkin } = a;
            countedByKey.set(e.key, checkin);
          }
        });
        // Without its duplicates the timeline counts the same check-ins.
        const withoutDuplicates = timeline.events.filter((_, i) => answers[i].type !== "duplicate");
        expect(modelTimeline({ ...timeline, events: withoutDuplicates }).counted).to.deep.equal(modelTimeline(timeline).counted);
      }),
      { numRuns: 200, seed: 3002 },
    );
  });

  it("keeps the day aggregates equal to the check-ins: counts, credits, coverage summing to the on-time intervals, at most a day's (V5, V10)", () => {
    fc.assert(
      fc.property(timelineArb(), (timeline) => {
        const { counted, days } = modelTimeline(timeline);
        const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
        expect(sum(days.map((d) => d.checkins))).to.equal(counted.length);
        expect(sum(days.map((d) => d.onTime))).to.equal(counted.filter((c) => c.onTime === true).length);
        expect(sum(days.map((d) => d.creditS))).to.equal(sum(counted.map((c) => c.credit)));
        // An on-time or excused check-in's credit is its interval (p, c], which is what coverage spreads over the days.
        expect(sum(days.map((d) => d.coverageS))).to.equal(sum(counted.map((c) => c.credit)));
        for (const d of days) expect(d.coverageS).to.be.within(0, DAY_S);
        expect(days.map((d) => d.day)).to.deep.equal([...new Set(days.map((d) => d.day))].sort());
      }),
      { numRuns: 300, seed: 3003 },
    );
  });

  it("never makes a check-in late by arriving earlier, nor by declaring an outage: windows only excuse (V3.5, V4.3)", () => {
    const previousArb = fc.record({ arrival: fc.integer({ min: 0, max: 10 * DAY_S }), nextHeartbeatS: fc.constantFrom(3600, 7200) });
    fc.assert(
      fc.property(previousArb, fc.integer({ min: MIN_INTERVAL_S, max: 5 * 3600 }), fc.nat(5 * 3600), (previous, late, earlier) => {
        const decide = (arrival: number) =>
          decideCheckin({ arrival, previous: { ...previous }, duplicateOf: null, windows: [], busy: false }) as Extract<
            CheckinDecision,
            { type: "counted" }
          >;
        const at = decide(previous.arrival + late);
        const before = decide(previous.arrival + Math.max(MIN_INTERVAL_S, late - earlier));
        expect(at.onTime).to.equal(previous.arrival + late <= deadlineOf(previous));
        if (at.onTime) expect(before.onTime).to.equal(true);
      }),
      { numRuns: 500, seed: 3004 },
    );
    fc.assert(
      fc.property(timelineArb(), (timeline) => {
        const withWindows = modelTimeline(timeline);
        const without = modelTimeline({ ...timeline, events: timeline.events.filter((e) => e.type === "checkin" || e.type === "busy") });
        // Windows change no decision to count or refuse; they only turn late check-ins excused, with their credit.
        expect(without.counted.map((c) => c.arrival)).to.deep.equal(withWindows.counted.map((c) => c.arrival));
        withWindows.counted.forEach((c, i) => {
          const plain = without.counted[i];
          if (plain.onTime === true) expect(c.onTime).to.equal(true);
          expect(c.credit).to.be.at.least(plain.credit);
          if (c.excused) expect(c.onTime).to.equal(true);
        });
      }),
      { numRuns: 200, seed: 3005 },
    );
  });
});

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
