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

  it("is overloaded after the event loop was held up longer than allowed", async () => {
    const load = createLoadMonitor({ maxInFlight: 1000, maxLoopDelayMs: 50, sampleMs: 100 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(load.overloaded()).to.equal(false);
      const until = Date.now() + 400;
      while (Date.now() < until) {
        // hold the event loop, as a process that cannot keep up would
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(load.snapshot().loopDelayMs).to.be.greaterThan(50);
      expect(load.overloaded()).to.equal(true);
    } finally {
      load.stop();
    }
  });
});
