import { expect } from "chai";
import fc from "fast-check";
import { buildScoreInputs, dayStart, scoreFromInputs, type ScoreResult } from "../method";
import { decodeResult, encodeResult, type ResultKey } from "./score-result-codec";

const AT = dayStart("2026-11-02");

/** A result computed by the method engine from generated facts, with its text and key as the cache gets them. */
function scored(facts: { claimedDaysAgo: number; days: Array<{ offset: number; checkins: number; onTime: number; coverageS: number }>; proofs: Array<"github" | "wallet" | "domain" | "erc8004">; penalties: number[] }) {
  const seen = new Set<number>();
  const days = facts.days.filter((d) => !seen.has(d.offset) && seen.add(d.offset)).map((d) => ({
    day: new Date((AT - d.offset * 86_400) * 1000).toISOString().slice(0, 10), checkins: d.checkins, onTime: Math.min(d.onTime, d.checkins),
    creditS: Math.min(d.onTime, d.checkins) * 3600, coverageS: d.coverageS, digest: d.checkins > 0 ? "ab".repeat(32) : "",
  }));
  const document = buildScoreInputs({
    agent: "agt_3f9c0d1e2b4a5968", method: "0.2", at: AT, claimedAt: AT - facts.claimedDaysAgo * 86_400,
    proofs: facts.proofs.map((kind) => ({ kind })),
    penalties: facts.penalties.map((ago, i) => ({ id: `pen_${i}`, code: "rate_abuse", points: 10 + 10 * (i % 5), days: 30, addedAt: AT - ago * 3600, revokedAt: null })),
    days: days.filter((d) => d.checkins > 0 || d.coverageS > 0),
  });
  const { result, sha256 } = scoreFromInputs(document);
  const key: ResultKey = { agentId: result.agent, at: AT, sha256, total: result.total };
  return { result, text: JSON.stringify(result), key };
}

const factsArb = fc.record({
  claimedDaysAgo: fc.integer({ min: 0, max: 60 }),
  days: fc.array(fc.record({ offset: fc.integer({ min: 1, max: 40 }), checkins: fc.integer({ min: 0, max: 80 }), onTime: fc.integer({ min: 0, max: 80 }), coverageS: fc.integer({ min: 0, max: 86_400 }) }), { maxLength: 40 }),
  proofs: fc.subarray(["github", "wallet", "domain", "erc8004"] as Array<"github" | "wallet" | "domain" | "erc8004">),
  penalties: fc.array(fc.integer({ min: 0, max: 2000 }), { maxLength: 4 }),
});

describe("score result codec (the latest-score cache's form of a result)", () => {
  it("gives back every result's text byte for byte, in a tenth of its bytes (property, method engine's results)", () => {
    fc.assert(
      fc.property(factsArb, (facts) => {
        const { result, text, key } = scored(facts);
        const bytes = encodeResult(result, text, key);
        expect(bytes, "a result of the method engine is kept by the codec").to.not.equal(null);
        expect(decodeResult(bytes!, key)).to.equal(text);
        expect(bytes!.length).to.be.lessThan(text.length / 8);
      }),
      { numRuns: 300, seed: 18 },
    );
  });

  it("refuses what it would not give back exactly: another key, another text, another shape", () => {
    const { result, text, key } = scored({ claimedDaysAgo: 40, days: [{ offset: 1, checkins: 24, onTime: 24, coverageS: 86_400 }], proofs: ["github"], penalties: [5] });
    expect(encodeResult(result, text, key)).to.not.equal(null);
    // The cache's own fields must be the result's.
    expect(encodeResult(result, text, { ...key, agentId: "agt_other" })).to.equal(null);
    expect(encodeResult(result, text, { ...key, sha256: "cd".repeat(32) })).to.equal(null);
    expect(encodeResult(result, text, { ...key, total: key.total + 1 })).to.equal(null);
    expect(encodeResult(result, text, { ...key, at: key.at + 86_400 })).to.equal(null);
    // A text that is not this result's rendering (spacing, key order, another value).
    expect(encodeResult(result, JSON.stringify(result, null, 1), key)).to.equal(null);
    const { scoreType, ...rest } = result;
    expect(encodeResult(result, JSON.stringify({ ...rest, scoreType }), key)).to.equal(null);
    // A shape it does not know (a field more, a band no table has) renders otherwise, so it is refused.
    const extra = { ...result, extra: 1 } as ScoreResult;
    expect(encodeResult(extra, JSON.stringify(extra), key)).to.equal(null);
    const band = { ...result, band: "1000+" } as unknown as ScoreResult;
    expect(encodeResult(band, JSON.stringify(band), key)).to.equal(null);
  });
});
