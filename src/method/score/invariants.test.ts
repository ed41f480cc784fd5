/**
 * Invariants of the Vrai score over random facts (issue #30): totals, components, bands and states (V5–V8) and
 * the byte-for-byte recompute of a score from its stored inputs (V9), in every method version.
 */
import crypto from "node:crypto";
import { expect } from "chai";
import fc from "fast-check";
import { canonicalJson, sha256Hex } from "../canonical";
import { playCheckins } from "../play";
import { DAY_S, parseRfc3339 } from "../time";
import { BANDS, bandOf, computeScore, reachableMax, scoreFromInputs } from "./compute";
import { identityMax } from "./identity";
import { buildScoreInputs, validateScoreInputs, type ScoreFacts } from "./inputs";
import { INTEGRITY_BASE, PENALTY_CODES, PENALTY_DAYS, PENALTY_POINTS, type Penalty } from "./integrity";
import { METHODS, PROOF_KINDS, RELIABILITY_MAX, type MethodVersion } from "./methods";

/** Scores are taken at some second of this day. */
const DAY = parseRfc3339("2026-12-01T00:00:00Z");

/**
 * Facts of one agent: a claim up to 50 days before `at`, runs of check-ins after it, proofs with repeats, penalties
 * active or not.
 */
const factsArb = fc
  .record({
    method: fc.constantFrom<MethodVersion>("0.1", "0.2"),
    atSecond: fc.integer({ min: 0, max: DAY_S - 1 }),
    claimBack: fc.integer({ min: 0, max: 50 * DAY_S }),
    // Runs of check-ins, each starting at some second of a day up to 45 days back: some agents reach 14 days, some do not.
    runs: fc.array(
      fc.record({
        daysBack: fc.integer({ min: 0, max: 45 }),
        second: fc.integer({ min: 0, max: DAY_S - 1 }),
        count: fc.integer({ min: 1, max: 30 }),
        gap: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1200, max: 4200 }) }, fc.integer({ min: 4201, max: DAY_S })),
      }),
      { maxLength: 30, size: "medium" },
    ),
    proofs: fc.array(fc.constantFrom(...PROOF_KINDS), { maxLength: 6 }),
    penalties: fc.array(
      fc.record({
        code: fc.constantFrom(...PENALTY_CODES),
        points: fc.integer(PENALTY_POINTS),
        days: fc.integer(PENALTY_DAYS),
        // Negative: added after `at`, so not active at it (V7).
        addedBack: fc.integer({ min: -DAY_S, max: 200 * DAY_S }),
        revokedAfter: fc.option(fc.integer({ min: 0, max: 100 * DAY_S }), { nil: null }),
      }),
      { maxLength: 5 },
    ),
  })
  .map((f): ScoreFacts => {
    const at = DAY + f.atSecond;
    const claimedAt = at - f.claimBack;
    const arrivals = f.runs
      .flatMap((run) => Array.from({ length: run.count }, (_, i) => DAY - run.daysBack * DAY_S + run.second + i * run.gap))
      .filter((t) => t >= claimedAt && t <= at)
      .sort((a, b) => a - b);
    return {
      agent: "agt_invariants",
      method: f.method,
      at,
      claimedAt,
      proofs: f.proofs.map((kind) => ({ kind })),
      penalties: f.penalties.map(
        (p, i): Penalty => ({
          id: `pen_${i}`,
          code: p.code,
          points: p.points,
          days: p.days,
          addedAt: at - p.addedBack,
          revokedAt: p.revokedAfter === null ? null : at - p.addedBack + p.revokedAfter,
        }),
      ),
      // Arrivals under 1,200 s after the one before are refused (V3.2), as the service would.
      days: playCheckins(arrivals.map((arrival) => ({ arrival }))).days,
    };
  });

const score = (facts: ScoreFacts) => computeScore(buildScoreInputs(facts));
/** The lowest and highest totals a band's name gives (V8: named by its range only). */
const rangeOf = (band: string) => band.split("-").map(Number);

