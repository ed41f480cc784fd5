import { expect } from "chai";
import { countRecords, scoreCounts, type DerivedResult } from "../method";
import { htmlToString } from "./html";
import { renderScorePanels } from "./score-panels";

describe("the agent page's SDK Derived and Platform Network Score panels", () => {
  const executor = "did:erc8004:1:0xidentity:7";

  it("shows no panel for an agent not linked to an ERC-8004 identity", () => {
    expect(renderScorePanels(null)).to.deep.equal([]);
  });

  it("shows each score in its own labelled panel on its own scale", () => {
    const result: DerivedResult = {
      ...scoreCounts(countRecords([], 0)),
      score: 47.13,
      total: 3,
      verifiedCount: 1,
      multiplier: 0.85,
      flags: ["LOW_SUCCESS_RATE", "RECENT_FAILURES"],
      interpretation: "Moderate trust",
    };
    const panels = renderScorePanels({
      executor,
      derived: { source: "onchain", result, computedAt: 1 },
      network: { tenths: 35, settlements: 2 },
    });
    expect(panels.map((p) => [p.scoreType, p.heading])).to.deep.equal([
      ["sdk-derived", "SDK Derived Score"],
      ["platform-network", "Platform Network Score"],
    ]);
    expect(panels.map((p) => p.scale)).to.deep.equal([
      "0–100, recomputed by anyone from on-chain proof records (METHOD part A)",
      "0–100 from settlement verdicts, kept on chain by the Registry (METHOD part N)",
    ]);
    expect(htmlToString(panels[0].body)).to.equal(
      `<p class="figure"><strong data-field="score">47.13</strong> / 100 · <span data-field="interpretation">Moderate trust</span></p>
<p>From 3 record(s) (onchain), 1 verified. Components: base 0, volume 0, risk bonus 0, consistency 0; multiplier 0.85, cap 55.</p>
<p>Flags: LOW_SUCCESS_RATE, RECENT_FAILURES. Executor <code>${executor}</code>.</p>`,
    );
    expect(htmlToString(panels[1].body)).to.equal(`<p class="figure"><strong data-field="score">3.5</strong> / 100</p>
<p>2 settled order(s). Executor <code>${executor}</code>.</p>`);
  });

  it("shows an executor never scored with the score of no records, from source none", () => {
    const [derived] = renderScorePanels({
      executor,
      derived: { source: "none", result: scoreCounts(countRecords([], 0)), computedAt: null },
      network: { tenths: 0, settlements: 0 },
    });
    expect(htmlToString(derived.body))
      .to.include('<strong data-field="score">0</strong>')
      .and.include("From 0 record(s) (none), 0 verified.")
      .and.include("Flags: none.");
  });
});
