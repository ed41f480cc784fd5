import { expect } from "chai";
import { decodeKeyset, encodeKeyset, keysetPage, parseKeyset } from "./keyset";

const KEY = /^(0|[1-9]\d*):([a-z_]+)$/;

describe("keyset cursors", () => {
  it("decodes the fields it encodes, as opaque base64url text", () => {
    const cursor = encodeKeyset([1767225600, "out_a"]);
    expect(cursor).to.match(/^[A-Za-z0-9_-]+$/);
    expect(decodeKeyset(cursor, KEY)).to.deep.equal(["1767225600", "out_a"]);
  });

  it("refuses text it did not make: not base64url, too long, another shape, another spelling of the same bytes", () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64url");
    for (const cursor of ["", "a+b/", "a=", b64("1:x").padEnd(201, "A"), b64("01:x"), b64("1:x:y"), b64("1:X"), `${b64("1:ab")}==`]) {
      expect(decodeKeyset(cursor, KEY), cursor).to.equal(null);
    }
  });

  it("answers 400 invalid_cursor for a cursor that is not one of the list's keys", () => {
    expect(() => parseKeyset(encodeKeyset([1, "a"]), KEY, ([at]) => (Number(at) > 0 ? null : at))).to.throw().with.property("code", "invalid_cursor");
    expect(parseKeyset(encodeKeyset([1, "a"]), KEY, ([at, id]) => ({ at: Number(at), id }))).to.deep.equal({ at: 1, id: "a" });
  });

  it("keeps `limit` rows of one more read, and names the next page only when the extra row came", () => {
    const rows = [{ k: 1 }, { k: 2 }, { k: 3 }];
    const full = keysetPage(rows, 2, (r) => [r.k, "x"]);
    expect(full.items).to.deep.equal(rows.slice(0, 2));
    expect(decodeKeyset(full.nextCursor!, KEY)).to.deep.equal(["2", "x"]);
    expect(keysetPage(rows, 3, (r) => [r.k, "x"])).to.deep.equal({ items: rows, nextCursor: null });
  });
});
