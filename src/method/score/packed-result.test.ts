import { expect } from "chai";
import fc from "fast-check";
import { DAY_S, dayStart, windowDays } from "../time";
import { scoreFromInputs, type ScoreResult } from "./compute";
import { buildScoreInputs } from "./inputs";
import { packResult, packResultText, RESULT_SHAPES, renderResult, resultKeyOf, resultShape, type ResultKey } from "./packed-result";

const AT = dayStart("2026-11-02");

/** A result computed by the method engine from generated facts, with its text and key as the cache gets them. */
function scored(facts: {
  claimedDaysAgo: number;
  days: Array<{ offset: number; checkins: number; onTime: number; coverageS: number }>;
  proofs: Array<"github" | "wallet" | "domain" | "erc8004">;
  penalties: number[];
}) {
  const seen = new Set<number>();
  const days = facts.days
    .filter((d) => !seen.has(d.offset) && seen.add(d.offset))
    .map((d) => ({
      day: new Date((AT - d.offset * 86_400) * 1000).toISOString().slice(0, 10),
      checkins: d.checkins,
      onTime: Math.min(d.onTime, d.checkins),
      creditS: Math.min(d.onTime, d.checkins) * 3600,
      coverageS: d.coverageS,
      digest: d.checkins > 0 ? "ab".repeat(32) : "",
    }));
  const document = buildScoreInputs({
    agent: "agt_3f9c0d1e2b4a5968",
    method: "0.2",
    at: AT,
    claimedAt: AT - facts.claimedDaysAgo * 86_400,
    proofs: facts.proofs.map((kind) => ({ kind })),
    penalties: facts.penalties.map((ago, i) => ({
      id: `pen_${i}`,
      code: "rate_abuse",
      points: 10 + 10 * (i % 5),
      days: 30,
      addedAt: AT - ago * 3600,
      revokedAt: null,
    })),
    days: days.filter((d) => d.checkins > 0 || d.coverageS > 0),
  });
  const { result, sha256 } = scoreFromInputs(document);
  const key: ResultKey = { agentId: result.agent, at: AT, sha256, total: result.total };
  return { result, text: JSON.stringify(result), key };
}

const factsArb = fc.record({
  claimedDaysAgo: fc.integer({ min: 0, max: 60 }),
  days: fc.array(
    fc.record({
      offset: fc.integer({ min: 1, max: 40 }),
      checkins: fc.integer({ min: 0, max: 80 }),
      onTime: fc.integer({ min: 0, max: 80 }),
      coverageS: fc.integer({ min: 0, max: 86_400 }),
    }),
    { maxLength: 40 },
  ),
  proofs: fc.subarray(["github", "wallet", "domain", "erc8004"] as Array<"github" | "wallet" | "domain" | "erc8004">),
  penalties: fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 4 }),
});

