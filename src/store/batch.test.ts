import { expect } from "chai";
import { createBatcher } from "./batch";

/** A batch runner that records each batch and answers when the test lets it. */
function recorder() {
  const batches: number[][] = [];
  const release: Array<() => void> = [];
  const run = (items: readonly number[]) => {
    batches.push([...items]);
    return new Promise<number[]>((resolve) => release.push(() => resolve(items.map((n) => n * 10))));
  };
  return { batches, release, run };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("createBatcher", () => {
  it("sends what is asked in one turn of the event loop as one batch, in order, and answers each", async () => {
    const r = recorder();
    const ask = createBatcher({ maxBatch: 10, run: r.run });
    const answers = Promise.all([ask(1), ask(2), ask(3)]);
    await turn();
    expect(r.batches).to.deep.equal([[1, 2, 3]]);
    for (const go of r.release) go();
    expect(await answers).to.deep.equal([10, 20, 30]);
  });

  it("splits at maxBatch, and holds what is asked while maxInFlight batches are out for the next one", async () => {
    const r = recorder();
    const ask = createBatcher({ maxBatch: 2, maxInFlight: 1, run: r.run });
    const first = Promise.all([ask(1), ask(2), ask(3)]);
    await turn();
    expect(r.batches).to.deep.equal([[1, 2]]);
    const later = Promise.all([ask(4), ask(5)]);
    await turn();
    expect(r.batches).to.have.length(1);
    r.release[0]();
    await turn();
    expect(r.batches).to.deep.equal([
      [1, 2],
      [3, 4],
    ]);
    r.release[1]();
    await turn();
    expect(r.batches).to.deep.equal([[1, 2], [3, 4], [5]]);
    r.release[2]();
    expect(await first).to.deep.equal([10, 20, 30]);
    expect(await later).to.deep.equal([40, 50]);
  });

  it("fails every item of a batch that throws, and only its own item for an answer that fails", async () => {
    const throwing = createBatcher<number, number>({ maxBatch: 10, run: async () => Promise.reject(new Error("down")) });
    const all = await Promise.allSettled([throwing(1), throwing(2)]);
    expect(all.map((s) => s.status)).to.deep.equal(["rejected", "rejected"]);
    const partly = createBatcher<number, number>({
      maxBatch: 10,
      run: async (items) => items.map((n) => (n === 2 ? Promise.reject(new Error("bad item")) : n)),
    });
    const some = await Promise.allSettled([partly(1), partly(2), partly(3)]);
    expect(some.map((s) => s.status)).to.deep.equal(["fulfilled", "rejected", "fulfilled"]);
    // The batcher goes on after failures.
    expect(await partly(4)).to.equal(4);
  });
});
