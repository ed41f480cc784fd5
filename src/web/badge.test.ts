import { expect } from "chai";
import { badgeMessage, renderBadge } from "./badge";

describe("badge", () => {
  it("reads `vrai | 230 · established` for a score", () => {
    const svg = renderBadge({ type: "score", total: 230, state: "established" });
    expect(svg).to.match(/^<svg /);
    expect(svg).to.contain("<title>vrai: 230 · established</title>");
    expect(badgeMessage({ type: "score", total: 200, state: "provisional" })).to.equal("200 · provisional");
  });

  it("reads `unknown` for no such agent and `no score yet` before the first score", () => {
    expect(renderBadge({ type: "unknown" })).to.contain("<title>vrai: unknown</title>");
    expect(renderBadge({ type: "no-score" })).to.contain("<title>vrai: no score yet</title>");
  });
});