describe("a score result's compact form (V9: the table's and the cache's, rendered by one function)", () => {
  it("renders every result of the engine byte for byte as JSON.stringify does, in a tenth of its bytes (property)", () => {
    fc.assert(
      fc.property(factsArb, (facts) => {
        const { result, text, key } = scored(facts);
        const packed = packResult(result, AT);
        expect(packed, "every result of the engine has a compact form").to.not.equal(null);
        expect(renderResult(packed!, key)).to.equal(text);
        expect(resultKeyOf(result, AT)).to.deep.equal(key);
        expect(packed!.length).to.be.lessThan(text.length / 8);
      }),
      { numRuns: 300, seed: 18 },
    );
  });

  it("tells the shape of a result from its compact form: whether it names proofs, whether it lists penalties (property)", () => {
    const seen = new Set<number>();
    fc.assert(
      fc.property(factsArb, (facts) => {
        const { result } = scored(facts);
        const { proofs } = result.components.identity;
        const { penalties } = result.components.integrity;
        const shape = resultShape(packResult(result, AT)!);
        expect(shape).to.equal((proofs.length > 0 ? 1 : 0) + (penalties.length > 0 ? 2 : 0));
        seen.add(shape);
      }),
      { numRuns: 300, seed: 19 },
    );
    expect(seen.size, "the generated results have every shape").to.equal(RESULT_SHAPES);
    expect(() => resultShape(Uint8Array.of(9)))
      .to.throw("a compact score result of an unknown version")
      .with.property("code", "result_unknown_form");
  });

  it("packs a result stored as text only when it renders back to that text exactly", () => {
    const { result, text } = scored({
      claimedDaysAgo: 40,
      days: [{ offset: 1, checkins: 24, onTime: 24, coverageS: 86_400 }],
      proofs: ["github"],
      penalties: [5],
    });
    expect(packResultText(text, AT)).to.deep.equal(packResult(result, AT));
    // Another spacing or key order, another instant, text that is not JSON.
    expect(packResultText(JSON.stringify(result, null, 1), AT)).to.equal(null);
    const { scoreType, ...rest } = result;
    expect(packResultText(JSON.stringify({ ...rest, scoreType }), AT)).to.equal(null);
    expect(packResultText(text, AT + 86_400)).to.equal(null);
    expect(packResultText("{", AT)).to.equal(null);
  });

  it("refuses a result of another shape: a band, state, kind or code in no table, a window of another instant", () => {
    const { result } = scored({
      claimedDaysAgo: 40,
      days: [{ offset: 1, checkins: 24, onTime: 24, coverageS: 86_400 }],
      proofs: ["github"],
      penalties: [5],
    });
    const unpackable = (r: unknown) => expect(packResult(r as ScoreResult, AT)).to.equal(null);
    unpackable({ ...result, band: "1000+" });
    unpackable({ ...result, state: "famous" });
    unpackable({ ...result, components: { ...result.components, identity: { value: 130, proofs: ["kind-in-no-table"] } } });
    unpackable({ ...result, at: "2026-11-03T00:00:00Z" });
    expect(() => renderResult(Uint8Array.of(9), resultKeyOf(result, AT)))
      .to.throw("a compact score result of an unknown version")
      .with.property("code", "result_unknown_form");
  });
});

