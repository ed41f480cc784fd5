import { expect } from "chai";
import fc from "fast-check";
import { createIdIndex, hashId, hashIdBytes, SLOT_BYTES } from "./id-index";

/** An index over a table of ids by position, as its user keeps them (the index keeps no id itself). */
function indexed() {
  const ids: string[] = [];
  const index = createIdIndex((position, id) => ids[position] === id);
  const put = (id: string, hash: number) => {
    index.growIfFull();
    ids.push(id);
    index.set(id, hash, ids.length - 1);
  };
  return { ids, index, put };
}

describe("id index (open addressing over typed arrays)", () => {
  it("hashes an id's characters and its latin1 bytes alike, and spreads ids that differ in their last digit", () => {
    const id = "agt_0000000123";
    expect(hashIdBytes(Buffer.from(`xx${id}yy`, "latin1"), 2, id.length)).to.equal(hashId(id));
    const homes = new Set(Array.from({ length: 64 }, (_, i) => hashId(`agt_${i}`) & 63));
    expect(homes.size).to.be.greaterThan(32);
  });

  it("finds ids whose hashes collide by comparing the ids at their positions, and forgets one without losing those probed after it", () => {
    const { index, put } = indexed();
    for (const id of ["a", "b", "c", "d"]) put(id, 7);
    expect(["a", "b", "c", "d"].map((id) => index.get(id, 7))).to.deep.equal([0, 1, 2, 3]);
    expect(index.get("e", 7)).to.equal(-1);
    index.delete("b", 7);
    expect(["a", "b", "c", "d"].map((id) => index.get(id, 7))).to.deep.equal([0, -1, 2, 3]);
    index.deletePosition(7, 2);
    expect(["a", "c", "d"].map((id) => index.get(id, 7))).to.deep.equal([0, -1, 3]);
    expect(index.size).to.equal(2);
  });

  it("keeps at most half its slots used: doubles before the next id would pass that, keeping every id, and says the bytes it would take", () => {
    const { index, put } = indexed();
    expect(index.bytes).to.equal(0);
    expect(index.growthBytes()).to.equal(64 * SLOT_BYTES);
    for (let i = 0; i < 32; i++) put(`agt_${i}`, hashId(`agt_${i}`));
    expect(index.bytes).to.equal(64 * SLOT_BYTES);
    expect(index.growthBytes()).to.equal(64 * SLOT_BYTES);
    put("agt_32", hashId("agt_32"));
    expect(index.bytes).to.equal(128 * SLOT_BYTES);
    for (let i = 0; i <= 32; i++) expect(index.get(`agt_${i}`, hashId(`agt_${i}`))).to.equal(i);
    index.clear();
    expect([index.size, index.bytes, index.get("agt_1", hashId("agt_1"))]).to.deep.equal([0, 0, -1]);
  });

  it("answers as a Map would over any sequence of sets and deletes, with hashes crowded into a few slots (fast-check, long random sequences: 5-20 s)", () => {
    const operation = fc.oneof(
      fc.record({ type: fc.constant("set" as const), id: fc.integer({ min: 0, max: 60 }) }),
      fc.record({ type: fc.constant("delete" as const), id: fc.integer({ min: 0, max: 60 }) }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 300 }), (operations) => {
        const { ids, index } = indexed();
        const model = new Map<string, number>();
        const hashOf = (n: number) => n % 5;
        for (const { type, id: n } of operations) {
          const id = `agt_${n}`;
          if (type === "set") {
            index.growIfFull();
            ids.push(id);
            index.set(id, hashOf(n), ids.length - 1);
            model.set(id, ids.length - 1);
          } else {
            index.delete(id, hashOf(n));
            model.delete(id);
          }
        }
        expect(index.size).to.equal(model.size);
        for (let n = 0; n <= 60; n++) expect(index.get(`agt_${n}`, hashOf(n))).to.equal(model.get(`agt_${n}`) ?? -1);
      }),
      { numRuns: 200 },
    );
  });
});
