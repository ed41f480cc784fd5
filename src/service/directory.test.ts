import { expect } from "chai";
import { BANDS, bandOf } from "../method";
import { bandTotals, decodeCursor, encodeCursor } from "./directory";

describe("directory cursors and bands", () => {
  it("decodes what it encodes, both directions", () => {
    for (const position of [{ direction: "after", total: 0, agentId: "agt_a" }, { direction: "before", total: 1000, agentId: "agt_Z-9_x" }] as const) {
      const cursor = encodeCursor(position);
      expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor)).to.deep.equal(position);
    }
  });

  it("refuses text it did not make: not base64url, another shape, a total over 1000, an impossible id", () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64url");
    for (const cursor of ["", "a+b/", "x".repeat(121), b64("c:200:agt_x"), b64("a:01:agt_x"), b64("a:1001:agt_x"), b64("a:-1:agt_x"), b64("a:200:"), b64("a:200:agt x"), b64("a:200:" + "x".repeat(65))]) {
      expect(decodeCursor(cursor), cursor).to.equal(null);
    }
  });

  it("gives each V8 band as the range of totals it names", () => {
    for (const band of BANDS) {
      const { min, max } = bandTotals(band);
      expect([bandOf(min), bandOf(max)]).to.deep.equal([band, band]);
      if (max < 1000) expect(bandOf(max + 1)).to.not.equal(band);
    }
  });
});
