import { expect } from "chai";
import { rejectionMessage } from "../test-helpers/rejection";
import { asArray, asInteger, asNumber, asObject, asOneOf, asString, describe as described, onlyKeys } from "./shape";

/** The message `check` throws (with code "c"), or null when it does not. */
const message = (check: () => unknown) => rejectionMessage(check, "c");

describe("shape checks: each failure names its path and what it found", () => {
  it("describes what was found", () => {
    expect(
      [undefined, null, [1], "x".repeat(40), "x".repeat(41), 1.5, false, { a: 1 }, 10n, () => 1].map((v) => described(v)),
    ).to.deep.equal([
      "nothing",
      "null",
      "an array",
      JSON.stringify("x".repeat(40)),
      "a string",
      "1.5",
      "false",
      "an object",
      "bigint",
      "function",
    ]);
  });

  it("takes a plain object, an array, a string, a whole number, a number or one of a list, and rejects anything else", () => {
    expect(asObject("c", { a: 1 }, "p")).to.deep.equal({ a: 1 });
    expect(message(() => asObject("c", null, "p"))).to.equal("p: expected an object, got null");
    expect(message(() => asObject("c", [], "p"))).to.equal("p: expected an object, got an array");
    expect(message(() => asObject("c", "o", "p"))).to.equal('p: expected an object, got "o"');
    expect(asArray("c", [1], "p")).to.deep.equal([1]);
    expect(message(() => asArray("c", { length: 0 }, "p"))).to.equal("p: expected an array, got an object");
    expect(asString("c", "s", "p")).to.equal("s");
    expect(asString("c", "", "p", true)).to.equal("");
    expect(message(() => asString("c", "", "p"))).to.equal('p: expected a non-empty string, got ""');
    expect(message(() => asString("c", 1, "p", true))).to.equal("p: expected a string, got 1");
    expect(asInteger("c", 0, "p")).to.equal(0);
    expect(asInteger("c", 5, "p", 5, 5)).to.equal(5);
    expect(message(() => asInteger("c", -1, "p"))).to.equal("p: expected a whole number >= 0, got -1");
    expect(message(() => asInteger("c", 4, "p", 5, 9))).to.equal("p: expected a whole number in 5..9, got 4");
    expect(message(() => asInteger("c", 10, "p", 5, 9))).to.equal("p: expected a whole number in 5..9, got 10");
    expect(message(() => asInteger("c", "7", "p"))).to.equal('p: expected a whole number >= 0, got "7"');
    expect(message(() => asInteger("c", 2 ** 53, "p"))).to.equal(`p: expected a whole number >= 0, got ${2 ** 53}`);
    // A number in range that is not whole: refused for what it is, not for its range.
    expect(message(() => asInteger("c", 6.5, "p", 5, 9))).to.equal("p: expected a whole number in 5..9, got 6.5");
    expect(message(() => asInteger("c", Number.NaN, "p"))).to.equal("p: expected a whole number >= 0, got NaN");
    expect(asNumber("c", -0.5, "p")).to.equal(-0.5);
    expect(message(() => asNumber("c", "1", "p"))).to.equal('p: expected a number, got "1"');
    expect(asOneOf("c", "b", "p", ["a", "b"])).to.equal("b");
    expect(message(() => asOneOf("c", "z", "p", ["a", "b"]))).to.equal('p: expected a|b, got "z"');
    expect(message(() => asOneOf("c", 1, "p", ["a", "b"]))).to.equal("p: expected a|b, got 1");
    expect(message(() => onlyKeys("c", { a: 1, b: 2 }, "p", ["a"]))).to.equal("p.b: unknown field");
    expect(message(() => onlyKeys("c", { a: 1 }, "p", ["a", "b"]))).to.equal(null);
  });
});
