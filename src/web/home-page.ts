/**
 * The home page: what Vrai measures and what it does not, the three score types and why they are
 * never mixed, a search of the directory, its top agents, the latest declared windows, and where to
 * read the method, the API and how to verify a score.
 */
import { CURRENT_METHOD, reachableMax } from "../method";
import { kindsInWords, OFFERED_PROOF_KINDS } from "../service/proofs/kinds";
import { formatBand, formatTime } from "./format";
import { html, type Html } from "./html";
import { renderDocument } from "./layout";
import type { MethodPageOutage } from "./method-page";

/** An agent of the directory's top as the home page lists it. */
export type HomePageAgent = { id: string; name: string | null; total: number; band: string; state: string };

/** What the home page shows from the service. */
export type HomePageView = {
  /** The first agents of the directory's ranking (none while no agent has a score). */
  topAgents: readonly HomePageAgent[];
  /** The newest declared windows. */
  outages: readonly MethodPageOutage[];
};

const REACHABLE_MAX = reachableMax(CURRENT_METHOD);

function renderMeasures(): Html {
  return html`<section aria-labelledby="measures-heading">
<h2 id="measures-heading">What the Vrai Score measures</h2>
<ul>
<li>Evidence that Vrai checks itself: who owns an agent and what they have proven (${kindsInWords(OFFERED_PROOF_KINDS, "noun", "or")}),
check-ins that reached Vrai's servers on time, and penalties recorded under published rules.</li>
<li>It does <strong>not</strong> measure whether an agent's work is good, safe or accurate: method ${CURRENT_METHOD} has no data about that.</li>
<li>Only claimed agents have a score. Nobody can pay for a score, and holding a token never changes one.</li>
</ul>
<p>The total runs from 0 to 1,000; with Shield not active, at most ${REACHABLE_MAX} can be reached today.
Every score can be recomputed by anyone from its published inputs.</p>
</section>`;
}

function renderScoreTypes(): Html {
  return html`<section aria-labelledby="types-heading">
<h2 id="types-heading">Three scores, never mixed</h2>
<div class="table-wrap" tabindex="0" role="region" aria-label="The three score types"><table class="score-types">
<thead><tr><th scope="col">Score type</th><th scope="col">What it says</th><th scope="col">Scale</th><th scope="col">Source</th></tr></thead>
<tbody>
<tr><th scope="row"><code>vrai</code></th><td>The Vrai Score: Identity, Reliability and Integrity</td><td>0–1,000</td><td>the Vrai service,
inputs anchored on chain</td></tr>
<tr><th scope="row"><code>sdk-derived</code></th><td>What an agent's own proof records say of its runs</td><td>0–100</td><td>recomputed
by anyone from the records</td></tr>
<tr><th scope="row"><code>platform-network</code></th><td>How its settled orders went</td><td>0–100</td><td>the Registry contract</td></tr>
</tbody></table></div>
<p>They answer different questions from different sources, so one number mixing them would mean nothing.
Every score Vrai stores, serves or writes on chain carries its score type, and each is shown apart with its own scale.</p>
</section>`;
}

function renderSearch(): Html {
  return html`<section aria-labelledby="search-heading">
<h2 id="search-heading">Find an agent</h2>
<form class="search" method="get" action="/agents" role="search">
<label for="q" class="muted">Agent id or name</label>
<input id="q" name="q" type="search" maxlength="100" autocomplete="off">
<button type="submit">Search</button>
</form>
</section>`;
}

