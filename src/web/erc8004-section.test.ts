import { expect } from "chai";
import { htmlToString } from "./html";
import { renderErc8004Section, type AgentPageErc8004 } from "./erc8004-section";

const registry = {
  chainId: 8453,
  reputationRegistry: "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63",
  identityRegistry: "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432",
};
const on: AgentPageErc8004 = {
  enabled: true,
  reason: null,
  registry,
  tokenId: "42",
  client: "0x8626f6940E2eb28930eFb4CeF49B2d1F2C9C1199",
  standing: [
    {
      tag1: "vraiScore",
      tag2: "0.2",
      value: 251,
      valueDecimals: 0,
      day: "2026-11-03",
      feedbackIndex: 3,
      feedbackURI: "https://vrai.example/v1/erc8004/feedback/fbk_1",
    },
    {
      tag1: "uptime",
      tag2: "30d",
      value: 55,
      valueDecimals: 2,
      day: "2026-11-03",
      feedbackIndex: 4,
      feedbackURI: "https://vrai.example/v1/erc8004/feedback/fbk_2",
    },
  ],
};
const text = (view: AgentPageErc8004 | null) => {
  const section = renderErc8004Section(view);
  return section === null
    ? null
    : htmlToString(section)
        .replace(/<[^>]+>/g, "")
        .replace(/\s+/g, " ");
};

describe("the agent page's ERC-8004 section", () => {
  it("says where Vrai's feedback is given, the feedback standing with its file, and how to check it", () => {
    const shown = text(on)!;
    expect(shown).to.include(
      `Vrai gives this agent's score as feedback in the ERC-8004 Reputation Registry ${registry.reputationRegistry} (chain 8453)`,
    );
    expect(shown).to.include("vraiScore 251 (0.2) of 2026-11-03, feedback 3: its file");
    expect(shown).to.include("uptime 0.55 % (30d) of 2026-11-03, feedback 4: its file");
    expect(shown).to.include(`getSummary(42, [${on.client}], "vraiScore", "")`);
    expect(shown).to.include(
      `vrai verify --erc8004 8453:${registry.identityRegistry}:42 --publisher ${on.client} --reputation ${registry.reputationRegistry}`,
    );
    expect(htmlToString(renderErc8004Section(on)!)).to.include('<a href="https://vrai.example/v1/erc8004/feedback/fbk_2">its file</a>');
  });

  it("says it is off, and why when Vrai turned it off; nothing at all when the service gives no feedback", () => {
    expect(text({ ...on, enabled: false, standing: [] })).to.include(
      "does not give this agent's score as feedback in the ERC-8004 Reputation Registry",
    );
    expect(text({ ...on, enabled: false, standing: [] })).to.include("it is off (its owner turns it on)");
    const stopped = text({ ...on, enabled: false, reason: "its ERC-8004 proof was removed (<b>moved</b>)", standing: [] })!;
    expect(stopped).to.include("any more: its ERC-8004 proof was removed (&lt;b&gt;moved&lt;/b&gt;)");
    expect(stopped).not.to.include("getSummary");
    expect(renderErc8004Section(null)).to.equal(null);
  });
});
