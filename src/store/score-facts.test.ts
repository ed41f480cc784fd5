import { expect } from "chai";
import { buildScoreInputs, canonicalScoreInputs, DAY_S, dayStart, utcDay, type DayAggregate, type ScoreInputs } from "../method";
import { decodeScoreFacts, encodeScoreFacts, isSettledDay, settledDaysOf, type SettledDay } from "./score-facts";

const AT = Date.UTC(2026, 11, 1) / 1000; // a daily score: 2026-12-01T00:00:00Z

/** A seeded generator, so a failure names a reproducible case. */
function random(seed: number) {
  return () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
}

/** The facts of an agent claimed `claimDaysAgo` days before `at`, checking in on random days, with random proofs and penalties. */
function randomInputs(rnd: () => number, at: number): ScoreInputs {
  const claimedAt = at - Math.floor(rnd() * 45 * DAY_S) - 1;
  const days: DayAggregate[] = [];
  for (let t = dayStart(utcDay(claimedAt)); t <= at; t += DAY_S) {
    if (rnd() < 0.2) continue;
    const checkins = rnd() < 0.1 ? 0 : 1 + Math.floor(rnd() * 30);
    const onTime = Math.floor(rnd() * (checkins + 1));
    days.push({
      day: utcDay(t),
      checkins,
      onTime,
      creditS: onTime === 0 ? 0 : Math.floor(rnd() * 100_000),
      coverageS: checkins === 0 ? 1 + Math.floor(rnd() * DAY_S) : Math.floor(rnd() * DAY_S),
      digest: checkins === 0 ? "" : Buffer.from(Array.from({ length: 32 }, () => Math.floor(rnd() * 256))).toString("hex"),
    });
  }
  const kinds = (["github", "wallet", "domain", "erc8004"] as const).filter(() => rnd() < 0.5);
  const penalties = Array.from({ length: Math.floor(rnd() * 3) }, (_, i) => ({
    id: `pen_${i}_é${Math.floor(rnd() * 1e6)}`,
    code: (["rate_abuse", "rule_violation", "impersonation"] as const)[i % 3],
    points: 10 + Math.floor(rnd() * 41),
    days: 30 + Math.floor(rnd() * 151),
    addedAt: at - Math.floor(rnd() * 20 * DAY_S),
    revokedAt: null,
  }));
  return buildScoreInputs({
    agent: `agt_${Math.floor(rnd() * 1e9)}`,
    method: "0.2",
    at,
    claimedAt,
    proofs: kinds.map((kind) => ({ kind })),
    penalties,
    days,
  });
}

/** The agent_days rows a decoder would read: the document's own lines of its settled days. */
function settledOf(inputs: ScoreInputs, at: number): Map<string, SettledDay> {
  return new Map(
    inputs.days
      .filter((d) => isSettledDay(d.day, at))
      .map((d) => [d.day, { checkins: d.checkins, onTime: d.on_time, creditS: d.credit_s, digest: d.digest }]),
  );
}

describe("compact score facts (migration 010, V9)", () => {
  it("rebuilds every document byte for byte from its compact form and its settled days, at midnight and during the day", () => {
    const rnd = random(7);
    for (let i = 0; i < 300; i++) {
      const at = AT + (i % 3 === 0 ? 0 : Math.floor(rnd() * DAY_S));
      const inputs = randomInputs(rnd, at);
      const facts = encodeScoreFacts(inputs, at);
      const rebuilt = decodeScoreFacts(facts, { agent: inputs.agent, method: inputs.method, at }, settledOf(inputs, at));
      expect(canonicalScoreInputs(rebuilt), `case ${i}`).to.equal(canonicalScoreInputs(inputs));
      expect(settledDaysOf(facts, at)).to.deep.equal(inputs.days.filter((d) => isSettledDay(d.day, at)).map((d) => d.day));
    }
  });

  it("keeps a month of hourly check-ins in a few hundred bytes, against about 5 KB of canonical text", () => {
    const days: DayAggregate[] = [];
    for (let t = AT - 31 * DAY_S; t < AT; t += DAY_S)
      days.push({ day: utcDay(t), checkins: 24, onTime: 24, creditS: 86_400, coverageS: 86_400, digest: "ab".repeat(32) });
    const inputs = buildScoreInputs({
      agent: "agt_0123456789abcdef",
      method: "0.2",
      at: AT,
      claimedAt: AT - 40 * DAY_S,
      proofs: [{ kind: "wallet" }],
      penalties: [],
      days,
    });
    const facts = encodeScoreFacts(inputs, AT);
    expect(canonicalScoreInputs(inputs).length).to.be.greaterThan(4_000);
    // 30 days of position, flags and coverage, and the last day's whole line with its digest.
    expect(facts.length).to.be.below(200);
  });

  it("keeps whole the lines of days that ended less than a day before at, and takes the others from the day aggregates", () => {
    expect(isSettledDay("2026-11-29", AT)).to.equal(true);
    expect(isSettledDay("2026-11-30", AT)).to.equal(false);
    expect(isSettledDay("2026-11-30", AT + DAY_S - 1)).to.equal(false);
    expect(isSettledDay("2026-11-30", AT + DAY_S)).to.equal(true);
  });

  it("refuses to rebuild without a settled day's aggregate, or from bytes it did not write", () => {
    const inputs = randomInputs(random(3), AT);
    const facts = encodeScoreFacts(inputs, AT);
    const score = { agent: inputs.agent, method: inputs.method, at: AT };
    const settled = settledOf(inputs, AT);
    expect(settled.size).to.be.greaterThan(0);
    const missing = new Map(settled);
    missing.delete([...settled.keys()][0]);
    expect(() => decodeScoreFacts(facts, score, missing)).to.throw(/day aggregate of .* is missing/);
    expect(() => decodeScoreFacts(facts.subarray(0, facts.length - 1), score, settled)).to.throw(/end early|missing/);
    expect(() => decodeScoreFacts(Buffer.concat([facts, Buffer.from([0])]), score, settled)).to.throw(/trailing bytes/);
    expect(() => decodeScoreFacts(Buffer.from([9, ...facts.subarray(1)]), score, settled)).to.throw(/unknown version 9/);
  });
});
