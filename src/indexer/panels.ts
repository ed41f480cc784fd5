/**
 * The agent page's `sdk-derived` and `platform-network` panels (src/web/agent-page.ts `ScorePanel`), from the
 * indexer's tables: each in its own labelled panel with its own scale, never combined with the Vrai score.
 */
import type { ScorePanel } from "../web/agent-page";
import { html } from "../web/html";
import type { IndexerStore } from "./store";

/**
 * The panels of a Vrai agent linked to an ERC-8004 identity by its active erc8004 proof; none when it is not linked.
 * @example agentPageRouter(read, { panels: createScorePanels(createIndexerStore(db)) })
 */
export function createScorePanels(store: IndexerStore): (agentId: string) => Promise<ScorePanel[]> {
  return async (agentId) => {
    const executor = await store.linkedExecutor(agentId);
    if (!executor) return [];
    const derived = await store.getDerived(executor);
    const result = derived?.result ?? store.emptyDerived();
    const network = await store.getNetworkScore(executor);
    const tenths = network?.score ?? 0;
    return [
      {
        scoreType: "sdk-derived", heading: "SDK Derived Score", scale: "0–100, recomputed by anyone from on-chain proof records (METHOD part A)",
        body: html`<p class="figure"><strong data-field="score">${result.score}</strong> / 100 · <span data-field="interpretation">${result.interpretation}</span></p>
<p>From ${result.total} record(s) (${derived?.source ?? "none"}), ${result.verifiedCount} verified. Components: base ${result.components.base}, volume ${result.components.volume}, risk bonus ${result.components.riskBonus}, consistency ${result.components.consistency}; multiplier ${result.multiplier}, cap ${result.cap}.</p>
<p>Flags: ${result.flags.length === 0 ? "none" : result.flags.join(", ")}. Executor <code>${executor}</code>.</p>`,
      },
      {
        scoreType: "platform-network", heading: "Platform Network Score", scale: "0–100 from settlement verdicts, kept on chain by the Registry (METHOD part N)",
        body: html`<p class="figure"><strong data-field="score">${(tenths / 10).toFixed(1)}</strong> / 100</p>
<p>${network?.settlements ?? 0} settled order(s). Executor <code>${executor}</code>.</p>`,
      },
    ];
  };
}
