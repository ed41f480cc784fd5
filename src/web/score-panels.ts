/**
 * The agent page's `sdk-derived` and `platform-network` panels (src/web/agent-page.ts `ScorePanel`), from the data
 * the chain scores give: each in its own labelled panel with its own scale, never combined with the Vrai score.
 */
import type { AgentScorePanels } from "../service/chain-scores";
import type { ScorePanel } from "./agent-page";
import { html } from "./html";

/**
 * The panels of a Vrai agent linked to an ERC-8004 identity; none when it is not linked (null).
 * @example agentPageRouter(read, { panels: async (agentId) => renderScorePanels(await chainScores.agentPanels(agentId)) })
 */
export function renderScorePanels(panels: AgentScorePanels | null): ScorePanel[] {
  if (!panels) return [];
  const { executor, derived, network } = panels;
  const { result } = derived;
  const interpretation = html`<span data-field="interpretation">${result.interpretation}</span>`;
  const records = `${result.total} record(s) (${derived.source}), ${result.verifiedCount} verified`;
  const { base, volume, riskBonus, consistency } = result.components;
  const components = `base ${base}, volume ${volume}, risk bonus ${riskBonus}, consistency ${consistency}`;
  return [
    {
      scoreType: "sdk-derived",
      heading: "SDK Derived Score",
      scale: "0–100, recomputed by anyone from on-chain proof records (METHOD part A)",
      body: html`<p class="figure"><strong data-field="score">${result.score}</strong> / 100 · ${interpretation}</p>
<p>From ${records}. Components: ${components}; multiplier ${result.multiplier}, cap ${result.cap}.</p>
<p>Flags: ${result.flags.length === 0 ? "none" : result.flags.join(", ")}. Executor <code>${executor}</code>.</p>`,
    },
    {
      scoreType: "platform-network",
      heading: "Platform Network Score",
      scale: "0–100 from settlement verdicts, kept on chain by the Registry (METHOD part N)",
      body: html`<p class="figure"><strong data-field="score">${(network.tenths / 10).toFixed(1)}</strong> / 100</p>
<p>${network.settlements} settled order(s). Executor <code>${executor}</code>.</p>`,
    },
  ];
}
