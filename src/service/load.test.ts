import { expect } from "chai";
import { createLoadMonitor } from "./load";

describe("overload detection (V3.3 automatic busy)", () => {
  it("is overloaded while more requests than allowed are in flight, and not after they end", () => {
    const load = createLoadMonitor({ maxInFlight: 2, maxLoopDelayMs: 10_000 });
    try {
      const leaves = [load.enter(), load.enter()];
      expect(load.overloaded()).to.equal(false);
      leaves.push(load.enter());
      expect(load.overloaded()).to.equal(true);
      for (const leave of leaves) leave();
      leaves[0]();
      expect(load.snapshot().inFlight).to.equal(0);
      expect(load.overloaded()).to.equal(false);
    } finally {
      load.stop();
    }
  });

  it("is overloaded while the event loop is late all the time, not after one pause", async () => {
    // A threshold well above the few milliseconds a busy machine's scheduler makes any process late (a CPU hog beside the
    // test run), and holds well above the threshold.
    const load = createLoadMonitor({ maxInFlight: 1000, maxLoopDelayMs: 25, sampleMs: 200 });
    const hold = (ms: number) => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        // hold the event loop, as a process that cannot keep up would
      }
    };
    try {
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(load.overloaded()).to.equal(false);
      // One pause of 60 ms: the sample that holds it is late on average by far less than 25 ms.
      hold(60);
      for (let i = 0; i < 4; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(load.overloaded(), `${(i + 1) * 100} ms after one pause`).to.equal(false);
      }
      // Sustained: the loop is busy 60 ms out of every 61 ms for 700 ms.
      const until = Date.now() + 700;
      while (Date.now() < until) {
        hold(60);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      expect(load.snapshot().loopDelayMs).to.be.greaterThan(25);
      expect(load.overloaded()).to.equal(true);
      // Quiet again: the next samples bring it back.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(load.overloaded()).to.equal(false);
    } finally {
      load.stop();
    }
  });
});
