import { expect } from "chai";
import fc from "fast-check";
import { dayName, parseRfc3339, toRfc3339 } from "../method";
import { daySchema, EARLIEST_INSTANT, instantSchema, INSTANT_LIMIT } from "./schemas";

const EARLIEST_S = parseRfc3339(EARLIEST_INSTANT);
const LIMIT_S = parseRfc3339(INSTANT_LIMIT);
const messageOf = (result: { success: boolean; error?: { issues: Array<{ message: string }> } }) => result.error?.issues[0].message;

describe("the shared instant and day schemas (V1)", () => {
  it("reads every instant from 2000-01-01 to before 2100-01-01 as its Unix seconds (property, seeded)", () => {
    fc.assert(
      fc.property(fc.integer({ min: EARLIEST_S, max: LIMIT_S - 1 }), (t) => {
        expect(instantSchema.parse(toRfc3339(t))).to.equal(t);
      }),
      { seed: 15, numRuns: 1000 },
    );
    expect(instantSchema.parse(EARLIEST_INSTANT)).to.equal(EARLIEST_S);
    expect(instantSchema.parse("2099-12-31T23:59:59Z")).to.equal(LIMIT_S - 1);
  });

  it("refuses every string of the form that names no real instant (property, seeded)", () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, "0"));
    const form = fc
      .tuple(fc.integer({ min: 2000, max: 2099 }), two(99), two(99), two(99), two(99), two(99))
      .map(([y, mo, d, h, mi, s]) => `${y}-${mo}-${d}T${h}:${mi}:${s}Z`);
    fc.assert(
      fc.property(form, (s) => {
        const real = !Number.isNaN(Date.parse(s)) && new Date(Date.parse(s)).toISOString().replace(".000", "") === s;
        expect(instantSchema.safeParse(s).success, s).to.equal(real);
      }),
      { seed: 15, numRuns: 2000 },
    );
  });

  it("says why an instant is refused: its form, its reality or its bounds", () => {
    expect(messageOf(instantSchema.safeParse("2026-11-02T10:00:00.5Z"))).to.equal(
      "expected an RFC 3339 UTC instant YYYY-MM-DDTHH:MM:SSZ (V1)",
    );
    expect(messageOf(instantSchema.safeParse("2026-12-01T23:60:00Z"))).to.equal("2026-12-01T23:60:00Z is not a real UTC instant");
    expect(messageOf(instantSchema.safeParse("2026-02-31T00:00:00Z"))).to.equal("2026-02-31T00:00:00Z is not a real UTC instant");
    expect(messageOf(instantSchema.safeParse("0000-01-01T00:00:00Z"))).to.equal(
      "0000-01-01T00:00:00Z is not from 2000-01-01T00:00:00Z to before 2100-01-01T00:00:00Z",
    );
    expect(messageOf(instantSchema.safeParse(INSTANT_LIMIT))).to.equal(
      `${INSTANT_LIMIT} is not from 2000-01-01T00:00:00Z to before 2100-01-01T00:00:00Z`,
    );
  });

  it("keeps every real day in bounds as it is, and refuses the others with the reason", () => {
    fc.assert(
      fc.property(fc.integer({ min: EARLIEST_S / 86400, max: LIMIT_S / 86400 - 1 }), (n) => {
        expect(daySchema.parse(dayName(n))).to.equal(dayName(n));
      }),
      { seed: 15, numRuns: 1000 },
    );
    expect(messageOf(daySchema.safeParse("2026-02-29"))).to.equal("2026-02-29 is not a real UTC day");
    expect(daySchema.parse("2028-02-29")).to.equal("2028-02-29");
    expect(messageOf(daySchema.safeParse("1999-12-31"))).to.equal("1999-12-31 is not from 2000-01-01 to before 2100-01-01");
    expect(messageOf(daySchema.safeParse("2100-01-01"))).to.equal("2100-01-01 is not from 2000-01-01 to before 2100-01-01");
    expect(messageOf(daySchema.safeParse("2026-11-1"))).to.equal("expected a UTC day YYYY-MM-DD (V1)");
  });
});
