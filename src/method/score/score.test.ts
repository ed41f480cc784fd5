import { expect } from "chai";
import fc from "fast-check";
import { buildScoreInputs, validateScoreInputs, type ScoreFacts } from "./inputs";
import { computeScore, scoreFromInputs, bandOf, reachableMax } from "./compute";
import { METHODS, methodRules } from "./methods";
import { distinctProofKinds, identityMax, identityValue, kindsOf } from "./identity";
import { playCheckins } from "../play";
import { canonicalJson } from "../canonical";
import { canonicalOfEngineShape, canonicalScoreInputs } from "./canonical-inputs";
import { parseRfc3339 } from "../time";
import type { DayAggregate } from "../days";

const H = 3600;
const D = 86_400;
const AT = parseRfc3339("2026-12-01T00:00:00Z"); // window 2026-11-01 .. 2026-11-30
const NOV1 = parseRfc3339("2026-11-01T00:00:00Z");
const CLAIM = parseRfc3339("2026-10-25T12:00:00Z");

function facts(over: Partial<ScoreFacts> = {}): ScoreFacts {
  return { agent: "a1", method: "0.2", at: AT, claimedAt: CLAIM, proofs: [], penalties: [], days: [], ...over };
}

function score(over: Partial<ScoreFacts> = {}) {
  return computeScore(buildScoreInputs(facts(over)));
}

/** Hourly arrivals from `from` (inclusive) to `to` (exclusive). */
function hourly(from: number, to: number): Array<{ arrival: number }> {
  const out: Array<{ arrival: number }> = [];
  for (let t = from; t < to; t += H) out.push({ arrival: t });
  return out;
}

/** One check-in at noon on each of `n` consecutive days from `firstDay`. */
function dailyDays(firstDay: number, n: number): DayAggregate[] {
  return playCheckins(Array.from({ length: n }, (_, i) => ({ arrival: firstDay + i * D + 12 * H }))).days;
}

/** `first`, then each arrival `gaps[i]` seconds after the one before. */
function arrivalsAfter(first: number, gaps: readonly number[]): number[] {
  const arrivals = [first];
  for (const gap of gaps) arrivals.push(arrivals[arrivals.length - 1] + gap);
  return arrivals;
}

