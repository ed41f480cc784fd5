import { expect } from "chai";
import { dayName, dayStart, firstDailyAt, parseRfc3339, toRfc3339, utcDay, windowDays } from "./time";

describe("time (V1)", () => {
  it("names the UTC day of an instant, the last second of a day included", () => {
    expect(utcDay(0)).to.equal("1970-01-01");
    expect(utcDay(86_399)).to.equal("1970-01-01");
    expect(utcDay(86_400)).to.equal("1970-01-02");
    expect(utcDay(parseRfc3339("2026-10-24T23:59:59Z"))).to.equal("2026-10-24");
  });

  it("round-trips RFC 3339 UTC times with whole seconds", () => {
    const t = parseRfc3339("2026-02-28T12:34:56Z");
    expect(toRfc3339(t)).to.equal("2026-02-28T12:34:56Z");
    expect(dayStart("2026-02-28")).to.equal(parseRfc3339("2026-02-28T00:00:00Z"));
  });

  for (const bad of [
    "2026-02-30T00:00:00Z",
    "2026-10-24T00:00:00+00:00",
    "2026-10-24T00:00:00.5Z",
    "2026-10-24 00:00:00Z",
    "2026-10-24T24:00:00Z",
  ]) {
    it(`rejects ${bad} as a V1 time`, () => {
      expect(() => parseRfc3339(bad))
        .to.throw(/invalid|expected|not a valid/)
        .with.property("code", "invalid_time");
    });
  }

  it("makes the window the 30 complete days before the day of at, oldest first", () => {
    const days = windowDays(parseRfc3339("2026-11-30T15:00:00Z"));
    expect(days).to.have.length(30);
    expect(days[0]).to.equal("2026-10-31");
    expect(days[29]).to.equal("2026-11-29");
  });

  it("gives the daily recompute at D 00:00:00 the same window as any instant of D", () => {
    expect(windowDays(parseRfc3339("2026-11-30T00:00:00Z"))).to.deep.equal(windowDays(parseRfc3339("2026-11-30T23:59:59Z")));
  });
});

describe("day names by calendar arithmetic (V1)", () => {
  it("agrees with Date on every day from 1900 to 2200", () => {
    const wrong: number[] = [];
    for (let d = -25_567; d < 84_000; d++) if (dayName(d) !== new Date(d * 86_400_000).toISOString().slice(0, 10)) wrong.push(d);
    expect(wrong).to.deep.equal([]);
  });
});

describe("firstDailyAt (V9)", () => {
  it("is the first 00:00 UTC at or after the claim", () => {
    const midnight = Date.UTC(2026, 10, 3) / 1000;
    expect(firstDailyAt(midnight - 1)).to.equal(midnight);
    expect(firstDailyAt(midnight - 86_399)).to.equal(midnight);
    expect(firstDailyAt(midnight)).to.equal(midnight);
    expect(firstDailyAt(midnight + 1)).to.equal(midnight + 86_400);
  });
});

describe("time errors (V1)", () => {
  it("rejects an instant that is not whole seconds, and a day that is not YYYY-MM-DD or not on the calendar", () => {
    expect(() => utcDay(1.5))
      .to.throw("time: expected whole Unix seconds, got 1.5")
      .with.property("code", "invalid_time");
    expect(() => toRfc3339(Number.NaN)).to.throw("time: expected whole Unix seconds, got NaN");
    expect(() => dayStart("2026-1-05"))
      .to.throw('expected a day YYYY-MM-DD, got "2026-1-05"')
      .with.property("code", "invalid_day");
    expect(() => dayStart("2026-02-30"))
      .to.throw("not a calendar day: 2026-02-30")
      .with.property("code", "invalid_day");
  });

  it("writes a year before 1000 with four digits", () => {
    const day = Date.UTC(999, 0, 1) / 86_400_000;
    expect(dayName(day)).to.equal("0999-01-01");
  });
});

describe("parsing V1 times: only strings", () => {
  it("rejects a value that is not a string as not of the form, whatever it prints as", () => {
    for (const value of [["1970-01-02T00:00:00Z"], 86_400, null]) {
      expect(() => parseRfc3339(value as never))
        .to.throw(`expected YYYY-MM-DDTHH:MM:SSZ, got ${JSON.stringify(value)}`)
        .with.property("code", "invalid_time");
    }
  });
});

describe("the V1 forms, whole strings only", () => {
  it("rejects a time or a day with anything before or after its form as not of the form", () => {
    for (const s of ["x2026-10-24T00:00:00Z", "2026-10-24T00:00:00Zx", "2026-10-24T00:00:00Z\n", "12026-10-24T00:00:00Z"]) {
      expect(() => parseRfc3339(s), s)
        .to.throw(`expected YYYY-MM-DDTHH:MM:SSZ, got ${JSON.stringify(s)}`)
        .with.property("code", "invalid_time");
    }
    for (const day of ["x2026-02-28", "2026-02-28x", "2026-02-28T00:00:00Z", "12026-02-28"]) {
      expect(() => dayStart(day), day)
        .to.throw(`expected a day YYYY-MM-DD, got ${JSON.stringify(day)}`)
        .with.property("code", "invalid_day");
    }
  });

  it("writes every hour, minute and second with two digits, 10 included", () => {
    for (const s of ["2026-10-10T10:10:10Z", "2026-01-09T09:09:09Z", "2026-12-31T23:59:59Z", "2026-11-01T00:00:00Z"]) {
      expect(toRfc3339(parseRfc3339(s))).to.equal(s);
    }
  });
});
