import { expect } from "chai";
import fc from "fast-check";
import { KeyList } from "./key-list";

describe("KeyList (the memory store's idempotency keys of one agent, V3.1)", () => {
  it("gives each added key its position, in order, and -1 for a key never added", () => {
    const list = new KeyList();
    expect(list.indexOf("a")).to.equal(-1);
    expect(list.add("a")).to.equal(0);
    expect(list.add("")).to.equal(1);
    expect(list.add("clé-é✓")).to.equal(2);
    expect([list.indexOf("a"), list.indexOf(""), list.indexOf("clé-é✓"), list.indexOf("b"), list.indexOf("A")]).to.deep.equal([
      0, 1, 2, -1, -1,
    ]);
    expect([list.at(0), list.at(1), list.at(2), list.size]).to.deep.equal(["a", "", "clé-é✓", 3]);
  });

  it("refuses a key already in the list, and keeps the list as it was", () => {
    const list = new KeyList();
    list.add("k1");
    list.add("k2");
    expect(() => list.add("k1")).to.throw("key already in the list: k1");
    expect([list.size, list.indexOf("k1"), list.indexOf("k2")]).to.deep.equal([2, 0, 1]);
  });

  it("finds every key after many growths, with keys that differ only in their last characters", () => {
    const list = new KeyList();
    // 720 keys: an agent checking in hourly for 30 days; the slots grow four times, from 16 to 4,096.
    for (let i = 0; i < 720; i++) expect(list.add(`k${i}`)).to.equal(i);
    for (let i = 0; i < 720; i++) expect(list.indexOf(`k${i}`)).to.equal(i);
    for (let i = 720; i < 1440; i++) expect(list.indexOf(`k${i}`)).to.equal(-1);
    // A string made another way (not the same object) is found by its content.
    expect(list.indexOf(["k", "7", "1", "9"].join(""))).to.equal(719);
  });

  it("answers as a Map of first positions does, for any sequence of keys (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.uuid(), fc.string({ unit: "grapheme", maxLength: 3 })), { maxLength: 300 }),
        (keys) => {
          const list = new KeyList();
          const expected = new Map<string, number>();
          for (const key of keys) {
            expect(list.indexOf(key)).to.equal(expected.get(key) ?? -1);
            if (!expected.has(key)) {
              expected.set(key, expected.size);
              expect(list.add(key)).to.equal(expected.size - 1);
            }
          }
          expect(list.size).to.equal(expected.size);
          for (const [key, position] of expected) expect([list.indexOf(key), list.at(position)]).to.deep.equal([position, key]);
        },
      ),
    );
  });
});
