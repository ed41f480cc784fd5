import { expect } from "chai";
import fc from "fast-check";
import type { ScoreSummary } from "../service/ports";
import { buildScoreInputs, scoreFromInputs } from "../method";
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

  it("gives back exactly the summary it was given: binary fields and the deflated result text", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    const window = Array.from({ length: 30 }, (_, d) => `{"day":"2026-10-${String(d + 1).padStart(2, "0")}","checkins":24,"on_time":${20 + (d % 5)},"coverage_s":86400,"before_claim":false}`);
    const daily: ScoreSummary = { ...score("a", 2 ** 40 + 3, 1_793_923_200, `{"total":612,"window":[${window.join(",")}],"note":"é ✓"}`), trigger: "daily", day: "2026-11-05", total: 612 };
    cache.offerRead("a", daily, cache.mark());
    cache.offerRead("b", score("b", 7, 1_793_923_201, '{"total":3}'), cache.mark());
    cache.offerRead("c", null, cache.mark());
    expect(cache.get("a")).to.deep.equal(daily);
    expect(cache.get("b")).to.deep.equal(score("b", 7, 1_793_923_201, '{"total":3}'));
    expect(cache.get("c")).to.equal(null);
    // Emptied, it starts again with another dictionary (the first result it keeps next).
    cache.invalidate("all");
    cache.offerRead("b", score("b", 8, 1_793_923_300, '{"other":[1,2,3]}'), cache.mark());
    cache.offerRead("a", daily, cache.mark());
    expect([cache.get("a"), cache.get("b")?.resultJson]).to.deep.equal([daily, '{"other":[1,2,3]}']);
  });

  it("stays within its memory: never charges more than maxBytes, and when full drops the oldest entries first, many at once", () => {
    const maxBytes = 64 * 1024;
    const cache = createScoreCache({ maxBytes });
    // Results that do not deflate to nothing: 300 pseudo-random hex digits each.
    const noise = (i: number) => Array.from({ length: 40 }, (_, k) => ((i * 2654435761 + k * 40503) >>> 0).toString(16).padStart(8, "0")).join("").slice(0, 300);
    const ids = Array.from({ length: 2000 }, (_, i) => `agt_${String(i).padStart(6, "0")}`);
    for (const [i, id] of ids.entries()) {
      cache.offerRead(id, score(id, i + 1, 100, `{"n":"${noise(i)}"}`), cache.mark());
      expect(cache.stats().bytes).to.be.at.most(maxBytes);
    }
    const { entries, evictions } = cache.stats();
    expect(entries).to.be.greaterThan(50).and.lessThan(2000);
    // One eviction drops a whole segment's entries (a 32nd of the cache), not one entry at a time.
    expect(evictions).to.be.greaterThan(0);
    expect((2000 - entries) / evictions).to.be.at.least(5);
    // What is kept is the newest entries, each as it was given.
    const kept = ids.filter((id) => cache.get(id) !== undefined);
    expect(kept).to.deep.equal(ids.slice(ids.length - entries));
    expect(cache.get(ids[1999])?.resultJson).to.equal(`{"n":"${noise(1999)}"}`);
    // Replacing entries (the daily recompute writing every agent again) keeps within the cap too.
    for (const [i, id] of kept.entries()) cache.offerWrite(score(id, 5000 + i, 200, `{"n":"${noise(i + 7)}"}`), cache.mark());
    expect(cache.stats().bytes).to.be.at.most(maxBytes);
    expect(cache.get(kept[kept.length - 1])?.id).to.equal(5000 + kept.length - 1);
  });

  it("does not keep an entry larger than the whole cache", () => {
    const cache = createScoreCache({ maxBytes: 1000 });
    cache.offerRead("a", score("a", 1, 100, "x".repeat(2000)), cache.mark());
    expect(cache.stats()).to.include({ entries: 0, bytes: 0 });
  });

  it("refuses, after an eviction, answers sent before it (the agent may have been overtaken meanwhile)", () => {
    const cache = createScoreCache({ maxBytes: 32 * 1024 });
    let i = 0;
    let before = cache.mark();
    while (cache.stats().evictions === 0) {
      before = cache.mark();
      const id = `a${i++}`;
      cache.offerRead(id, score(id, i, 100, `{"i":${i * 7919}}`), cache.mark());
    }
    cache.offerRead("c", score("c", 1, 100), before);
    expect(cache.get("c")).to.equal(undefined);
    cache.offerRead("c", score("c", 1, 100), cache.mark());
    expect(cache.get("c")?.id).to.equal(1);
  });

  // The id index (open addressing in typed arrays) against a Map: ids that collide in their home slot,
  // drops in the middle of probe runs, and the index growing from its first slots to thousands.
  it("answers for every agent what a Map of the same operations would, through growth and drops (property)", () => {
    type Op = { kind: "read" | "write" | "none" | "drop"; agent: number; at: number };
    const op = fc.record({ kind: fc.constantFrom("read", "write", "none", "drop"), agent: fc.nat(1499), at: fc.nat(50) }) as fc.Arbitrary<Op>;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 2500 }), (ops) => {
        const cache = createScoreCache({ maxBytes: 64 << 20 });
        const model = new Map<string, ScoreSummary | null>();
        let id = 0;
        for (const o of ops) {
          const agentId = `agt_${o.agent.toString(16).padStart(4, "0")}`;
          const seen = model.get(agentId);
          if (o.kind === "drop") {
            cache.invalidate([agentId]);
            model.delete(agentId);
          } else if (o.kind === "none") {
            cache.offerRead(agentId, null, cache.mark());
            if (!model.has(agentId)) model.set(agentId, null);
          } else {
            const s = score(agentId, ++id, o.at, `{"total":${id}}`);
            if (o.kind === "read") cache.offerRead(agentId, s, cache.mark());
            else cache.offerWrite(s, cache.mark());
            if (seen === undefined || seen === null || s.at > seen.at || (s.at === seen.at && s.id > seen.id)) model.set(agentId, s);
          }
        }
        expect(cache.stats()).to.include({ entries: model.size, evictions: 0 });
        for (let agent = 0; agent < 1500; agent++) {
          const agentId = `agt_${agent.toString(16).padStart(4, "0")}`;
          expect(cache.get(agentId)).to.deep.equal(model.get(agentId));
        }
      }),
      { numRuns: 25, seed: 18 },
    );
  });

  it("under eviction, answers each agent its latest score or nothing, never another's or an older one", () => {
    const cache = createScoreCache({ maxBytes: 64 * 1024 });
    const latest = new Map<string, ScoreSummary>();
    for (let i = 1; i <= 8_000; i++) {
      const agentId = `agt_${((i * 7919) % 1500).toString(16)}`;
      const s = score(agentId, i, i, `{"total":${i},"pad":"${"x".repeat(i % 200)}"}`);
      cache.offerWrite(s, cache.mark());
      latest.set(agentId, s);
      if (i % 3 === 0) cache.invalidate([`agt_${((i * 31) % 1500).toString(16)}`]);
      expect(cache.stats().bytes).to.be.at.most(64 * 1024);
    }
    const { entries, evictions } = cache.stats();
    expect(evictions).to.be.greaterThan(10);
    expect(entries).to.be.greaterThan(100);
    let found = 0;
    for (const [agentId, s] of latest) {
      const got = cache.get(agentId);
      if (got !== undefined) {
        expect(got).to.deep.equal(s);
        found++;
      }
    }
    expect(found).to.equal(entries);
  });

  it("gives back the same summary whether its result came with its value (kept by src/store/score-result-codec.ts) or as text only (deflated)", () => {
    const document = buildScoreInputs({ agent: "agt_a", method: "0.2", at: 1_793_577_600, claimedAt: 1_793_577_600 - 40 * 86_400, proofs: [{ kind: "github" }], penalties: [], days: [
      { day: "2026-10-20", checkins: 24, onTime: 24, creditS: 86_400, coverageS: 86_400, digest: "ab".repeat(32) },
    ] });
    const { result, sha256 } = scoreFromInputs(document);
    const summary = { ...score("agt_a", 7, 1_793_577_600, JSON.stringify(result)), sha256, total: result.total };
    const coded = createScoreCache({ maxBytes: 1 << 20 });
    coded.offerWrite({ ...summary, result }, coded.mark());
    const deflated = createScoreCache({ maxBytes: 1 << 20 });
    deflated.offerWrite({ ...summary, agentId: "agt_b" }, deflated.mark());
    deflated.offerWrite(summary, deflated.mark());
    expect(coded.get("agt_a")).to.deep.equal(summary);
    expect(deflated.get("agt_a")).to.deep.equal(summary);
  });
});
