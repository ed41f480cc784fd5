import { expect } from "chai";
import fc from "fast-check";
import { canonicalJson, sha256Hex } from "./canonical";
import { jcsVectors } from "../test-helpers/jcs";

describe("canonical JSON and digests (V9)", () => {
  const vectors = jcsVectors();

  it("finds the RFC 8785 vectors", () => {
    expect(vectors.map((v) => v.name)).to.include.members([
      "arrays.json",
      "french.json",
      "structures.json",
      "unicode.json",
      "values.json",
      "weird.json",
    ]);
  });

  for (const v of vectors) {
    it(`canonicalises the RFC 8785 vector ${v.name} byte for byte`, () => {
      const bytes = Buffer.from(canonicalJson(JSON.parse(v.input)), "utf8");
      expect(bytes.equals(v.output)).to.equal(true, `${bytes.toString()} != ${v.output.toString()}`);
    });
  }

  it("hashes UTF-8 bytes with SHA-256 in lowercase hex", () => {
    expect(sha256Hex("")).to.equal("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("é")).to.equal(sha256Hex(Buffer.from("é", "utf8")));
  });

  it("rejects values JSON cannot hold", () => {
    expect(() => canonicalJson({ x: Number.NaN }))
      .to.throw(/NaN/)
      .with.property("code", "not_canonicalizable");
    expect(() => canonicalJson(undefined))
      .to.throw(/no JSON form/)
      .with.property("code", "not_canonicalizable");
  });

  it('rejects a lone surrogate anywhere (RFC 8785 3.2.2.2), and keeps pairs and a backslash written before "ud800"', () => {
    for (const value of ["\ud800", "a\udfffb", { k: ["x", "\udbff"] }, { "\udc00": 1 }, "\\\ud800"]) {
      expect(() => canonicalJson(value), JSON.stringify(value))
        .to.throw(/lone surrogate/)
        .with.property("code", "not_canonicalizable");
    }
    expect(canonicalJson("\ud83d\ude00")).to.equal('"\u{1F600}"');
    expect(canonicalJson("\\ud800")).to.equal('"\\\\ud800"');
    expect(canonicalJson({ b: "\\\\ud800", a: "\u00e9" })).to.equal('{"a":"\u00e9","b":"\\\\\\\\ud800"}');
  });

  it("gives a digest independent of key order (property)", () => {
    const shuffle = (value: unknown, seed: number): unknown => {
      if (Array.isArray(value)) return value.map((v, i) => shuffle(v, seed + i));
      if (value !== null && typeof value === "object") {
        const entries = Object.entries(value);
        const rotated = entries.map((_, i) => entries[(i + seed) % entries.length]).reverse();
        return Object.fromEntries(rotated.map(([k, v]) => [k, shuffle(v, seed + 1)]));
      }
      return value;
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(50), (value, seed) => {
        expect(sha256Hex(canonicalJson(shuffle(value, seed)))).to.equal(sha256Hex(canonicalJson(value)));
      }),
      { numRuns: 300 },
    );
  });
});

describe("canonical JSON errors (V9; STYLE: cause chains)", () => {
  it("keeps the serialiser's error as the cause of not_canonicalizable, with its message", () => {
    let error: unknown;
    try {
      canonicalJson({ a: [1, Number.POSITIVE_INFINITY] });
    } catch (e) {
      error = e;
    }
    expect(error).to.have.property("code", "not_canonicalizable");
    expect(error).to.have.property("status", 400);
    const cause = (error as { cause?: unknown }).cause;
    expect(cause).to.be.instanceOf(Error);
    expect((error as Error).message).to.equal(`cannot canonicalise: ${(cause as Error).message}`);
  });
});
