import { expect } from "chai";
import fc from "fast-check";
import { writeDecimal } from "./decimal";

describe("writeDecimal", () => {
  it("writes the bytes a template literal prints, for every safe integer and -0 (property)", () => {
    const edges = Array.from({ length: 16 }, (_, d) => [10 ** d - 1, 10 ** d, 1 - 10 ** d, -(10 ** d)]).flat();
    const safe = fc.oneof(
      fc.integer(),
      fc.maxSafeInteger(),
      fc.constantFrom(...edges, -0, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER),
    );
    fc.assert(
      fc.property(safe, fc.integer({ min: 0, max: 8 }), (n, at) => {
        const target = new Uint8Array(40).fill(0x2e);
        const end = writeDecimal(target, at, n);
        expect(end).to.equal(at + `${n}`.length);
        expect(Buffer.from(target).toString("latin1")).to.equal(`${".".repeat(at)}${n}${".".repeat(40 - end)}`);
      }),
      { numRuns: 2000 },
    );
  });

  it("writes nothing and returns -1 for a number that is not a safe integer, or that does not fit", () => {
    const target = new Uint8Array(6).fill(0x2e);
    for (const n of [0.5, -1.5, 2 ** 53, -(2 ** 53), NaN, Infinity, 1e21]) expect(writeDecimal(target, 0, n), String(n)).to.equal(-1);
    expect(writeDecimal(target, 1, 123456)).to.equal(-1);
    expect(writeDecimal(target, 0, -12345)).to.equal(6);
    expect(writeDecimal(target, 1, -12345)).to.equal(-1);
    expect(Buffer.from(target).toString("latin1")).to.equal("-12345");
  });
});
