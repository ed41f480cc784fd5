import { expect } from "chai";
import { applyVerdict, adjustNetworkScore, type VERDICT_ADJUSTMENTS } from "./verdict";

function settle(scores: Map<string, number>, executor: string, requester: string, verdict: keyof typeof VERDICT_ADJUSTMENTS) {
  for (const [agent, score] of applyVerdict((a) => scores.get(a) ?? 0, { executor, requester, verdict })) scores.set(agent, score);
  return scores;
}

describe("verdict arithmetic (part N)", () => {
  it("applies executor / requester adjustments in tenths", () => {
    const s = new Map<string, number>();
    settle(s, "e", "r", "FULFILLED");
    expect([s.get("e"), s.get("r")]).to.deep.equal([30, 15]);
    settle(s, "e", "r", "PARTIAL");
    expect([s.get("e"), s.get("r")]).to.deep.equal([35, 20]);
    settle(s, "e", "r", "LEGACY");
    expect([s.get("e"), s.get("r")]).to.deep.equal([55, 30]);
    settle(s, "e", "r", "VIOLATED");
    expect([s.get("e"), s.get("r")]).to.deep.equal([5, 20]);
  });

  it("clamps after each adjustment, so a VIOLATED at 0 stays 0 and a later FULFILLED starts from 0", () => {
    const s = settle(new Map(), "e", "r", "VIOLATED");
    expect([s.get("e"), s.get("r")]).to.deep.equal([0, 0]);
    settle(s, "e", "r", "FULFILLED");
    expect(s.get("e")).to.equal(30);
    expect(adjustNetworkScore(990, 30)).to.equal(1000);
  });

  it("adjusts an agent that is both executor and requester twice, executor first", () => {
    expect(settle(new Map([["a", 100]]), "a", "a", "FULFILLED").get("a")).to.equal(145);
    expect(settle(new Map([["a", 100]]), "a", "a", "VIOLATED").get("a")).to.equal(40);
    expect(settle(new Map([["a", 55]]), "a", "a", "VIOLATED").get("a")).to.equal(0);
    expect(settle(new Map([["a", 990]]), "a", "a", "FULFILLED").get("a")).to.equal(1000);
  });
});
