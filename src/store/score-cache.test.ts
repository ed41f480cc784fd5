import { expect } from "chai";
import type { ScoreSummary } from "../service/ports";
import { createScoreCache } from "./score-cache";

const score = (agentId: string, id: number, at: number, resultJson = '{"total":200}'): ScoreSummary => ({
  id, agentId, method: "0.2", at, trigger: "change", day: null, sha256: "ab".repeat(32), resultJson, total: 200,
});

describe("score cache", () => {
  it("keeps a read's answer and gives it back, counting hits and misses", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    expect(cache.get("a")).to.equal(undefined);
    cache.offerRead("a", score("a", 1, 100), cache.mark());
    cache.offerRead("b", null, cache.mark());
    expect(cache.get("a")).to.deep.equal(score("a", 1, 100));
    expect(cache.get("b")).to.equal(null);
    expect(cache.stats()).to.include({ entries: 2, hits: 2, misses: 1 });
  });

  it("replaces an entry only with a later score: a larger at, or the same at and a larger id", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    cache.offerRead("a", score("a", 5, 100), cache.mark());
    cache.offerWrite(score("a", 4, 100), cache.mark());
    cache.offerRead("a", score("a", 9, 99), cache.mark());
    cache.offerRead("a", null, cache.mark());
    expect(cache.get("a")).to.deep.equal(score("a", 5, 100));
    cache.offerWrite(score("a", 6, 100), cache.mark());
    expect(cache.get("a")?.id).to.equal(6);
    cache.offerRead("a", score("a", 2, 101), cache.mark());
    expect(cache.get("a")?.id).to.equal(2);
  });

  it("a score replaces the answer that the agent had none", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    cache.offerRead("a", null, cache.mark());
    cache.offerWrite(score("a", 1, 100), cache.mark());
    expect(cache.get("a")?.id).to.equal(1);
  });

  it("does not keep a read sent before a drop: it may be older than the change that caused it", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    const mark = cache.mark();
    cache.invalidate(["someone-else"]);
    cache.offerRead("a", score("a", 1, 100), mark);
    expect(cache.get("a")).to.equal(undefined);
    cache.offerRead("a", score("a", 1, 100), cache.mark());
    expect(cache.get("a")?.id).to.equal(1);
  });

  it("drops the entry of a write whose transaction began before a drop, instead of keeping either score", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    cache.offerRead("a", score("a", 1, 100), cache.mark());
    const mark = cache.mark();
    cache.invalidate("all");
    cache.offerRead("a", score("a", 3, 300), cache.mark());
    cache.offerWrite(score("a", 2, 200), mark);
    expect(cache.get("a")).to.equal(undefined);
    // And reads sent before that drop are not kept either.
    cache.offerRead("a", score("a", 3, 300), mark);
    expect(cache.get("a")).to.equal(undefined);
  });

  it("drops the agents named, or every agent", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    for (const id of ["a", "b", "c"]) cache.offerRead(id, score(id, 1, 100), cache.mark());
    cache.invalidate(["a", "c", "unknown"]);
    expect([cache.get("a"), cache.get("b")?.id, cache.get("c")]).to.deep.equal([undefined, 1, undefined]);
    cache.invalidate("all");
    expect(cache.stats()).to.include({ entries: 0, bytes: 0 });
  });

  it("answers nothing and keeps nothing while off, and starts empty when turned on again", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20, enabled: false });
    cache.offerRead("a", score("a", 1, 100), cache.mark());
    cache.offerWrite(score("b", 1, 100), cache.mark());
    expect(cache.stats()).to.include({ entries: 0, enabled: false });
    cache.setEnabled(true);
    cache.offerRead("a", score("a", 1, 100), cache.mark());
    expect(cache.get("a")?.id).to.equal(1);
    cache.setEnabled(false);
    expect(cache.get("a")).to.equal(undefined);
    cache.setEnabled(true);
    expect(cache.get("a")).to.equal(undefined);
  });

  it("stays within its memory: when full, the oldest tenth goes, and the bytes are accounted exactly", () => {
    const result = "x".repeat(600);
    const one = 400 + result.length + 64;
    const cache = createScoreCache({ maxBytes: one * 100 });
    for (let i = 0; i < 100; i++) cache.offerRead(`a${i}`, score(`a${i}`, i, 100, result), cache.mark());
    expect(cache.stats()).to.include({ entries: 100, bytes: one * 100 });
    cache.offerRead("new", score("new", 1000, 100, result), cache.mark());
    expect(cache.stats()).to.include({ entries: 91, bytes: one * 91 });
    expect(cache.get("a0")).to.equal(undefined);
    expect(cache.get("a9")).to.equal(undefined);
    expect(cache.get("a10")?.id).to.equal(10);
    expect(cache.get("new")?.id).to.equal(1000);
    // A replaced entry moves to the back of the eviction order, and its bytes are re-counted.
    cache.offerWrite(score("a10", 2000, 200, "y".repeat(100)), cache.mark());
    expect(cache.stats().bytes).to.equal(one * 90 + 400 + 100 + 64);
  });

  it("does not keep an entry larger than the whole cache", () => {
    const cache = createScoreCache({ maxBytes: 1000 });
    cache.offerRead("a", score("a", 1, 100, "x".repeat(2000)), cache.mark());
    expect(cache.stats()).to.include({ entries: 0, bytes: 0 });
  });

  it("refuses, after an eviction, answers sent before it (the agent may have been overtaken meanwhile)", () => {
    const cache = createScoreCache({ maxBytes: (400 + 13 + 64) * 10 });
    for (let i = 0; i < 10; i++) cache.offerRead(`a${i}`, score(`a${i}`, i, 100), cache.mark());
    const before = cache.mark();
    cache.offerRead("b", score("b", 1, 100), cache.mark());
    cache.offerRead("c", score("c", 1, 100), before);
    expect(cache.get("c")).to.equal(undefined);
  });
});