describe("Vrai score (V5–V10)", () => {
  it("scores a newly claimed agent with no proofs 100 + 0 + 100 = 200, provisional (V8)", () => {
    for (const at of [CLAIM, CLAIM + 1, CLAIM + 40 * D]) {
      const r = score({ at });
      expect(r).to.include({ total: 200, band: "200-399", state: "provisional", scoreType: "vrai", method: "0.2" });
      expect(r.components.identity).to.deep.equal({ value: 100, proofs: [] });
      expect(r.components.reliability).to.deep.equal({ value: 0, creditS: 0 });
      expect(r.components.integrity).to.deep.equal({ value: 100, penalties: [], shield: { active: false } });
      expect(r.window).to.have.length(30);
    }
  });

  it("gives Reliability 150 for 30 days of hourly on-time check-ins, in both methods (V5)", () => {
    const { days } = playCheckins(hourly(NOV1 - H, AT));
    for (const method of ["0.1", "0.2"] as const) {
      const r = score({ method, days });
      expect(r.components.reliability).to.deep.equal({ value: 150, creditS: 2_592_000 });
      expect(r.window.every((d) => d.checkins === 24 && d.on_time === 24 && !d.before_claim)).to.equal(true);
      // The interval (Nov 30 23:00, Dec 1 00:00] ends after `at`: the last day is covered 23 h so far (V10).
      expect(r.window.map((d) => d.coverage_s)).to.deep.equal([...Array(29).fill(D), 23 * H]);
    }
  });

  it("gives 149 under 0.1 and 150 under 0.2 when the sum is 5 s under 2,592,000 (V5)", () => {
    const requests = hourly(NOV1 - H, AT);
    requests[0] = { arrival: NOV1 - H + 5 }; // the last check-in before the window is 5 s late: first window credit 3,595
    const { days } = playCheckins(requests);
    expect(score({ method: "0.1", days }).components.reliability).to.deep.equal({ value: 149, creditS: 2_591_995 });
    expect(score({ method: "0.2", days }).components.reliability).to.deep.equal({ value: 150, creditS: 2_591_995 });
  });

  it("rounds half up in 0.2 exactly at S = 8,640 (half a point) and down below it (V5)", () => {
    expect(METHODS["0.2"].reliability(8640)).to.equal(1);
    expect(METHODS["0.2"].reliability(8639)).to.equal(0);
    expect(METHODS["0.1"].reliability(17_279)).to.equal(0);
    expect(METHODS["0.1"].reliability(17_280)).to.equal(1);
  });

  it("leaves out check-ins of the day of at from Reliability and the window (V1)", () => {
    const { days } = playCheckins(hourly(AT - 2 * H, AT + 10 * H));
    const r = score({ at: AT + 12 * H, days });
    expect(r.components.reliability.creditS).to.equal(3600); // Nov 30 22:00 (first, 0) and 23:00 (3,600) only
    expect(r.window[29].checkins).to.equal(2);
  });

  it("becomes established on the 14th distinct day of check-ins since the claim, not the 13th (V8)", () => {
    expect(score({ days: dailyDays(NOV1, 13) }).state).to.equal("provisional");
    expect(score({ days: dailyDays(NOV1, 14) }).state).to.equal("established");
    expect(score({ method: "0.1", days: dailyDays(NOV1, 14) }).state).to.equal("established");
  });

  it("(0.2) counts a check-in of the day of at that arrived before at towards established (V8)", () => {
    const days = [...dailyDays(AT - 13 * D, 13), ...playCheckins([{ arrival: AT + 60 }]).days];
    expect(score({ at: AT + 120, days }).state).to.equal("established");
    expect(score({ at: AT + 120, days, method: "0.1" }).state).to.equal("provisional");
  });

  it("(0.2) stays established after silence while 0.1 falls back to provisional (V8)", () => {
    const claim = parseRfc3339("2026-09-01T00:00:00Z");
    const days = dailyDays(claim, 14);
    const r2 = score({ claimedAt: claim, days });
    const r1 = score({ claimedAt: claim, days, method: "0.1" });
    expect(r2.state).to.equal("established");
    expect(r2.components.reliability.value).to.equal(0);
    expect(r1.state).to.equal("provisional");
  });

  it("marks days that ended at or before the claim as before_claim (V10)", () => {
    const claim = parseRfc3339("2026-11-10T00:00:00Z");
    const marks = score({ claimedAt: claim }).window.map((d) => d.before_claim);
    expect(marks.slice(0, 9).every(Boolean)).to.equal(true); // Nov 1..9 ended at or before 00:00 on Nov 10
    expect(marks.slice(9).some(Boolean)).to.equal(false);
    const midday = score({ claimedAt: claim + 12 * H }).window;
    expect(midday[9]).to.include({ day: "2026-11-10", before_claim: false });
  });

  it("subtracts a penalty until added_at + days * 86400 exactly, then not (V7)", () => {
    const addedAt = AT - 30 * D + 1;
    const penalties = [{ id: "x1", code: "rate_abuse" as const, points: 20, days: 30, addedAt, revokedAt: null }];
    const active = score({ penalties });
    expect(active.components.integrity.value).to.equal(80);
    expect(active.components.integrity.penalties).to.deep.equal([
      { id: "x1", code: "rate_abuse", points: 20, addedAt: "2026-11-01T00:00:01Z", expiresAt: "2026-12-01T00:00:01Z" },
    ]);
    expect(active.total).to.equal(180);
    expect(score({ at: AT + 1, penalties }).components.integrity.value).to.equal(100);
  });

  it("does not subtract a penalty revoked by at, nor one added after at (V7)", () => {
    const base = { code: "impersonation" as const, points: 50, days: 180 };
    expect(score({ penalties: [{ id: "r", ...base, addedAt: AT - D, revokedAt: AT }] }).components.integrity.value).to.equal(100);
    expect(score({ penalties: [{ id: "r", ...base, addedAt: AT - D, revokedAt: AT + 1 }] }).components.integrity.value).to.equal(50);
    expect(score({ penalties: [{ id: "f", ...base, addedAt: AT + 1, revokedAt: null }] }).components.integrity.value).to.equal(100);
  });

  it("never takes Integrity below 0 and never shows Shield active (V7)", () => {
    const penalties = ["a", "b", "c"].map((id) => ({
      id,
      code: "rule_violation" as const,
      points: 50,
      days: 60,
      addedAt: AT - D,
      revokedAt: null,
    }));
    const integrity = score({ penalties }).components.integrity;
    expect(integrity.value).to.equal(0);
    expect(integrity.shield).to.deep.equal({ active: false });
  });

  it("counts each proof kind once, up to Identity 250 and a total of 500 (V6, V8)", () => {
    const proofs = (["github", "github", "wallet", "domain", "erc8004", "erc8004"] as const).map((kind) => ({ kind }));
    const { days } = playCheckins(hourly(NOV1 - H, AT));
    const r = score({ proofs, days });
    expect(r.components.identity).to.deep.equal({
      value: identityMax(METHODS["0.2"].identity),
      proofs: ["github", "wallet", "domain", "erc8004"],
    });
    expect(identityMax(METHODS["0.2"].identity)).to.equal(250);
    expect(r).to.include({ total: 500, band: "400-599", state: "established" });
  });

  it("counts only the kinds a version's V6 table has: another kind adds nothing to its Identity, its maximum or its inputs (V6, issue #25)", () => {
    const table = {
      github: { points: 30, belongsTo: "owner", recheckDays: 30 },
      domain: { points: 40, belongsTo: "agent", recheckDays: 7 },
    } as const;
    expect(kindsOf(table)).to.deep.equal(["github", "domain"]);
    expect(identityMax(table)).to.equal(170);
    expect(identityValue(table, ["github", "wallet", "domain", "erc8004"])).to.equal(170);
    expect(distinctProofKinds(table, [{ kind: "erc8004" }, { kind: "domain" }, { kind: "wallet" }, { kind: "github" }])).to.deep.equal([
      "github",
      "domain",
    ]);
    // Each version keeps its own table: 0.1 and 0.2 count the four kinds of the seed's V6.
    for (const v of ["0.1", "0.2"] as const) expect(identityMax(METHODS[v].identity), v).to.equal(250);
    expect(reachableMax("0.2")).to.equal(500);
  });

  it("names the five bands by their range (V8)", () => {
    expect([0, 199, 200, 399, 400, 599, 600, 799, 800, 1000].map(bandOf)).to.deep.equal([
      "0-199",
      "0-199",
      "200-399",
      "200-399",
      "400-599",
      "400-599",
      "600-799",
      "600-799",
      "800-1000",
      "800-1000",
    ]);
  });

  it("keeps the credit of a check-in when a window is declared after the agent came back (V4.3)", () => {
    const back = NOV1 + 6 * H;
    const requests = [{ arrival: NOV1 }, { arrival: back }];
    const before = playCheckins(requests).counted[1];
    const window = { id: "w", start: NOV1 + 3000, end: NOV1 + 5 * H, declaredAt: back + 60 };
    expect(playCheckins(requests, [window]).counted[1]).to.deep.equal(before);
    expect(before).to.include({ onTime: false, credit: 0 });
    expect(playCheckins(requests, [{ ...window, declaredAt: back }]).counted[1]).to.include({ excused: true, credit: 6 * H });
  });

  it("rejects an unknown method version with unknown_method (V9)", () => {
    const inputs = { ...buildScoreInputs(facts()), method: "9.9" } as never;
    expect(() => computeScore(inputs))
      .to.throw(/unknown method/)
      .with.property("code", "unknown_method");
    expect(() => validateScoreInputs(inputs))
      .to.throw()
      .with.property("code", "unknown_method");
    expect(() => methodRules("0.2")).not.to.throw();
  });

  it("recomputes a stored document byte for byte (V9)", () => {
    const { days } = playCheckins(hourly(NOV1 + 7 * D, AT));
    const first = scoreFromInputs(buildScoreInputs(facts({ days, proofs: [{ kind: "wallet" }] })));
    const again = scoreFromInputs(validateScoreInputs(JSON.parse(first.canonical)));
    expect(again.canonical).to.equal(first.canonical);
    expect(again.sha256).to.equal(first.sha256);
    expect(JSON.stringify(again.result)).to.equal(JSON.stringify(first.result));
    expect(first.result.sha256).to.equal(first.sha256);
  });

  it("stays under 8 KB for an agent checking in every hour for 30 days (V9)", () => {
    const { days } = playCheckins(hourly(CLAIM, AT + 5 * H));
    const penalties = [{ id: "x1", code: "rate_abuse" as const, points: 20, days: 30, addedAt: AT - D, revokedAt: null }];
    const { canonical } = scoreFromInputs(buildScoreInputs(facts({ days, penalties, proofs: [{ kind: "github" }, { kind: "erc8004" }] })));
    expect(Buffer.byteLength(canonical)).to.be.below(8 * 1024);
  });

  describe("validating stored inputs documents", () => {
    const good = () => JSON.parse(canonicalJson(buildScoreInputs(facts({ days: dailyDays(NOV1, 3), proofs: [{ kind: "domain" }] }))));

    const cases: Array<[string, (doc: any) => void, RegExp]> = [
      [
        "a day credit of the wrong type",
        (d) => (d.days[1].credit_s = "3600"),
        /^days\[1\]\.credit_s: expected a whole number >= 0, got "3600"$/,
      ],
      ["an unknown field", (d) => (d.extra = 1), /^inputs\.extra: unknown field$/],
      ["a day outside the window", (d) => (d.days[0].day = "2026-10-01"), /days\[0\]\.day: 2026-10-01 is not in the window/],
      ["an unsorted proof list", (d) => (d.proofs = ["erc8004", "github"]), /^proofs\[1\]: expected distinct kinds/],
      ["a malformed at", (d) => (d.at = "2026-12-01"), /^at: expected a time YYYY-MM-DDTHH:MM:SSZ/],
      ["on_time above checkins", (d) => (d.days[0].on_time = 2), /^days\[0\]\.on_time: expected a whole number in 0\.\.1/],
      ["a bad digest", (d) => (d.days[0].digest = "xyz"), /^days\[0\]\.digest: expected 64 lowercase hex digits/],
      ["a missing field", (d) => delete d.other_checkin_days, /^other_checkin_days: missing/],
    ];
    for (const [what, mutate, message] of cases) {
      it(`rejects ${what}, naming the field`, () => {
        const doc = good();
        mutate(doc);
        expect(() => validateScoreInputs(doc)).to.throw(message);
      });
    }

    it("accepts what buildScoreInputs produces", () => {
      expect(() => validateScoreInputs(good())).not.to.throw();
    });
  });

  describe("properties", () => {
    it("keeps Reliability within 0..150 and monotone in the credit sum, in every method (V5)", () => {
      fc.assert(
        fc.property(fc.nat(10_000_000), fc.nat(200_000), (s, extra) => {
          for (const rules of Object.values(METHODS)) {
            const r = rules.reliability(s);
            expect(r).to.be.within(0, 150);
            expect(Number.isInteger(r)).to.equal(true);
            expect(rules.reliability(s + extra)).to.be.at.least(r);
          }
        }),
        { numRuns: 500 },
      );
    });

    it("never lowers Reliability when a check-in earns more credit (V5)", () => {
      fc.assert(
        fc.property(fc.array(fc.integer({ min: 1200, max: 9000 }), { minLength: 1, maxLength: 60 }), fc.nat(59), (gaps, pick) => {
          const arrivals = arrivalsAfter(NOV1 + 10 * D, gaps);
          const base = score({ days: playCheckins(arrivals.map((arrival) => ({ arrival }))).days }).components.reliability;
          expect(base.value).to.be.within(0, 150);
          const i = pick % gaps.length;
          const longer = arrivals.map((t, j) => (j > i ? t + 1 : t));
          const r = score({ days: playCheckins(longer.map((arrival) => ({ arrival }))).days }).components.reliability;
          if (r.creditS >= base.creditS) expect(r.value).to.be.at.least(base.value);
        }),
        { numRuns: 100 },
      );
    });
  });
});

