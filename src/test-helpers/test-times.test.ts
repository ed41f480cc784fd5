import { expect } from "chai";
import { SLOW_TEST_MS, saysWhyItIsSlow } from "./test-times";

describe("test times: a test over 10 s says why in its name (issue #30)", () => {
  it("lets a fast test be named anyhow", () => {
    expect(saysWhyItIsSlow("adds an operator", SLOW_TEST_MS)).to.equal(true);
  });

  it("asks a slow test for a last parenthesis naming a time", () => {
    expect(saysWhyItIsSlow("adds an operator", SLOW_TEST_MS + 1)).to.equal(false);
    expect(saysWhyItIsSlow("refuses it (issue #33)", 20_000)).to.equal(false);
    expect(saysWhyItIsSlow("refuses it (issue #33) (vrai serve on PGlite, then three CLI runs: 10-20 s)", 20_000)).to.equal(true);
    expect(saysWhyItIsSlow("runs the walkthrough (about a minute, npm ci half of it)", 90_000)).to.equal(true);
    expect(saysWhyItIsSlow("stops cleanly, ten tries in a row (80-100 s)", 90_000)).to.equal(true);
    // The time must be in the last parenthesis, at the end of the name.
    expect(saysWhyItIsSlow("starts (5-10 s) and stops", 20_000)).to.equal(false);
  });
});
