import { expect } from "chai";
import { BANDS, bandOf } from "../method";
import { bandTotals, decodeCursor, encodeCursor } from "./directory";

describe("directory cursors and bands", () => {
  it("decodes what it encodes, both directions", () => {
    for (const position of [
      { direction: "after", total: 0, agentId: "agt_a" },
      { direction: "before", total: 1000, agentId: "agt_Z-9_x" },
    ] as const) {
      const cursor = encodeCursor(position, {});
      expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
      expect(decodeCursor(cursor, {})).to.deep.equal(position);
      // Only under the filter it was made for (issue #33).
      expect(decodeCursor(cursor, { band: "0-199" })).to.equal(null);
      expect(decodeCursor(encodeCursor(position, { state: "established", q: "x" }), { state: "established", q: "x" })).to.deep.equal(
        position,
      );
      expect(decodeCursor(encodeCursor(position, { state: "established", q: "x" }), { state: "established", q: "y" })).to.equal(null);
    }
  });

  it("refuses text it did not make: not base64url, another shape, a total over 1000, an impossible id", () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64url");
    const list = (text: string) =>
      b64(
        Buffer.from(encodeCursor({ direction: "after", total: 0, agentId: "a" }, {}), "base64url")
          .toString()
          .split(":")[0] +
          ":" +
          text,
      );
    expect(decodeCursor(list("a:200:agt_x"), {})).to.deep.equal({ direction: "after", total: 200, agentId: "agt_x" });
    for (const cursor of [
      "",
      "a+b/",
      "x".repeat(121),
      b64("a:200:agt_x"),
      list("c:200:agt_x"),
      list("a:01:agt_x"),
      list("a:1001:agt_x"),
      list("a:-1:agt_x"),
      list("a:200:"),
      list("a:200:agt x"),
      list(`a:200:${"x".repeat(65)}`),
    ]) {
      expect(decodeCursor(cursor, {}), cursor).to.equal(null);
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