describe("canonical inputs documents (V9)", () => {
  it("writes exactly the bytes of the generic RFC 8785 serialiser (property)", () => {
    const arb = fc.record({
      agent: fc.string(),
      method: fc.constantFrom("0.1" as const, "0.2" as const),
      hours: fc.array(fc.integer({ min: 1200, max: 20_000 }), { maxLength: 200 }),
      penalties: fc.array(
        fc.record({
          id: fc.string({ minLength: 1 }),
          points: fc.integer({ min: 10, max: 50 }),
          days: fc.integer({ min: 30, max: 180 }),
          ago: fc.nat(40 * D),
        }),
        { maxLength: 3 },
      ),
      proofs: fc.subarray(["github", "wallet", "domain", "erc8004"] as const),
    });
    fc.assert(
      fc.property(arb, (a) => {
        const arrivals = arrivalsAfter(NOV1 + 3 * D, a.hours);
        const inputs = buildScoreInputs(
          facts({
            agent: a.agent,
            method: a.method,
            days: playCheckins(arrivals.filter((t) => t < AT).map((arrival) => ({ arrival }))).days,
            penalties: a.penalties.map((p, i) => ({
              id: `${p.id}${i}`,
              code: "rule_violation",
              points: p.points,
              days: p.days,
              addedAt: AT - p.ago,
              revokedAt: null,
            })),
            proofs: a.proofs.map((kind) => ({ kind })),
          }),
        );
        expect(canonicalScoreInputs(inputs)).to.equal(canonicalJson(inputs));
        // Written by the direct path, not left to the generic serialiser: every document the engine builds is of its shape.
        expect(canonicalOfEngineShape(inputs)).to.equal(canonicalJson(inputs));
      }),
      { numRuns: 200 },
    );
  });

  it("falls back to the generic serialiser for a document off its shape", () => {
    const inputs = { ...buildScoreInputs(facts()), extra: { b: 1, a: 2 } } as never;
    expect(canonicalOfEngineShape(inputs)).to.equal(null);
    expect(canonicalScoreInputs(inputs)).to.equal(canonicalJson(inputs));
  });
});

