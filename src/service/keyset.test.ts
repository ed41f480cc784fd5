import { expect } from "chai";
import { decodeKeyset, encodeKeyset, keysetPage, parseKeyset, type CursorList } from "./keyset";

const KEY = /^(0|[1-9]\d*):([a-z_]+)$/;
const OUTAGES: CursorList = { kind: "outages" };

describe("keyset cursors", () => {
  it("decodes the fields it encodes, as opaque base64url text", () => {
    const cursor = encodeKeyset(OUTAGES, [1767225600, "out_a"]);
    expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
    expect(decodeKeyset(cursor, OUTAGES, KEY)).to.deep.equal(["1767225600", "out_a"]);
  });

  it("refuses text it did not make: not base64url, too long, another shape, another spelling of the same bytes", () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64url");
    for (const cursor of [
      "",
      "a+b/",
      "a=",
      b64("outages:1:x").padEnd(201, "A"),
      b64("outages:01:x"),
      b64("outages:1:x:y"),
      b64("outages:1:X"),
      `${b64("outages:1:ab")}==`,
      b64("1:x"),
    ]) {
      expect(decodeKeyset(cursor, OUTAGES, KEY), cursor).to.equal(null);
    }
    expect(decodeKeyset(b64("outages:1:x"), OUTAGES, KEY)).to.deep.equal(["1", "x"]);
  });

  it("refuses a cursor of another list: another kind, or the same kind of another agent's rows (issue #33)", () => {
    const penaltiesOfA: CursorList = { kind: "penalties", of: "agt_a" };
    const cursor = encodeKeyset(penaltiesOfA, [1, "p"]);
    expect(decodeKeyset(cursor, penaltiesOfA, KEY)).to.deep.equal(["1", "p"]);
    for (const other of [{ kind: "proofs", of: "agt_a" }, { kind: "penalties", of: "agt_b" }, { kind: "penalties" }, OUTAGES]) {
      expect(decodeKeyset(cursor, other, KEY), JSON.stringify(other)).to.equal(null);
      expect(() => parseKeyset(cursor, other, KEY, ([at, id]) => ({ at, id })))
        .to.throw()
        .with.property("code", "invalid_cursor");
    }
  });

  it("answers 400 invalid_cursor for a cursor that is not one of the list's keys", () => {
    expect(() => parseKeyset(encodeKeyset(OUTAGES, [1, "a"]), OUTAGES, KEY, ([at]) => (Number(at) > 0 ? null : at)))
      .to.throw()
      .with.property("code", "invalid_cursor");
    expect(parseKeyset(encodeKeyset(OUTAGES, [1, "a"]), OUTAGES, KEY, ([at, id]) => ({ at: Number(at), id }))).to.deep.equal({
      at: 1,
      id: "a",
    });
  });

  it("keeps `limit` rows of one more read, and names the next page only when the extra row came", () => {
    const rows = [{ k: 1 }, { k: 2 }, { k: 3 }];
    const full = keysetPage(rows, 2, OUTAGES, (r) => [r.k, "x"]);
    expect(full.items).to.deep.equal(rows.slice(0, 2));
    expect(decodeKeyset(full.nextCursor!, OUTAGES, KEY)).to.deep.equal(["2", "x"]);
    expect(keysetPage(rows, 3, OUTAGES, (r) => [r.k, "x"])).to.deep.equal({ items: rows, nextCursor: null });
  });
});
