import { expect } from "chai";
import fc from "fast-check";
import { MAX_DEPTH, textProblem } from "./well-formed";

const NOT_TEXT = "must not contain NUL, unpaired surrogates or U+FFFD (invalid UTF-8)";
const nested = (depth: number): unknown => JSON.parse("[".repeat(depth) + "]".repeat(depth));

describe("the text check every request part passes (well-formed.ts)", () => {
  it("takes any text, surrogate pairs included, and values that are not strings", () => {
    for (const value of [
      "",
      "plain",
      "emoji 😀 and 𝄞",
      "é\u0001\u007f\uFEFF",
      0,
      -1e308,
      true,
      null,
      undefined,
      { a: ["b", { c: "😀" }] },
      nested(MAX_DEPTH),
    ]) {
      expect(textProblem(value, "body"), JSON.stringify(value)).to.equal(null);
    }
  });

  it("names the first field holding NUL, a lone surrogate of either half or U+FFFD", () => {
    const cases: Array<[unknown, string]> = [
      ["a\u0000", "header"],
      [{ name: "\ud800" }, "body.name"],
      [{ name: "x\udc00" }, "body.name"],
      [{ name: "\udc00\ud800" }, "body.name"],
      [{ name: "ok", records: [{ a: 1 }, { executor: "\uFFFD" }] }, "body.records.1.executor"],
      [{ q: ["ok", "a\u0000"] }, "body.q.1"],
    ];
    for (const [value, field] of cases) expect(textProblem(value, field.split(".")[0]), field).to.equal(`${field}: ${NOT_TEXT}`);
  });

  it("names the object whose key is not text", () => {
    expect(textProblem({ evidence: { "k\u0000": 1 } }, "body")).to.equal(`body.evidence: a key ${NOT_TEXT}`);
    expect(textProblem({ "\ud83d": 1 }, "query")).to.equal(`query: a key ${NOT_TEXT}`);
  });

  it(`refuses JSON nested deeper than ${MAX_DEPTH} levels without recursing, however deep`, () => {
    expect(textProblem(nested(MAX_DEPTH + 1), "body")).to.equal(`body${".0".repeat(MAX_DEPTH)}: nested deeper than ${MAX_DEPTH} levels`);
    // Deeper than any recursion could go: 32 kB of body nests about 16,000 levels.
    expect(textProblem(nested(100_000), "body")).to.match(/nested deeper than 32 levels$/);
  });

  it("takes every string of scalar values and refuses it with NUL or a lone surrogate put anywhere (property, seeded)", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 40 }).filter((s) => !s.includes("\u0000") && !s.includes("\uFFFD"));
    const bad = fc.constantFrom("\u0000", "\ud800", "\udbff", "\udc00", "\udfff", "\uFFFD");
    fc.assert(
      fc.property(text, bad, fc.nat(), (s, b, at) => {
        const i = at % (s.length + 1);
        // Between code points: a half put between the halves of a pair would pair up with one of them.
        const cut = i > 0 && i < s.length && /[\ud800-\udbff]/.test(s[i - 1]) ? i + 1 : i;
        expect(textProblem({ field: s }, "body")).to.equal(null);
        expect(textProblem({ field: s.slice(0, cut) + b + s.slice(cut) }, "body")).to.equal(`body.field: ${NOT_TEXT}`);
      }),
      { seed: 15, numRuns: 500 },
    );
  });
});
