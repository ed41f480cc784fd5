import { expect } from "chai";
import { realSleep, retry, type RetryDecision, type RetryOptions } from "./retry";

/** A sleep that returns at once (rejecting like `realSleep` when aborted) and records the waits asked for. */
function recordingSleep() {
  const waits: number[] = [];
  const sleep = async (ms: number, signal?: AbortSignal) => {
    signal?.throwIfAborted();
    waits.push(ms);
  };
  return { waits, sleep };
}

/** An attempt that fails `failures` times (with `down 1`, `down 2`, ...) then returns `up`; counts its calls. */
function flaky(failures: number) {
  const calls: number[] = [];
  const attempt = async (n: number) => {
    calls.push(n);
    if (calls.length <= failures) throw new Error(`down ${calls.length}`);
    return "up";
  };
  return { calls, attempt };
}

/** The rejection of `promise`; fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return expect.fail("expected a rejection");
}

describe("retry", () => {
  const base = (overrides: Partial<RetryOptions> = {}) => ({ attempts: 5, baseDelayMs: 100, ...overrides });

  it("returns the first success, numbering the attempts from 1", async () => {
    const { waits, sleep } = recordingSleep();
    const { calls, attempt } = flaky(2);
    expect(await retry(attempt, base({ sleep }))).to.equal("up");
    expect(calls).to.deep.equal([1, 2, 3]);
    expect(waits).to.deep.equal([100, 200]);
  });

  it("makes `attempts` attempts in all, then throws the last error", async () => {
    const { waits, sleep } = recordingSleep();
    const { calls, attempt } = flaky(100);
    const error = await rejection(retry(attempt, base({ attempts: 3, sleep })));
    expect(error).to.be.instanceOf(Error).with.property("message", "down 3");
    expect(calls).to.have.length(3);
    expect(waits).to.deep.equal([100, 200]);
  });

  it("makes one attempt when `attempts` is below 1", async () => {
    const { waits, sleep } = recordingSleep();
    const { calls, attempt } = flaky(100);
    await rejection(retry(attempt, base({ attempts: 0, sleep })));
    expect(calls).to.have.length(1);
    expect(waits).to.deep.equal([]);
  });

  it("doubles the backoff up to maxDelayMs, and without a ceiling when none is given", async () => {
    const capped = recordingSleep();
    await rejection(retry(flaky(100).attempt, base({ maxDelayMs: 300, sleep: capped.sleep })));
    expect(capped.waits).to.deep.equal([100, 200, 300, 300]);
    const uncapped = recordingSleep();
    await rejection(retry(flaky(100).attempt, base({ attempts: 6, baseDelayMs: 10, sleep: uncapped.sleep })));
    expect(uncapped.waits).to.deep.equal([10, 20, 40, 80, 160]);
  });

  it("waits a random part of each backoff with full jitter", async () => {
    const { waits, sleep } = recordingSleep();
    const draws = [0.5, 0.25, 0, 0.75];
    await rejection(
      retry(flaky(100).attempt, base({ baseDelayMs: 1_000, maxDelayMs: 3_000, jitter: true, random: () => draws.shift()!, sleep })),
    );
    expect(waits).to.deep.equal([500, 500, 0, 2_250]);
  });

  it("throws an error that retryable refuses at once, without waiting", async () => {
    const { waits, sleep } = recordingSleep();
    const { calls, attempt } = flaky(100);
    const seen: Array<[string, number]> = [];
    const retryable = (error: unknown, n: number) => {
      seen.push([String(error), n]);
      return n < 2;
    };
    const error = await rejection(retry(attempt, base({ retryable, sleep })));
    expect(error).to.have.property("message", "down 2");
    expect(calls).to.have.length(2);
    expect(seen).to.deep.equal([
      ["Error: down 1", 1],
      ["Error: down 2", 2],
    ]);
    expect(waits).to.deep.equal([100]);
  });

  it("honours a wait the source asked for, which does not advance the backoff", async () => {
    const { waits, sleep } = recordingSleep();
    const decisions: RetryDecision[] = [true, { afterMs: 200_000 }, true, true];
    await rejection(retry(flaky(100).attempt, base({ retryable: () => decisions.shift()!, sleep })));
    expect(waits).to.deep.equal([100, 200_000, 200, 400]);
  });

  it("throws what giveUp makes of the last error, with the number of attempts made", async () => {
    const { sleep } = recordingSleep();
    const giveUp = (error: unknown, attempts: number) =>
      new Error(`${String(error)}; gave up after ${attempts} attempts`, { cause: error });
    const error = await rejection(retry(flaky(100).attempt, base({ attempts: 4, giveUp, sleep })));
    expect(error).to.have.property("message", "Error: down 4; gave up after 4 attempts");
    expect(error).to.have.nested.property("cause.message", "down 4");
  });

  it("does not call giveUp for an error retryable refuses", async () => {
    const { sleep } = recordingSleep();
    let gaveUp = false;
    const error = await rejection(retry(flaky(100).attempt, base({ retryable: () => false, giveUp: () => (gaveUp = true), sleep })));
    expect(error).to.have.property("message", "down 1");
    expect(gaveUp).to.equal(false);
  });

  it("tells onRetry of each wait before it", async () => {
    const { sleep } = recordingSleep();
    const told: Array<{ message: string; attempt: number; delayMs: number }> = [];
    await retry(
      flaky(2).attempt,
      base({ sleep, onRetry: ({ error, attempt, delayMs }) => told.push({ message: String(error), attempt, delayMs }) }),
    );
    expect(told).to.deep.equal([
      { message: "Error: down 1", attempt: 1, delayMs: 100 },
      { message: "Error: down 2", attempt: 2, delayMs: 200 },
    ]);
  });

  it("retries without end until the signal aborts, and rejects with its reason", async () => {
    const controller = new AbortController();
    const stopped = new Error("stopped");
    const { waits, sleep } = recordingSleep();
    const { calls, attempt } = flaky(Infinity);
    const error = await rejection(
      retry(attempt, {
        attempts: Infinity,
        baseDelayMs: 5_000,
        maxDelayMs: 300_000,
        signal: controller.signal,
        sleep: async (ms, signal) => {
          if (waits.length === 7) controller.abort(stopped);
          await sleep(ms, signal);
        },
      }),
    );
    expect(error).to.equal(stopped);
    expect(calls).to.have.length(8);
    expect(waits).to.deep.equal([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000]);
  });

  it("stops after an aborted wait even when the sleep ignores the signal", async () => {
    const controller = new AbortController();
    const { calls, attempt } = flaky(100);
    const error = await rejection(retry(attempt, base({ signal: controller.signal, sleep: async () => controller.abort("stop") })));
    expect(error).to.equal("stop");
    expect(calls).to.have.length(1);
  });
});

describe("realSleep", () => {
  it("resolves after the wait", async () => {
    const started = Date.now();
    await realSleep(200);
    // Node's timers may end a few milliseconds early by Date.now() (they count on libuv's coarse loop time, 4 ms here,
    // and ended 11 ms early once on a loaded machine): the margin tells a wait from none, not the timer's precision.
    expect(Date.now() - started).to.be.at.least(150);
  });

  it("rejects with the signal's reason at once when aborted, before or during the wait", async () => {
    const before = new AbortController();
    before.abort("before");
    expect(await rejection(realSleep(60_000, before.signal))).to.equal("before");
    const during = new AbortController();
    const waiting = realSleep(60_000, during.signal);
    during.abort("during");
    expect(await rejection(waiting)).to.equal("during");
  });
});