/** The owner's path (issue #31): from no account to a claimed agent that checks in, with the calls that make it. */
function renderClaim(): Html {
  return html`<section aria-labelledby="claim-heading">
<h2 id="claim-heading">Claim your agent</h2>
<p>For whoever runs an agent. Every step is a call to the API (JSON, <a href="/v1/openapi.json">described here</a>); nothing is paid,
and no token is needed to read a score.</p>
<ol class="claim-steps">
<li><strong>Make an owner account</strong>: <code>POST /v1/owners</code> with the body <code>{}</code>.
The answer's <code>token</code> (it starts <code>vo_</code>) is shown once: keep it, it is how you act as the owner.</li>
<li><strong>Claim the agent</strong>: <code>POST /v1/agents</code> with <code>{"name": "my agent"}</code>
and the header <code>Authorization: Bearer</code> followed by the owner token. The answer's <code>agentId</code> names the agent,
and its <code>agentKey</code> (it starts <code>va_</code>), shown once, is the agent's own key.</li>
<li><strong>Let the agent check in</strong> about every hour with its key: <code>POST /v1/agents/{agentId}/checkins</code>
with <code>Authorization: Bearer</code> the agent key and an <code>Idempotency-Key</code>.
The <code>@vrai/sdk</code> package does it for an agent in JavaScript, and its <code>vrai-heartbeat</code> command beside an agent
in any language.</li>
<li><strong>Prove who you are</strong>, if you wish: ${kindsInWords(OFFERED_PROOF_KINDS, "noun", "or")}, each worth Identity points
(<a href="/method#identity-heading">the table</a>). Ask <code>POST /v1/proofs/challenges</code> for a challenge, publish or sign it,
then send <code>POST /v1/proofs</code>.</li>
</ol>
<p>The agent gets a score at its claim, and a daily score at every 00:00 UTC from the next one on, anchored on chain;
its page, <code>/agents/{agentId}</code>, shows both and how to <a href="/method#verify-heading">verify them</a>.</p>
</section>`;
}

function renderTop(agents: readonly HomePageAgent[]): Html {
  const body =
    agents.length === 0
      ? html`<p>No agent has a score yet.</p>`
      : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Top of the directory, table"><table class="top-agents">
<thead><tr><th scope="col">Agent</th><th scope="col">Total</th><th scope="col">Band (range)</th><th scope="col">State</th></tr></thead>
<tbody>${agents.map((a) => {
          const name = html`<a href="/agents/${encodeURIComponent(a.id)}">${a.name ?? a.id}</a>`;
          return html`<tr><td>${name}</td><td>${a.total}</td><td>${formatBand(a.band)}</td><td>${a.state}</td></tr>`;
        })}</tbody>
</table></div>`;
  return html`<section aria-labelledby="top-heading">
<h2 id="top-heading">Top of the directory</h2>
<p class="muted">Ranked by the total of the latest score, active components only; ties by agent id. A band is a range of totals, not a grade.</p>
${body}
<p><a href="/agents">The whole directory</a></p>
</section>`;
}

function renderWindows(outages: readonly MethodPageOutage[]): Html {
  const body =
    outages.length === 0
      ? html`<p>Vrai has declared no window.</p>`
      : html`<ul class="latest-windows">${outages.map(
          (o) =>
            html`<li>${formatTime(o.start)} to ${o.end === null ? "open" : formatTime(o.end)}, declared at ${formatTime(o.declaredAt)}: ${o.reason}</li>`,
        )}</ul>`;
  return html`<section aria-labelledby="windows-heading">
<h2 id="windows-heading">Latest declared windows</h2>
<p class="muted">Times when Vrai itself could not take check-ins: check-ins due then that came back in time count as on time.</p>
${body}
<p><a href="/method#outages-heading">Every declared window</a></p>
</section>`;
}

function renderLinks(): Html {
  return html`<section aria-labelledby="links-heading">
<h2 id="links-heading">Read more</h2>
<ul>
<li><a href="/method">The method</a>: every rule and number, and every version with what changed and why</li>
<li><a href="/agents">The directory</a> of claimed agents</li>
<li><a href="/v1/openapi.json">The API</a> (OpenAPI document)</li>
<li><a href="/method#verify-heading">Verify a score yourself</a> with <code>vrai verify</code></li>
</ul>
</section>`;
}

/**
 * The home page as a complete HTML document. Pure: the same view gives the same bytes.
 * @example renderHomePage({ topAgents: [], outages: [] })
 */
export function renderHomePage(view: HomePageView): string {
  return renderDocument({
    title: "Vrai — verifiable scores for AI agents",
    current: "home",
    main: html`<header><p class="eyebrow">Vrai</p><h1>Verifiable scores for AI agents</h1>
<p class="muted">Vrai scores AI agents from evidence it can verify, and lets anyone check the numbers.</p>
<p><a href="#claim-heading">Claim your agent</a>: an owner's four steps.</p></header>
${renderSearch()}${renderMeasures()}${renderScoreTypes()}${renderClaim()}${renderTop(view.topAgents)}${renderWindows(view.outages)}${renderLinks()}`,
  });
}
