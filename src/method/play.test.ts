/**
 * Properties of the check-in rules (V3–V5, V10) over random timelines. The service is held to the same
 * timelines in src/service/timelines.test.ts.
 */
import { expect } from "chai";
import fc from "fast-check";
import { MIN_INTERVAL_S, decideCheckin, deadlineOf, type CheckinDecision, type CountedCheckin } from "./checkin";
import { nextDayDigest } from "./days";
import { playCheckins } from "./play";
import { DAY_S, dayStart } from "./time";
import { modelTimeline, timelineArb } from "../test-helpers/timelines";

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

const T0 = dayStart("2026-11-02") + 22 * 3600;

describe("playing one agent's check-ins through the rules (V3, V10)", () => {
  it("answers a repeated key with its original, refuses under 1,200 s, and counts only what was counted", () => {
    const { decisions, counted } = playCheckins([
      { arrival: T0, key: "a" },
      { arrival: T0 + 600, key: "b" },
      { arrival: T0 + 700, key: "a" },
      { arrival: T0 + 3600 },
      { arrival: T0 + 3700, key: "b" },
    ]);
    expect(decisions.map((d) => d.type)).to.deep.equal(["counted", "refused", "duplicate", "counted", "refused"]);
    expect(decisions[2]).to.deep.equal({ type: "duplicate", original: counted[0] });
    // A request without a key is never anyone's duplicate.
    expect(counted.map((c) => c.arrival)).to.deep.equal([T0, T0 + 3600]);
    expect(counted[0]).to.deep.equal({ arrival: T0, nextHeartbeatS: 3600, onTime: null, excused: false, credit: 0 });
  });

  it("gives 7,200 s to a check-in while busy, 3,600 s otherwise (V3.3)", () => {
    const { counted } = playCheckins([{ arrival: T0, busy: true }, { arrival: T0 + 7800 }, { arrival: T0 + 9000, busy: false }]);
    expect(counted.map((c) => [c.nextHeartbeatS, c.onTime, c.credit])).to.deep.equal([
      [7200, null, 0],
      [3600, true, 7800],
      [3600, true, 1200],
    ]);
  });

  it("returns the days oldest first, each chained from its own first check-in (V10)", () => {
    const { days, counted } = playCheckins([{ arrival: T0 }, { arrival: T0 + 3600 }, { arrival: T0 + 7200 }]);
    expect(days.map((d) => [d.day, d.checkins, d.coverageS])).to.deep.equal([
      ["2026-11-02", 2, 7200],
      // An arrival exactly at midnight: its interval ends the day before.
      ["2026-11-03", 1, 0],
    ]);
    expect(days[0].digest).to.equal(nextDayDigest(nextDayDigest(null, counted[0]), counted[1]));
    expect(days[1].digest).to.equal(nextDayDigest(null, counted[2]));
  });
});
