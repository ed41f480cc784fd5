import { expect } from "chai";
import { createRateLimiter } from "./rate-limit";

describe("per-key rate limits", () => {
  it("allows a burst, then refuses with the seconds until the next token, per key", () => {
    let now = 0;
    const limiter = createRateLimiter({ perMinute: 60, burst: 3, now: () => now });
    for (let i = 0; i < 3; i++) expect(limiter.take("a")).to.deep.equal({ ok: true });
    expect(limiter.take("a")).to.deep.equal({ ok: false, retryAfterS: 1 });
    expect(limiter.take("b")).to.deep.equal({ ok: true });
    now += 1000;
    expect(limiter.take("a")).to.deep.equal({ ok: true });
    expect(limiter.take("a").ok).to.equal(false);
  });
});
