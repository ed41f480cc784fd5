/**
 * The agent page's section on Vrai's ERC-8004 feedback (issue #27): whether Vrai gives this agent's score as feedback in
 * the ERC-8004 Reputation Registry, the feedback standing there, and how a reader checks it. Pure: plain data in, markup out.
 */
import { html, type Html } from "./html";

/** One feedback as the page shows it. */
export type AgentPageFeedback = {
  tag1: string;
  tag2: string;
  value: number;
  valueDecimals: number;
  day: string;
  feedbackIndex: number | null;
  feedbackURI: string;
};

/** What the section shows: the owner's switch, where feedback goes, who gives it, and the feedback standing now. */
export type AgentPageErc8004 = {
  enabled: boolean;
  /** Why Vrai turned it off (its ERC-8004 proof removed); null when the owner set it. */
  reason: string | null;
  registry: { chainId: number; reputationRegistry: string; identityRegistry: string };
  /** The token the feedback is about, and the account giving it, once a feedback was planned. */
  tokenId: string | null;
  client: string | null;
  /** Given and not revoked, newest first. */
  standing: readonly AgentPageFeedback[];
};

/** `value` with `decimals` decimals, as the standard reads it (`uptime` in percent). */
function shown(f: AgentPageFeedback): string {
  const number = f.valueDecimals === 0 ? String(f.value) : (f.value / 10 ** f.valueDecimals).toFixed(f.valueDecimals);
  return f.tag1 === "uptime" ? `${number} %` : number;
}

/**
 * The section; null when the service gives no ERC-8004 feedback at all.
 * @example renderErc8004Section({ enabled: false, reason: null, registry, tokenId: null, client: null, standing: [] })
 */
export function renderErc8004Section(view: AgentPageErc8004 | null): Html | null {
  if (view === null) return null;
  const { registry } = view;
  const where = html`the ERC-8004 Reputation Registry <code>${registry.reputationRegistry}</code> (chain ${registry.chainId})`;
  const off = view.reason === null ? ": it is off (its owner turns it on)" : html` any more: ${view.reason}`;
  const state = view.enabled
    ? html`<p id="erc8004-state">Vrai gives this agent's score as feedback in ${where}, after each anchored day whose value changed:
its total as <code>vraiScore</code> and its Reliability's coverage of the last 30 days as <code>uptime</code>,
the previous feedback of each revoked.</p>`
    : html`<p id="erc8004-state">Vrai does not give this agent's score as feedback in ${where}${off}.</p>`;
  const index = (f: AgentPageFeedback) => (f.feedbackIndex === null ? "" : `, feedback ${f.feedbackIndex}`);
  const item = (f: AgentPageFeedback) =>
    html`<li><code>${f.tag1}</code> ${shown(f)} (<code>${f.tag2}</code>) of ${f.day}${index(f)}:
<a href="${f.feedbackURI}">its file</a></li>`;
  const identity = `${registry.chainId}:${registry.identityRegistry}:${view.tokenId}`;
  const standing =
    view.standing.length === 0
      ? null
      : html`<ul>${view.standing.map(item)}</ul>
<p>Given by <code>${view.client}</code> about token <code>${view.tokenId}</code>
of the identity registry <code>${registry.identityRegistry}</code>.
Read it with <code>getSummary(${view.tokenId}, [${view.client}], "vraiScore", "")</code>, or check it end to end with
<code>vrai verify --erc8004 ${identity} --publisher ${view.client} --reputation ${registry.reputationRegistry}</code>.</p>`;
  return html`<section aria-labelledby="erc8004-heading">
<h2 id="erc8004-heading">In ERC-8004</h2>
${state}
${standing}
</section>`;
}