describe("docs/inputs.md", () => {
  it("shows an example document that recomputes to the SHA-256 and total it states", () => {
    const text = require("node:fs").readFileSync(require("node:path").resolve(__dirname, "../../../docs/inputs.md"), "utf8") as string;
    const example = JSON.parse(/```json\n([\s\S]*?)\n```/.exec(text)![1]);
    const { result, sha256, canonical } = scoreFromInputs(validateScoreInputs(example));
    expect(text).to.include(sha256);
    expect(text).to.include(`${Buffer.byteLength(canonical).toLocaleString("en-US")} bytes`);
    expect(text).to.include(`total ${result.total}`);
  });
});

describe("Vrai score: what counts from the window (V2, V5, V8, V10)", () => {
  /** A day of the document with `checkins` on-time check-ins of an hour each and some coverage. */
  const inputDay = (day: string, checkins: number, coverage: number) => ({
    day,
    checkins,
    on_time: checkins,
    credit_s: 3600 * checkins,
    coverage_s: coverage,
    digest: checkins > 0 ? "ab".repeat(32) : "",
  });

  it("shows and counts nothing of a day that ended at or before the claim, even when a document holds one (V2, V10)", () => {
    const claimedAt = parseRfc3339("2026-11-03T00:00:00Z");
    const doc = {
      ...buildScoreInputs(facts({ claimedAt })),
      days: [inputDay("2026-11-02", 5, 3600), inputDay("2026-11-03", 2, 7200)],
    };
    const r = computeScore(doc);
    expect(r.window[1]).to.deep.equal({ day: "2026-11-02", checkins: 0, on_time: 0, coverage_s: 0, before_claim: true });
    expect(r.window[2]).to.deep.equal({ day: "2026-11-03", checkins: 2, on_time: 2, coverage_s: 7200, before_claim: false });
    expect(r.components.reliability.creditS).to.equal(7200);
  });

  it("counts a day towards established only when a check-in arrived on it, not for coverage alone (V8)", () => {
    const checkinDays = Array.from({ length: 13 }, (_, i) => inputDay(`2026-11-${String(i + 10).padStart(2, "0")}`, 1, 3600));
    const covered = inputDay("2026-11-25", 0, 86_400);
    const doc = { ...buildScoreInputs(facts()), days: [...checkinDays, covered] };
    expect(computeScore(doc).state).to.equal("provisional");
    expect(computeScore({ ...doc, days: [...checkinDays, { ...covered, checkins: 1, digest: "ab".repeat(32) }] }).state).to.equal(
      "established",
    );
    expect(computeScore({ ...doc, method: "0.1" }).state).to.equal("provisional");
  });

  it("adds the other days since the claim to the window's under 0.2 only, from 14 days in all (V8)", () => {
    const days = Array.from({ length: 4 }, (_, i) => inputDay(`2026-11-1${i}`, 1, 3600));
    const doc = { ...buildScoreInputs(facts()), days };
    expect(computeScore({ ...doc, other_checkin_days: 9 }).state).to.equal("provisional");
    expect(computeScore({ ...doc, other_checkin_days: 10 }).state).to.equal("established");
    expect(computeScore({ ...doc, other_checkin_days: 10, method: "0.1" }).state).to.equal("provisional");
  });

  it("takes Reliability from the credits of the window days, and the total from the three components (V5, V8)", () => {
    const doc = { ...buildScoreInputs(facts({ proofs: [{ kind: "domain" }] })), days: [inputDay("2026-11-10", 24, 86_400)] };
    const r = computeScore(doc);
    // S = 86,400: 150 * 86,400 / 2,592,000 = 5 exactly.
    expect(r.components.reliability).to.deep.equal({ value: 5, creditS: 86_400 });
    expect(r).to.include({ total: 140 + 5 + 100, band: "200-399" });
  });
});