describe("a score result's compact form: every number and text of the result's shape, at every instant (V9)", () => {
  const base = () =>
    scored({
      claimedDaysAgo: 40,
      days: [{ offset: 1, checkins: 24, onTime: 24, coverageS: 86_400 }],
      proofs: ["github"],
      penalties: [5],
    });
  /** Packs `result` at `at` and renders it back with its own key. */
  const roundTrip = (result: ScoreResult, at = AT) => {
    const packed = packResult(result, at);
    expect(packed, "a result of the engine's shape has a compact form").to.not.equal(null);
    return renderResult(packed!, resultKeyOf(result, at));
  };

  it("renders numbers at each width of their encoding, and below zero, byte for byte", () => {
    const { result } = base();
    // Seven bits a byte: 127 is one byte, 128 two, 16,383 two, 16,384 three; zigzag puts -1 at 1 and 63 at 126.
    const widths = [0, 1, 63, 64, 127, 128, 255, 16_383, 16_384, 2_097_151, 2_097_152, 2 ** 40, Number.MAX_SAFE_INTEGER];
    const edited: ScoreResult = {
      ...result,
      components: {
        identity: { ...result.components.identity, value: -1 },
        reliability: { value: -64, creditS: 2 ** 40 },
        integrity: { ...result.components.integrity, value: -65 },
      },
      window: result.window.map((d, i) => {
        const checkins = widths[i % widths.length];
        // checkins - on_time and 86,400 - coverage_s are what is written: at several widths too, and negative.
        return { ...d, checkins, on_time: widths[(i + 3) % 7], coverage_s: i % 2 === 0 ? widths[(i + 5) % 11] : DAY_S - widths[i % 9] };
      }),
    };
    expect(roundTrip(edited)).to.equal(JSON.stringify(edited));
  });

  it("renders every proof kind, every penalty code, text that is not ASCII, and before_claim on any day of the 30", () => {
    const { result } = base();
    const penalty = result.components.integrity.penalties[0];
    for (const beforeClaim of [[0], [7], [8], [15, 16], [23, 24], [29], [28, 29], [...Array(30).keys()]]) {
      const edited: ScoreResult = {
        ...result,
        agent: "agént",
        components: {
          ...result.components,
          identity: { value: 250, proofs: ["github", "wallet", "domain", "erc8004"] },
          integrity: {
            ...result.components.integrity,
            penalties: [
              { ...penalty, id: "pén_ü€😀", code: "impersonation" },
              { ...penalty, id: "b", code: "rule_violation", points: 50 },
              { ...penalty, id: "c", code: "rate_abuse", points: 10 },
            ],
          },
        },
        window: result.window.map((d, i) => ({ ...d, before_claim: beforeClaim.includes(i) })),
      };
      expect(roundTrip(edited), String(beforeClaim)).to.equal(JSON.stringify(edited));
    }
  });

  it("renders each instant's own window days, whatever instant it rendered before", () => {
    const { result } = base();
    const later = AT + 3 * 86_400 + 5;
    const moved: ScoreResult = {
      ...result,
      at: "2026-11-05T00:00:05Z",
      window: windowDays(later).map((day) => ({ day, checkins: 1, on_time: 1, coverage_s: 60, before_claim: false })),
    };
    for (let round = 0; round < 2; round++) {
      expect(roundTrip(result, AT)).to.equal(JSON.stringify(result));
      expect(roundTrip(moved, later)).to.equal(JSON.stringify(moved));
    }
    // A result packed at one instant, rendered with the key of another, shows the other instant's days.
    expect(renderResult(packResult(result, AT)!, resultKeyOf(result, later))).to.include(`"day":"${windowDays(later)[0]}"`);
  });

  it("has no compact form for numbers it could not render back: fractions, unsafe integers, a negative count", () => {
    const { result } = base();
    const unpackable = (r: ScoreResult, why: string) => expect(packResult(r, AT), why).to.equal(null);
    const components = result.components;
    unpackable({ ...result, components: { ...components, identity: { ...components.identity, value: 130.5 } } }, "identity");
    unpackable({ ...result, components: { ...components, reliability: { value: 1.5, creditS: 0 } } }, "reliability");
    unpackable({ ...result, components: { ...components, reliability: { value: 1, creditS: 2 ** 53 } } }, "creditS");
    unpackable({ ...result, components: { ...components, integrity: { ...components.integrity, value: 99.9 } } }, "integrity");
    const penalties = [{ ...components.integrity.penalties[0], points: 10.5 }];
    unpackable({ ...result, components: { ...components, integrity: { ...components.integrity, penalties } } }, "points");
    for (const field of ["checkins", "on_time", "coverage_s"] as const) {
      for (const bad of [-1, 0.5]) {
        unpackable({ ...result, window: result.window.map((d, i) => (i === 4 ? { ...d, [field]: bad } : d)) }, `${field} ${bad}`);
      }
    }
    // A window of 29 days, or one day of another name.
    unpackable({ ...result, window: result.window.slice(1) }, "29 days");
    unpackable({ ...result, window: result.window.slice(0, 29) }, "the first 29 days");
    unpackable({ ...result, window: result.window.map((d, i) => (i === 29 ? { ...d, day: "2026-11-02" } : d)) }, "a day renamed");
  });

  it("packs no text that is not a result of the engine's shape", () => {
    for (const text of ["{}", "5", "null", '{"components":{}}', "[]"]) expect(packResultText(text, AT), text).to.equal(null);
  });
});

describe("the first compact form of a process (V9)", () => {
  it("packs and renders with the window of its own instant when the module has packed nothing before", () => {
    const { result, text, key } = scored({
      claimedDaysAgo: 3,
      days: [{ offset: 1, checkins: 2, onTime: 1, coverageS: 60 }],
      proofs: [],
      penalties: [],
    });
    // A copy of the module as a new process loads it: nothing remembered from earlier results.
    const path = require.resolve("./packed-result");
    const loaded = require.cache[path];
    for (const first of ["pack", "render"]) {
      delete require.cache[path];
      try {
        const fresh = require("./packed-result") as typeof import("./packed-result");
        if (first === "render") expect(fresh.renderResult(packResult(result, AT)!, key), first).to.equal(text);
        else expect(fresh.packResult(result, AT), first).to.deep.equal(packResult(result, AT));
      } finally {
        require.cache[path] = loaded;
      }
    }
  });
});
