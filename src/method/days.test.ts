import { expect } from "chai";
import fc from "fast-check";
import {
  applyCheckinToDays,
  applyDayDeltas,
  checkinDayDeltas,
  coverageByDay,
  dayDigestPreimage,
  nextDayDigest,
  type DayAggregate,
} from "./days";
import { sha256Hex } from "./canonical";
import { parseRfc3339, utcDay } from "./time";
import type { CountedCheckin } from "./checkin";

const day2 = parseRfc3339("2026-11-02T00:00:00Z");

describe("day aggregates (V5, V10)", () => {
  it("splits coverage of (p, c] at UTC midnight", () => {
    expect(coverageByDay(day2 - 400, day2 + 600)).to.deep.equal([
      { day: "2026-11-01", seconds: 400 },
      { day: "2026-11-02", seconds: 600 },
    ]);
  });

  it("puts a check-in arriving exactly at midnight wholly in the day before", () => {
    expect(coverageByDay(day2 - 3600, day2)).to.deep.equal([{ day: "2026-11-01", seconds: 3600 }]);
  });

  it("spreads a long excused interval over every day it covers", () => {
    const parts = coverageByDay(day2 - 10, day2 + 2 * 86_400 + 10);
    expect(parts.map((p) => p.seconds)).to.deep.equal([10, 86_400, 86_400, 10]);
  });

  it("chains a day's digest over the exact documented bytes", () => {
    const c: CountedCheckin = { arrival: day2 + 5, nextHeartbeatS: 3600, onTime: null, excused: false, credit: 0 };
    const d1 = nextDayDigest(null, c);
    expect(dayDigestPreimage(null, c)).to.equal(`|${day2 + 5}|3600|null|false|0`);
    expect(d1).to.equal(sha256Hex(`|${day2 + 5}|3600|null|false|0`));
    const c2 = { arrival: day2 + 3605, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 3600 };
    expect(nextDayDigest(d1, c2)).to.equal(sha256Hex(`${d1}|${day2 + 3605}|3600|true|false|3600`));
  });

  it("hashes the documented bytes whatever the fields hold: digests, empty or null, odd numbers, non-ASCII (property)", () => {
    const prevArb = fc.oneof(
      fc.constant(null),
      fc.constant(""),
      fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 64, maxLength: 64 }),
      fc.string({ unit: "binary", maxLength: 300 }),
    );
    // Each number of digits at its edges (10^d - 1, 10^d, negated too), up to the largest safe integers.
    const digitEdges = Array.from({ length: 16 }, (_, d) => [10 ** d - 1, 10 ** d, 1 - 10 ** d, -(10 ** d)]).flat();
    const numberArb = fc.oneof(
      fc.integer(),
      fc.maxSafeInteger(),
      fc.maxSafeNat(),
      fc.constant(-0),
      fc.double(),
      fc.constantFrom(...digitEdges, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER),
    );
    const checkinArb = fc.record({
      arrival: numberArb,
      nextHeartbeatS: numberArb,
      onTime: fc.constantFrom(null, true, false),
      excused: fc.boolean(),
      credit: numberArb,
    });
    fc.assert(
      fc.property(prevArb, checkinArb, (prev, c) => {
        expect(nextDayDigest(prev, c)).to.equal(sha256Hex(dayDigestPreimage(prev === "" ? null : prev, c)));
      }),
      { numRuns: 2000 },
    );
  });

  it("gives each day the coverage coverageByDay gives it, the day of arrival last, at midnight too (property)", () => {
    const arrivalArb = fc.integer({ min: day2, max: day2 + 5 * 86_400 });
    fc.assert(
      fc.property(arrivalArb, fc.integer({ min: 1, max: 4 * 86_400 }), fc.boolean(), (arrival, elapsed, atMidnight) => {
        const at = atMidnight ? arrival - (arrival % 86_400) : arrival;
        const c = { arrival: at, nextHeartbeatS: 3600, onTime: true, excused: false, credit: elapsed };
        const deltas = checkinDayDeltas(c, at - elapsed, "");
        const arrivalDay = deltas[deltas.length - 1];
        expect(arrivalDay).to.include({ day: utcDay(at), checkins: 1 });
        const covered = new Map(coverageByDay(at - elapsed, at).map((p) => [p.day, p.seconds]));
        expect(deltas.filter((d) => d.coverageS > 0).map((d) => [d.day, d.coverageS])).to.deep.equal([...covered]);
        expect(deltas.slice(0, -1).every((d) => d.checkins === 0 && d.digest === null && covered.has(d.day))).to.equal(true);
      }),
      { numRuns: 500 },
    );
  });

  it("credits the day of arrival and covers the days the interval spans", () => {
    const days = new Map<string, DayAggregate>();
    const first = { arrival: day2 - 1000, nextHeartbeatS: 3600, onTime: null, excused: false, credit: 0 };
    applyCheckinToDays(days, first, null);
    const second = { arrival: day2 + 2000, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 3000 };
    const written = applyCheckinToDays(days, second, first.arrival);
    expect(written.map((d) => d.day)).to.deep.equal(["2026-11-01", "2026-11-02"]);
    expect(days.get("2026-11-01")).to.include({ checkins: 1, onTime: 0, creditS: 0, coverageS: 1000 });
    expect(days.get("2026-11-02")).to.include({ checkins: 1, onTime: 1, creditS: 3000, coverageS: 2000 });
  });

  it("gives a late check-in no coverage and no credit but counts it", () => {
    const days = new Map<string, DayAggregate>();
    applyCheckinToDays(days, { arrival: day2 + 9000, nextHeartbeatS: 3600, onTime: false, excused: false, credit: 0 }, day2);
    expect(days.get("2026-11-02")).to.include({ checkins: 1, onTime: 0, creditS: 0, coverageS: 0 });
  });

  it("expresses a check-in as deltas: coverage for the days before, everything else on the day of arrival", () => {
    const second = { arrival: day2 + 2000, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 3000 };
    const link = "cd".repeat(32);
    expect(checkinDayDeltas(second, day2 - 1000, link)).to.deep.equal([
      { day: "2026-11-01", checkins: 0, onTime: 0, creditS: 0, coverageS: 1000, digest: null },
      { day: "2026-11-02", checkins: 1, onTime: 1, creditS: 3000, coverageS: 2000, digest: nextDayDigest(link, second) },
    ]);
    // A late check-in: only its own day, no coverage; the chain starts afresh on a day with no link yet.
    const late = { arrival: day2 + 9000, nextHeartbeatS: 3600, onTime: false, excused: false, credit: 0 };
    expect(checkinDayDeltas(late, day2 - 1000, "")).to.deep.equal([
      { day: "2026-11-02", checkins: 1, onTime: 0, creditS: 0, coverageS: 0, digest: nextDayDigest(null, late) },
    ]);
  });

  it("adds deltas to what a day holds and keeps its digest when a delta carries none", () => {
    const days = new Map<string, DayAggregate>([
      ["2026-11-01", { day: "2026-11-01", checkins: 3, onTime: 2, creditS: 7200, coverageS: 5000, digest: "ef".repeat(32) }],
    ]);
    const written = applyDayDeltas(days, [
      { day: "2026-11-01", checkins: 0, onTime: 0, creditS: 0, coverageS: 100, digest: null },
      { day: "2026-11-02", checkins: 1, onTime: 1, creditS: 3600, coverageS: 50, digest: "12".repeat(32) },
    ]);
    expect(written).to.deep.equal([
      { day: "2026-11-01", checkins: 3, onTime: 2, creditS: 7200, coverageS: 5100, digest: "ef".repeat(32) },
      { day: "2026-11-02", checkins: 1, onTime: 1, creditS: 3600, coverageS: 50, digest: "12".repeat(32) },
    ]);
    expect(days.get("2026-11-01")!.coverageS).to.equal(5100);
  });
});