describe("Vrai score invariants over random facts (V5–V9, properties)", () => {
  it("totals the active components only, within 0–1,000 and within the method's reachable maximum, each component within its range (V5–V8)", () => {
    fc.assert(
      fc.property(factsArb, (facts) => {
        const r = score(facts);
        const { identity, reliability, integrity } = r.components;
        expect(r.total).to.equal(identity.value + reliability.value + integrity.value);
        expect(r.total).to.be.within(0, 1000);
        expect(r.total).to.be.at.most(reachableMax(facts.method));
        expect(identity.value).to.be.within(100, identityMax(METHODS[facts.method].identity));
        expect(reliability.value).to.be.within(0, RELIABILITY_MAX);
        expect(integrity.value).to.be.within(0, INTEGRITY_BASE);
        expect(integrity.shield).to.deep.equal({ active: false });
        for (const n of [r.total, identity.value, reliability.value, integrity.value]) expect(Number.isInteger(n)).to.equal(true);
        expect(r.band).to.equal(bandOf(r.total));
      }),
      { numRuns: 300, seed: 3020 },
    );
  });

  it("scores a newly claimed agent without proofs 100 + 0 + 100 = 200 at any instant after its claim (V8)", () => {
    fc.assert(
      fc.property(factsArb, fc.constantFrom<MethodVersion>("0.1", "0.2"), (facts, method) => {
        expect(score({ ...facts, method, proofs: [], penalties: [], days: [] }).total).to.equal(200);
      }),
      { numRuns: 100, seed: 3021 },
    );
  });

  it("puts every total in the one band whose range holds it, the bands in the order of the totals (V8)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 }), (a, b) => {
        const [low, high] = rangeOf(bandOf(a));
        expect(a).to.be.within(low, high);
        expect(BANDS.filter((band) => a >= rangeOf(band)[0] && a <= rangeOf(band)[1])).to.deep.equal([bandOf(a)]);
        if (a <= b) expect(BANDS.indexOf(bandOf(a))).to.be.at.most(BANDS.indexOf(bandOf(b)));
      }),
      { numRuns: 500, seed: 3022 },
    );
  });

  it("never lowers a total for a proof added, nor raises it for a penalty added, and revoking a penalty never lowers it (V6, V7)", () => {
    const penaltyArb = fc.record({ points: fc.integer(PENALTY_POINTS), days: fc.integer(PENALTY_DAYS), addedBack: fc.nat(DAY_S) });
    fc.assert(
      fc.property(factsArb, fc.constantFrom(...PROOF_KINDS), penaltyArb, fc.nat(4), (facts, kind, extra, pick) => {
        const base = score(facts);
        const withProof = score({ ...facts, proofs: [...facts.proofs, { kind }] });
        expect(withProof.components.identity.value).to.be.at.least(base.components.identity.value);
        expect(withProof.total).to.be.at.least(base.total);
        const penalty: Penalty = { id: "pen_extra", code: "rate_abuse", ...extra, addedAt: facts.at - extra.addedBack, revokedAt: null };
        const withPenalty = score({ ...facts, penalties: [...facts.penalties, penalty] });
        expect(withPenalty.components.integrity.value).to.be.at.most(base.components.integrity.value);
        expect(withPenalty.total).to.be.at.most(base.total);
        if (facts.penalties.length > 0) {
          const i = pick % facts.penalties.length;
          const revoked = facts.penalties.map((p, j) => (j === i ? { ...p, revokedAt: Math.min(p.revokedAt ?? facts.at, facts.at) } : p));
          expect(score({ ...facts, penalties: revoked }).total).to.be.at.least(base.total);
        }
      }),
      { numRuns: 200, seed: 3023 },
    );
  });

  it("is established with more check-in days whenever it is with fewer, in both methods; 0.1 established implies 0.2 established (V8)", () => {
    fc.assert(
      fc.property(factsArb, fc.array(fc.boolean(), { maxLength: 60 }), (facts, keep) => {
        const fewer = { ...facts, days: facts.days.filter((_, i) => keep[i] ?? true) };
        for (const method of ["0.1", "0.2"] as const) {
          if (score({ ...fewer, method }).state === "established") expect(score({ ...facts, method }).state).to.equal("established");
        }
        if (score({ ...facts, method: "0.1" }).state === "established")
          expect(score({ ...facts, method: "0.2" }).state).to.equal("established");
      }),
      { numRuns: 200, seed: 3024 },
    );
  });

  it("(0.2) stays established at every later instant until the next claim, however long the agent is silent (V8)", () => {
    fc.assert(
      fc.property(factsArb, fc.integer({ min: 1, max: 400 * DAY_S }), (facts, later) => {
        const now = score({ ...facts, method: "0.2" });
        if (now.state === "established") expect(score({ ...facts, method: "0.2", at: facts.at + later }).state).to.equal("established");
      }),
      { numRuns: 200, seed: 3025 },
    );
  });

  it("recomputes from its stored inputs byte for byte: RFC 8785 bytes, their SHA-256, and the same result, twice alike (V9)", () => {
    fc.assert(
      fc.property(factsArb, (facts) => {
        const first = scoreFromInputs(buildScoreInputs(facts));
        // The bytes are the generic RFC 8785 serialisation, and canonical: serialising them again changes nothing.
        expect(first.canonical).to.equal(canonicalJson(buildScoreInputs(facts)));
        expect(canonicalJson(JSON.parse(first.canonical))).to.equal(first.canonical);
        expect(first.sha256).to.equal(crypto.createHash("sha256").update(Buffer.from(first.canonical, "utf8")).digest("hex"));
        expect(first.sha256)
          .to.equal(sha256Hex(first.canonical))
          .and.to.match(/^[0-9a-f]{64}$/);
        expect(first.result.sha256).to.equal(first.sha256);
        // Stored as text, read back, checked as a stored document is, and scored again: the same bytes and result.
        const again = scoreFromInputs(validateScoreInputs(JSON.parse(first.canonical)));
        expect(again.canonical).to.equal(first.canonical);
        expect(again.sha256).to.equal(first.sha256);
        expect(JSON.stringify(again.result)).to.equal(JSON.stringify(first.result));
      }),
      { numRuns: 300, seed: 3026 },
    );
  });
});
