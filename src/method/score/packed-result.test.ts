import { expect } from "chai";
import fc from "fast-check";
import { dayStart } from "../time";
import { scoreFromInputs, type ScoreResult } from "./compute";
import { buildScoreInputs } from "./inputs";
import { packResult, packResultText, renderResult, resultKeyOf, type ResultKey } from "./packed-result";

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
      .to.throw()
      .with.property("code", "result_unknown_form");
  });
});