describe("day digest links, byte for byte (docs/inputs.md, 'Day digest')", () => {
  const c: CountedCheckin = { arrival: 1_793_613_600, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 3601 };
  it("hashes the preimage of the first link, and of a link after a digest", () => {
    expect(nextDayDigest(null, c)).to.equal(sha256Hex("|1793613600|3600|true|false|3601"));
    expect(nextDayDigest("", c)).to.equal(sha256Hex("|1793613600|3600|true|false|3601"));
    const prev = "f".repeat(64);
    expect(nextDayDigest(prev, { ...c, onTime: null, excused: true })).to.equal(sha256Hex(`${prev}|1793613600|3600|null|true|3601`));
  });

  it("hashes the UTF-8 text of a link whose parts are not short ASCII: a long or non-ASCII previous digest, a fraction", () => {
    for (const prev of ["é".repeat(3), "a".repeat(300)])
      expect(nextDayDigest(prev, c), prev).to.equal(sha256Hex(`${prev}|1793613600|3600|true|false|3601`));
    expect(nextDayDigest(null, { ...c, credit: 0.5 })).to.equal(sha256Hex("|1793613600|3600|true|false|0.5"));
  });
});

describe("coverage of an interval (V10): nothing outside (p, c]", () => {
  it("covers nothing for an empty or reversed interval", () => {
    expect(coverageByDay(day2 + 50, day2 + 50)).to.deep.equal([]);
    expect(coverageByDay(day2 + 50, day2 + 10)).to.deep.equal([]);
    expect(coverageByDay(day2 - 10, day2 - 86_400)).to.deep.equal([]);
  });

  it("gives no coverage to a check-in with no previous one since the claim: it closes no interval (V3.4, V10)", () => {
    const first = { arrival: day2 + 5000, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 0 };
    expect(checkinDayDeltas(first, null, "")).to.deep.equal([
      { day: "2026-11-02", checkins: 1, onTime: 1, creditS: 0, coverageS: 0, digest: nextDayDigest(null, first) },
    ]);
  });
});

describe("day digest links of every length (docs/inputs.md, 'Day digest')", () => {
  it("hashes the documented bytes whether the preimage fits 256 bytes, just fits, or just does not", () => {
    const c: CountedCheckin = { arrival: 1_793_613_600, nextHeartbeatS: 7200, onTime: false, excused: true, credit: 123_456_789 };
    for (let length = 200; length <= 300; length++) {
      const prev = "a".repeat(length);
      expect(nextDayDigest(prev, c), String(length)).to.equal(sha256Hex(`${prev}|1793613600|7200|false|true|123456789`));
    }
  });

  it("starts a day that only receives coverage with no digest (V10)", () => {
    const days = new Map<string, DayAggregate>();
    const [covered] = applyDayDeltas(days, [{ day: "2026-11-01", checkins: 0, onTime: 0, creditS: 0, coverageS: 600, digest: null }]);
    expect(covered).to.deep.equal({ day: "2026-11-01", checkins: 0, onTime: 0, creditS: 0, coverageS: 600, digest: "" });
  });
});
