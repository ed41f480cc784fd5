import { expect } from "chai";
import { buildScoreInputs, canonicalScoreInputs, dayStart, packResult, scoreFromInputs, type ScoreResult } from "../method";
import type { NewScore } from "../service/ports";
import { isSettledDay, type SettledDay } from "./score-facts";
import { packScore, scoreRowOf, summaryOf, type ScoreColumns } from "./score-packing";

const AT = dayStart("2026-11-02") + 600;

/** A daily score the engine computed, as the scoring service hands it to the store (with its claim and document). */
function newScore(): NewScore {
  const document = buildScoreInputs({
    agent: "agt_pack",
    method: "0.2",
    at: AT,
    claimedAt: AT - 40 * 86_400,
    proofs: [{ kind: "github" }, { kind: "domain" }],
    penalties: [{ id: "pen_1", code: "rate_abuse", points: 10, days: 30, addedAt: AT - 86_400, revokedAt: null }],
    days: Array.from({ length: 30 }, (_, d) => ({
      day: new Date((AT - (d + 1) * 86_400) * 1000).toISOString().slice(0, 10),
      checkins: 24,
      onTime: 23,
      creditS: 82_800,
      coverageS: 86_000,
      digest: `${d % 10}`.repeat(64),
    })),
  });
  const { result, canonical, sha256 } = scoreFromInputs(document);
  return {
    agentId: "agt_pack",
    method: "0.2",
    at: AT,
    trigger: "daily",
    day: "2026-11-02",
    inputs: canonical,
    sha256,
    result,
    total: result.total,
    claimId: 3,
    document,
  };
}

/** The settled lines `agent_days` holds for a document's days (what the store reads back). */
function settledOf(score: NewScore): Map<string, SettledDay> {
  return new Map(
    score
      .document!.days.filter((d) => isSettledDay(d.day, AT))
      .map((d) => [d.day, { checkins: d.checkins, onTime: d.on_time, creditS: d.credit_s, digest: d.digest }]),
  );
}

/** The columns of a row an insert of `score` wrote, as the store reads them back. */
function columns(score: NewScore, settled: ReadonlyMap<string, SettledDay>): ScoreColumns {
  const p = packScore(score);
  return {
    id: 1,
    agentId: score.agentId,
    method: score.result.method,
    at: score.at,
    trigger: score.trigger,
    day: score.day,
    sha256: score.sha256,
    total: score.total,
    inputs: p.inputs,
    resultJson: p.resultJson,
    facts: p.facts,
    packed: p.packed,
    settled,
  };
}

describe("how the store keeps a score (migrations 010 and 016)", () => {
  it("keeps a score with its claim and document compact, its result packed, and reads both back exactly", () => {
    const score = newScore();
    const packed = packScore(score);
    expect(packed).to.include({ inputs: null, resultJson: null, claimId: 3, established: true });
    expect(packed.facts!.length + packed.packed!.length).to.be.below(score.inputs.length / 10);
    const c = columns(score, settledOf(score));
    expect(summaryOf(c)).to.deep.include({ resultJson: JSON.stringify(score.result), packed: packResult(score.result, AT) });
    const row = scoreRowOf(c, { strict: true });
    expect([row.inputs, row.result]).to.deep.equal([score.inputs, score.result]);
  });

  it("keeps a score without its claim and document as text, with its result packed beside it", () => {
    const { claimId: _c, document: _d, ...bare } = newScore();
    const packed = packScore(bare);
    expect(packed).to.include({ inputs: bare.inputs, resultJson: JSON.stringify(bare.result), claimId: null, facts: null });
    expect(packed.packed).to.deep.equal(packResult(bare.result, AT));
    expect(scoreRowOf(columns(bare, new Map()), { strict: true }).result).to.deep.equal(bare.result);
  });

  it("keeps a result of a shape the engine does not make as text, and serves its text as given", () => {
    const score = newScore();
    const odd = { ...score, result: { ...score.result, band: "1000+" } as unknown as ScoreResult };
    const packed = packScore(odd);
    expect([packed.packed, packed.facts, packed.resultJson]).to.deep.equal([null, null, JSON.stringify(odd.result)]);
    expect(summaryOf(columns(odd, new Map()))).to.include({ resultJson: JSON.stringify(odd.result), packed: null });
  });

  it("computes the result of a compact score of before migration 016 (no packed result) from its rebuilt inputs", () => {
    const score = newScore();
    const c = { ...columns(score, settledOf(score)), packed: null };
    expect(summaryOf(c)).to.deep.include({ resultJson: JSON.stringify(score.result), packed: packResult(score.result, AT) });
    expect(scoreRowOf(c, { strict: true }).result).to.deep.equal(score.result);
  });

  it("refuses, strict, inputs whose settled lines changed since (score_inputs_mismatch), and rebuilds them as they are otherwise", () => {
    const score = newScore();
    const settled = settledOf(score);
    const [first] = settled.keys();
    settled.set(first, { ...settled.get(first)!, checkins: 25 });
    const c = columns(score, settled);
    expect(() => scoreRowOf(c, { strict: true }))
      .to.throw()
      .with.property("code", "score_inputs_mismatch");
    const loose = scoreRowOf(c, { strict: false });
    expect(loose.inputs).to.not.equal(score.inputs);
    expect(loose.inputs).to.equal(
      canonicalScoreInputs({ ...score.document!, days: score.document!.days.map((d) => (d.day === first ? { ...d, checkins: 25 } : d)) }),
    );
    // A settled day that has no line any more cannot be rebuilt at all.
    settled.delete(first);
    expect(() => scoreRowOf(columns(score, settled), { strict: false }))
      .to.throw()
      .with.property("code", "score_facts_missing_day");
  });
});
