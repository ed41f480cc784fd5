import { expect } from "chai";
import fc from "fast-check";
import { buildScoreInputs, packResult, renderResult, scoreFromInputs } from "../method";
import type { ScoreSummary } from "../service/ports";
import { createScoreCache } from "./score-cache";

const T0 = Date.UTC(2026, 10, 2) / 1000;

/**
 * A summary as the store reads it: a score the engine computed for `agentId` at `T0 + at` seconds,
 * its result packed and rendered; `days` check-in days make entries of other sizes.
 */
function score(
  agentId: string,
  id: number,
  at: number,
  days = 3,
  { proofs = ["github"], penalties = 0 }: { proofs?: Array<"github" | "wallet">; penalties?: number } = {},
): ScoreSummary {
  const when = T0 + at;
  const document = buildScoreInputs({
    agent: agentId,
    method: "0.2",
    at: when,
    claimedAt: when - 40 * 86_400,
    proofs: proofs.map((kind) => ({ kind })),
    penalties: Array.from({ length: penalties }, (_, p) => ({
      id: `pen_${p}`,
      code: "rate_abuse" as const,
      points: 10,
      days: 30,
      addedAt: when - 86_400,
      revokedAt: null,
    })),
    days: Array.from({ length: days }, (_, d) => ({
      day: new Date((when - (d + 1) * 86_400) * 1000).toISOString().slice(0, 10),
      checkins: 20 + ((id + d) % 5),
      onTime: 20,
      creditS: 72_000,
      coverageS: 80_000 + d,
      digest: "ab".repeat(32),
    })),
  });
  const { result, sha256 } = scoreFromInputs(document);
  const packed = packResult(result, when);
  if (packed === null) throw new Error("a result of the engine has a compact form");
  return {
    id,
    agentId,
    method: "0.2",
    at: when,
    trigger: "change",
    day: null,
    sha256,
    total: result.total,
    resultJson: renderResult(packed, { agentId, at: when, sha256, total: result.total }),
    packed,
  };
}

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
    cache.offerRead("a", score("a", 4, 100), cache.mark());
    cache.offerRead("a", score("a", 9, 99), cache.mark());
    cache.offerRead("a", null, cache.mark());
    expect(cache.get("a")).to.deep.equal(score("a", 5, 100));
    cache.offerRead("a", score("a", 6, 100), cache.mark());
    expect(cache.get("a")?.id).to.equal(6);
    cache.offerRead("a", score("a", 2, 101), cache.mark());
    expect(cache.get("a")?.id).to.equal(2);
  });

  it("a score replaces the answer that the agent had none", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    cache.offerRead("a", null, cache.mark());
    cache.offerRead("a", score("a", 1, 100), cache.mark());
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
    expect(cache.stats()).to.include({ entries: 0, enabled: false });
    cache.setEnabled(true);
    cache.offerRead("a", score("a", 1, 100), cache.mark());
    expect(cache.get("a")?.id).to.equal(1);
    cache.setEnabled(false);
    expect(cache.get("a")).to.equal(undefined);
    cache.setEnabled(true);
    expect(cache.get("a")).to.equal(undefined);
  });

  it("gives back exactly the summary it was given, its result rendered from the compact form it keeps", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    const daily: ScoreSummary = { ...score("a", 2 ** 40 + 3, 86_400, 30), trigger: "daily", day: "2026-11-02" };
    cache.offerRead("a", daily, cache.mark());
    cache.offerRead("b", score("b", 7, 1), cache.mark());
    cache.offerRead("c", null, cache.mark());
    expect(cache.get("a")).to.deep.equal(daily);
    expect(cache.get("b")).to.deep.equal(score("b", 7, 1));
    expect(cache.get("c")).to.equal(null);
  });

  it("samples agents with a score spread over its entries, none replaced, dropped or without a score (the warm-up's, issue #30)", () => {
    const cache = createScoreCache({ maxBytes: 1 << 22 });
    const s = score("x", 1, 100);
    const ids = Array.from({ length: 1000 }, (_, i) => `agt_${String(i).padStart(4, "0")}`);
    for (const id of ids) cache.offerRead(id, { ...s, agentId: id }, cache.mark());
    expect(cache.sample(10)).to.deep.equal(ids.filter((_, i) => i % 100 === 0));
    expect(cache.sample(0)).to.deep.equal([]);
    expect(cache.sample(5000)).to.deep.equal(ids);
    // agt_0000 dropped, agt_0100 replaced by a later score (its first entry no longer in use), agt_0200 without a score.
    cache.invalidate(["agt_0000"]);
    cache.offerRead("agt_0100", { ...s, agentId: "agt_0100", id: 2, at: s.at + 1 }, cache.mark());
    cache.invalidate(["agt_0200"]);
    cache.offerRead("agt_0200", null, cache.mark());
    const sample = cache.sample(10);
    expect(sample).to.have.length(10);
    expect(sample.slice(0, 3)).to.deep.equal(["agt_0001", "agt_0101", "agt_0201"]);
    for (const id of sample) expect(cache.get(id)?.agentId).to.equal(id);
    // All of them: each agent with a score once, agt_0100 by its later entry.
    const all = cache.sample(5000);
    expect(all).to.have.length(998);
    expect(new Set(all).size).to.equal(998);
    expect(all).to.include("agt_0100");
    expect(all).to.not.include("agt_0000");
    expect(all).to.not.include("agt_0200");
  });

  it("samples results of every shape it holds, however rare: with and without proofs and penalties (the warm-up's, issue #30)", () => {
    const cache = createScoreCache({ maxBytes: 1 << 22 });
    const ids = Array.from({ length: 1000 }, (_, i) => `agt_${String(i).padStart(4, "0")}`);
    // 990 with a proof and no penalty; 3 with a penalty, 7 without a proof, none of them where an even spread of ten or a
    // hundred falls, all where its candidates do (asked for ten, it reads the shapes of every fifth entry: 20 a pick).
    const penalised = ["agt_0015", "agt_0410", "agt_0915"];
    const unproven = ["agt_0035", "agt_0135", "agt_0235", "agt_0335", "agt_0435", "agt_0535", "agt_0635"];
    for (const id of ids)
      cache.offerRead(
        id,
        { ...score(id, 1, 100, 3, { proofs: unproven.includes(id) ? [] : ["github"], penalties: penalised.includes(id) ? 1 : 0 }) },
        cache.mark(),
      );
    const rendered = (id: string) => JSON.parse(cache.get(id)!.resultJson).components;
    expect(rendered("agt_0410").integrity.penalties).to.have.length(1);
    expect(rendered("agt_0035").identity.proofs).to.deep.equal([]);
    // Ten: one of each rare shape in place of two of the common one, the rest still every hundredth.
    const ten = cache.sample(10);
    expect(ten).to.have.length(10);
    expect(ten.filter((id) => penalised.includes(id))).to.have.length(1);
    expect(ten.filter((id) => unproven.includes(id))).to.have.length(1);
    expect(ten.filter((id) => Number(id.slice(4)) % 100 === 0)).to.have.length(8);
    expect([...ten].sort()).to.deep.equal(ten);
    // A hundred: a twentieth of each shape is 5; all 3 penalised, 5 of the 7 unproven.
    const hundred = cache.sample(100);
    expect(hundred).to.have.length(100);
    expect(new Set(hundred).size).to.equal(100);
    expect(penalised.filter((id) => hundred.includes(id))).to.deep.equal(penalised);
    expect(unproven.filter((id) => hundred.includes(id))).to.have.length(5);
    // One agent: one of the shapes, never more than asked.
    expect(cache.sample(1)).to.have.length(1);
  });

  it("keeps no score without a compact result (an old one kept as text that does not render back exactly): it is read each time", () => {
    const cache = createScoreCache({ maxBytes: 1 << 20 });
    cache.offerRead("a", { ...score("a", 1, 100), packed: null }, cache.mark());
    expect(cache.get("a")).to.equal(undefined);
  });

  it("stays within its memory: never charges more than maxBytes, and when full drops the oldest entries first, many at once", () => {
    const maxBytes = 64 * 1024;
    const cache = createScoreCache({ maxBytes });
    const ids = Array.from({ length: 2000 }, (_, i) => `agt_${String(i).padStart(6, "0")}`);
    for (const [i, id] of ids.entries()) {
      cache.offerRead(id, score(id, i + 1, 100, 1 + (i % 30)), cache.mark());
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
    expect(cache.get(ids[1999])).to.deep.equal(score(ids[1999], 2000, 100, 1 + (1999 % 30)));
    // Replacing entries (a later score of every agent) keeps within the cap too.
    for (const [i, id] of kept.entries()) cache.offerRead(id, score(id, 5000 + i, 200, 1 + (i % 30)), cache.mark());
    expect(cache.stats().bytes).to.be.at.most(maxBytes);
    expect(cache.get(kept[kept.length - 1])?.id).to.equal(5000 + kept.length - 1);
  });

  it("does not keep an entry larger than the whole cache", () => {
    const cache = createScoreCache({ maxBytes: 1000 });
    cache.offerRead("a", score("a", 1, 100, 30), cache.mark());
    expect(cache.stats()).to.include({ entries: 0, bytes: 0 });
  });

  it("refuses, after an eviction, answers sent before it (the agent may have been overtaken meanwhile)", () => {
    const cache = createScoreCache({ maxBytes: 32 * 1024 });
    let i = 0;
    let before = cache.mark();
    while (cache.stats().evictions === 0) {
      before = cache.mark();
      const id = `a${i++}`;
      cache.offerRead(id, score(id, i, 100, 10), cache.mark());
    }
    cache.offerRead("c", score("c", 1, 100), before);
    expect(cache.get("c")).to.equal(undefined);
    cache.offerRead("c", score("c", 1, 100), cache.mark());
    expect(cache.get("c")?.id).to.equal(1);
  });

  // The id index (src/store/id-index.ts) against a Map: ids that collide in their home slot, drops in
  // the middle of probe runs, and the index growing from its first slots to thousands.
  it("answers for every agent what a Map of the same operations would, through growth and drops (property)", () => {
    type Op = { kind: "read" | "none" | "drop"; agent: number; at: number };
    const op = fc.record({
      kind: fc.constantFrom("read", "read", "none", "drop"),
      agent: fc.nat(1499),
      at: fc.nat(50),
    }) as fc.Arbitrary<Op>;
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
            const s = score(agentId, ++id, o.at, 1);
            cache.offerRead(agentId, s, cache.mark());
            if (seen === undefined || seen === null || s.at > seen.at || (s.at === seen.at && s.id > seen.id)) model.set(agentId, s);
          }
        }
        expect(cache.stats()).to.include({ entries: model.size, evictions: 0 });
        for (let agent = 0; agent < 1500; agent++) {
          const agentId = `agt_${agent.toString(16).padStart(4, "0")}`;
          expect(cache.get(agentId)).to.deep.equal(model.get(agentId));
        }
      }),
      { numRuns: 10, seed: 18 },
    );
  });

  it("under eviction, answers each agent its latest score or nothing, never another's or an older one (fast-check, long random sequences: 5-20 s)", () => {
    const cache = createScoreCache({ maxBytes: 64 * 1024 });
    const latest = new Map<string, ScoreSummary>();
    for (let i = 1; i <= 8_000; i++) {
      const agentId = `agt_${((i * 7919) % 1500).toString(16)}`;
      const s = score(agentId, i, i, 1 + (i % 30));
      cache.offerRead(agentId, s, cache.mark());
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
});