describe("canonical inputs documents off the shape the engine writes (V9: RFC 8785 bytes whatever the values)", () => {
  const doc = () => {
    const penalties = [{ id: "x1", code: "rate_abuse" as const, points: 20, days: 30, addedAt: AT - D, revokedAt: null }];
    return buildScoreInputs(facts({ days: dailyDays(NOV1, 2), penalties, proofs: [{ kind: "github" }, { kind: "domain" }] }));
  };
  /** The RFC 8785 text of `inputs` or the code it is refused with, by either serialiser. */
  const outcome = (serialise: () => string) => {
    try {
      return serialise();
    } catch (error) {
      return (error as { code?: string }).code;
    }
  };

  it("writes the bytes of the generic serialiser, or refuses as it does, whatever text each of its strings holds", () => {
    // Quotes, backslashes, control characters, non-ASCII and lone surrogates: the fast path takes only plain text.
    const text = fc.oneof(
      fc.string({ unit: "binary" }),
      fc.string({ unit: "grapheme-ascii" }),
      fc.constantFrom('"', "\\", "\u007f", "\n", "é"),
    );
    fc.assert(
      fc.property(text, text, text, text, text, (agent, digest, day, id, proof) => {
        const inputs = doc() as any;
        Object.assign(inputs, { agent, proofs: [proof] });
        inputs.days[0].digest = digest;
        inputs.days[1].day = day;
        inputs.penalties[0].id = id;
        expect(outcome(() => canonicalScoreInputs(inputs))).to.equal(outcome(() => canonicalJson(inputs)));
      }),
      { numRuns: 300 },
    );
  });

  it("writes the bytes of the generic serialiser, or refuses as it does, for numbers that are no whole numbers and text with a lone surrogate", () => {
    const edits: Array<[string, (d: any) => void]> = [
      ["other_checkin_days NaN", (d) => (d.other_checkin_days = Number.NaN)],
      ["other_checkin_days as text", (d) => (d.other_checkin_days = "3")],
      ["other_checkin_days 1.5", (d) => (d.other_checkin_days = 1.5)],
      ["checkins Infinity", (d) => (d.days[0].checkins = Number.POSITIVE_INFINITY)],
      ["on_time as text", (d) => (d.days[1].on_time = "1")],
      ["credit_s 0.5", (d) => (d.days[0].credit_s = 0.5)],
      ["coverage_s above 2^53", (d) => (d.days[0].coverage_s = 2 ** 60)],
      ["points as text", (d) => (d.penalties[0].points = "20")],
      ["days NaN", (d) => (d.penalties[0].days = Number.NaN)],
      ["an agent with a lone surrogate", (d) => (d.agent = "a\ud800")],
      ["a penalty id with a lone surrogate", (d) => (d.penalties[0].id = "\udc00")],
      ["a digest with a lone surrogate", (d) => (d.days[0].digest = "\udbff")],
      ["a proof with a lone surrogate", (d) => (d.proofs[1] = "\ud83d")],
      ["a day with a field more", (d) => (d.days[1].note = "x")],
      [
        "every day with a field more",
        (d) => {
          for (const day of d.days) day.note = "x";
        },
      ],
      ["a penalty with a field more", (d) => (d.penalties[0].reason = "x")],
      ["a day with a field less", (d) => delete d.days[0].digest],
      [
        "a day with a field renamed",
        (d) => {
          d.days[0].note = d.days[0].digest;
          delete d.days[0].digest;
        },
      ],
      [
        "a penalty with a field renamed",
        (d) => {
          d.penalties[0].reason = d.penalties[0].code;
          delete d.penalties[0].code;
        },
      ],
      [
        "a document with a field renamed",
        (d) => {
          d.owner = d.agent;
          delete d.agent;
        },
      ],
      [
        // Its own keys are six, as a day's; the digest is not one of them (the generic serialiser writes own keys only).
        "a day whose digest is inherited, with a field more",
        (d) => {
          const { digest, ...rest } = d.days[0];
          d.days[0] = Object.assign(Object.create({ digest }), rest, { note: "x" });
        },
      ],
      ["an agent as a number", (d) => (d.agent = 5)],
      ["a digest as null", (d) => (d.days[0].digest = null)],
      ["a proof as a number", (d) => (d.proofs[0] = 7)],
      ["days that are no list", (d) => (d.days = 3)],
      ["every day's check-ins as text", (d) => (d.days = d.days.map((day: any) => ({ ...day, checkins: String(day.checkins) })))],
      ["other_checkin_days NaN and nothing else", (d) => Object.assign(d, { other_checkin_days: Number.NaN, days: [], penalties: [] })],
      [
        "every text with a lone surrogate",
        (d) =>
          Object.assign(d, {
            agent: "\ud800",
            at: "\ud801",
            claimed_at: "\ud802",
            method: "\ud803",
            scoreType: "\ud804",
            proofs: [],
            days: [],
            penalties: [],
          }),
      ],
    ];
    for (const [what, edit] of edits) {
      const inputs = doc() as any;
      edit(inputs);
      const fast = outcome(() => canonicalScoreInputs(inputs));
      expect(fast, what).to.equal(outcome(() => canonicalJson(inputs)));
      expect(canonicalOfEngineShape(inputs), what).to.equal(null);
    }
    const lone = doc() as any;
    lone.agent = "\ud800";
    expect(() => canonicalScoreInputs(lone))
      .to.throw(/lone surrogate/)
      .with.property("code", "not_canonicalizable");
  });
});

describe("Vrai score: penalties of a stored document (V7)", () => {
  it("subtracts only the penalties of the document active at at, whatever else it lists", () => {
    const doc = buildScoreInputs(facts());
    const penalty = { id: "p", code: "rate_abuse" as const, points: 20, days: 30 };
    const r = computeScore({
      ...doc,
      penalties: [
        { ...penalty, id: "expired", added_at: "2026-10-31T00:00:00Z" }, // until 2026-11-30T00:00:00Z
        { ...penalty, id: "active", added_at: "2026-11-15T00:00:00Z" },
        { ...penalty, id: "later", added_at: "2026-12-01T00:00:01Z" },
      ],
    });
    expect(r.components.integrity.value).to.equal(80);
    expect(r.components.integrity.penalties.map((p) => p.id)).to.deep.equal(["active"]);
  });
});
