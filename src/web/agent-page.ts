/**
 * The agent page (V10): one agent's latest Vrai score as a server-rendered HTML page a person
 * reads at a glance. Rendering is a pure function of plain data; `agent-route.ts` loads that data.
 */
import {
  CLAIM_POINTS,
  ESTABLISHED_DAYS,
  identityMax,
  INTEGRITY_BASE,
  METHODS,
  reachableMax,
  RELIABILITY_FULL_S,
  RELIABILITY_MAX,
  type ScoreResult,
} from "../method";
import { formatBand, formatCount, formatDuration, formatHours, formatTime } from "./format";
import { renderHistoryChart, renderHistoryTable, type HistoryDay } from "./history-chart";
import { html, type Html } from "./html";
import { renderErc8004Section, type AgentPageErc8004 } from "./erc8004-section";
import { renderDocument } from "./layout";
import { proofKindModule } from "../service/proofs/kinds";
import { renderWindowChart, renderWindowTable } from "./window-chart";

/** A declared outage window (V4.4) as the API publishes it. */
export type AgentPageOutage = { start: string; end: string | null; declared_at: string; reason: string };

/** The stored score the page shows (V9): its id, its result, and where its inputs and JSON are served. */
export type AgentPageScore = { id: number; result: ScoreResult; links: { inputs: string; self: string } };

/**
 * A separate, labelled panel for another score type. The three score types are never mixed
 * (METHOD, "Three scores"): a panel has its own heading and scale and never feeds the Vrai figures.
 * `body` is built with `html`, so whoever renders the panel escapes its own values.
 */
export type ScorePanel = { scoreType: "sdk-derived" | "platform-network"; heading: string; scale: string; body: Html };

/**
 * The agent's day so far (V10's figures of today, UTC, for its latest claim) and, while the first daily score of that
 * claim has not come, when it comes (V9: the first 00:00 UTC at or after the claim).
 */
export type AgentPageToday = {
  /** The UTC day, and the service's time the page was made at (RFC 3339). */
  day: string;
  now: string;
  checkins: number;
  onTime: number;
  /** Null once a daily score of the latest claim exists. */
  firstDailyAt: string | null;
};

/**
 * What the agent says of itself in its ERC-8004 registration file (issue #27), as last read: shown in a section of its
 * own, marked as self-declared, never next to a figure Vrai verified.
 */
export type AgentPageSelfDeclared = {
  /** The identity whose agentURI was read (`chainId:registry:agentId`). */
  identity: string;
  uri: string | null;
  /** When it was read (RFC 3339). */
  readAt: string;
  status: "read" | "refused" | "unread";
  /** Why it was refused or not read. */
  reason: string | null;
  name: string | null;
  description: string | null;
  /** The declared image's URL when it is https (shown as text: the page loads no image from other sites). */
  image: string | null;
  /** Whether an image was declared that is not https (then not named either). */
  imageNotHttps: boolean;
  services: ReadonlyArray<{ name: string; endpoint: string; version: string | null }>;
};

/** Everything the agent page shows. */
export type AgentPageView = {
  agent: { id: string; name: string | null; claimedAt: string };
  today: AgentPageToday;
  /** Null while the agent has no stored score. */
  score: AgentPageScore | null;
  /** Declared outage windows that touch the score's window. */
  outages: readonly AgentPageOutage[];
  /** Slots for the `sdk-derived` and `platform-network` panels, shown after the Vrai score and apart from it. */
  panels: readonly ScorePanel[];
  /** The daily totals of the last 90 days, oldest first. */
  history: readonly HistoryDay[];
  /** The site's origin (`https://vrai.example`), for the badge snippet's absolute links. */
  origin: string;
  /** What the agent declares of itself in its ERC-8004 registration file; none without one read. */
  selfDeclared?: AgentPageSelfDeclared | null;
  /** Vrai's ERC-8004 feedback about the agent (issue #27); null or absent when the service gives none. */
  erc8004?: AgentPageErc8004 | null;
};

function stateSentence(result: ScoreResult): string {
  if (result.method === "0.1") {
    return result.state === "established"
      ? `${ESTABLISHED_DAYS} or more of the 30 days in the window had a counted check-in (method 0.1).`
      : `Fewer than ${ESTABLISHED_DAYS} of the 30 days in the window had a counted check-in (method 0.1).`;
  }
  return result.state === "established"
    ? `The agent has checked in on ${ESTABLISHED_DAYS} different UTC days since its latest claim, and stays established until its next claim.`
    : `The agent has not yet checked in on ${ESTABLISHED_DAYS} different UTC days since its latest claim.`;
}

function meter(value: number, max: number): Html {
  const share = max === 0 ? 0 : Math.max(0, Math.min(1, value / max));
  return html`<svg class="meter" viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true" focusable="false">
<rect class="meter-track" width="100" height="8" rx="4"/>
<rect class="meter-fill" width="${Math.round(share * 1000) / 10}" height="8" rx="4"/>
</svg>`;
}

function component(key: string, name: string, value: number, max: number, details: Html): Html {
  return html`<div class="component" data-component="${key}">
<h3>${name} <span class="muted">0–${max}</span></h3>
<p class="value"><span class="component-value">${value}</span> <span class="max">of ${max}</span></p>
${meter(value, max)}
${details}
</div>`;
}

function renderComponents(result: ScoreResult): Html {
  const { identity, reliability, integrity } = result.components;
  // V6 of the score's own method version.
  const table = METHODS[result.method].identity;
  const proofs = [
    html`<li>Claim: ${CLAIM_POINTS}</li>`,
    ...identity.proofs.map((kind) => html`<li>${proofKindModule(kind).title} proof: ${table[kind]?.points ?? 0}</li>`),
  ];
  const penalties =
    integrity.penalties.length === 0
      ? html`<p>No active penalties.</p>`
      : html`<p>Active penalties, subtracted from 100:</p><ul class="penalties">${integrity.penalties.map(
          (p) =>
            html`<li><code>${p.code}</code> −${p.points}, added ${formatTime(p.addedAt)}, active until ${formatTime(p.expiresAt)}</li>`,
        )}</ul>`;
  const coverage = html`<p>On-time coverage in the window: <strong>${formatHours(reliability.creditS)}</strong>
of the ${formatHours(RELIABILITY_FULL_S)} (30 days) that earn full Reliability.</p>`;
  return html`<section aria-labelledby="components-heading">
<h2 id="components-heading">Components</h2>
<p class="muted">The total is the sum of the active components.</p>
<div class="components">
${component("identity", "Identity", identity.value, identityMax(table), html`<p>Proofs that count:</p><ul class="proofs">${proofs}</ul>`)}
${component("reliability", "Reliability", reliability.value, RELIABILITY_MAX, coverage)}
${component("integrity", "Integrity", integrity.value, INTEGRITY_BASE, penalties)}
<div class="component inactive" data-component="shield">
<h3>Shield</h3>
<p class="value">Not active</p>
<p>Shield has no value under method ${result.method} and never counts against an agent. It would open the 50 points of Integrity above 100.</p>
</div>
</div>
</section>`;
}

function renderSummary(score: AgentPageScore): Html {
  const r = score.result;
  return html`<section class="summary" aria-labelledby="score-heading">
<div>
<h2 id="score-heading" class="eyebrow">Vrai Score</h2>
<p class="total" id="total">${r.total}</p>
<p class="total-scale">on a scale of 0 to 1,000; with Shield not active, at most ${reachableMax(r.method)} can be reached.</p>
</div>
<dl class="facts">
<dt>Band</dt><dd id="band"><strong>${formatBand(r.band)}</strong>: the range of 200 points the total falls in.
A band names a range, nothing more: it is not a grade.</dd>
<dt>State</dt><dd id="state"><strong>${r.state === "established" ? "Established" : "Provisional"}</strong>. ${stateSentence(r)}</dd>
<dt>Method</dt><dd id="method">${r.method}</dd>
<dt>Score type</dt><dd id="score-type"><code>${r.scoreType}</code></dd>
<dt>Computed at</dt><dd id="computed-at">${formatTime(r.at)}</dd>
</dl>
</section>`;
}

function renderWindow(result: ScoreResult, claimedAt: string): Html {
  // Said in words, not only by the hatching: a window with no day after the claim counts nothing yet (V10).
  const allBefore =
    result.window.length > 0 && result.window.every((d) => d.before_claim)
      ? html`<p id="window-all-before-claim"><strong>Every one of these 30 days ended before the agent's latest claim</strong>
(${formatTime(claimedAt)}), so none of them counts yet: each UTC day after the claim enters the window once it has ended,
with the daily score computed at the next 00:00 UTC.</p>`
      : null;
  return html`<section aria-labelledby="window-heading">
<h2 id="window-heading">The 30 days of the window</h2>
<p>The 30 complete UTC days before the day the score was computed. For each day: how many check-ins arrived, how many were on time,
and how much of the day's 86,400 seconds on-time check-ins covered.</p>
${allBefore}
<div class="chart-wrap" tabindex="0" role="region" aria-label="The 30 days of the window, chart">${renderWindowChart(result.window)}</div>
<ul class="legend">
<li><span class="swatch bar" aria-hidden="true"></span>Share of the day covered by on-time check-ins</li>
<li><span class="swatch hatch" aria-hidden="true"></span>Before the agent's latest claim: shown, not counted</li>
</ul>
<details><summary>The 30 days as a table</summary>${renderWindowTable(result.window)}</details>
</section>`;
}

function renderToday(today: AgentPageToday): Html {
  const checkins = html`<strong>${formatCount(today.checkins)}</strong> check-in${today.checkins === 1 ? "" : "s"}`;
  const counted =
    today.checkins === 0
      ? html`No check-in counted yet today (${today.day}, UTC).`
      : html`${checkins} counted today (${today.day}, UTC), ${formatCount(today.onTime)} on time.`;
  let first: Html | null = null;
  if (today.firstDailyAt !== null) {
    const inS = Date.parse(today.firstDailyAt) / 1000 - Date.parse(today.now) / 1000;
    const when = inS > 0 ? html`, in ${formatDuration(inS)}` : html` (due: the daily recompute runs at 00:00 UTC and may still be running)`;
    first = html`<p id="first-daily">The first daily score of this claim is computed at ${formatTime(today.firstDailyAt)}${when},
then every day at 00:00 UTC, each anchored on chain.
Until then the score shown is the one computed at the claim or at the latest change of its proofs.</p>`;
  }
  return html`<section aria-labelledby="today-heading">
<h2 id="today-heading">Today</h2>
<p id="today-checkins">${counted} The day's check-ins count in the daily score computed at the next 00:00 UTC.</p>
${first}
</section>`;
}

function renderOutages(outages: readonly AgentPageOutage[]): Html {
  const body =
    outages.length === 0
      ? html`<p>Vrai declared no outage during these days.</p>`
      : html`<table class="outages">
<thead><tr><th scope="col">Start</th><th scope="col">End</th><th scope="col">Declared at</th><th scope="col">Reason</th></tr></thead>
<tbody>${outages.map((o) => {
          const end = o.end === null ? "open" : formatTime(o.end);
          return html`<tr><td>${formatTime(o.start)}</td><td>${end}</td><td>${formatTime(o.declared_at)}</td><td>${o.reason}</td></tr>`;
        })}</tbody>
</table>`;
  return html`<section aria-labelledby="outages-heading">
<h2 id="outages-heading">Declared outages</h2>
<p>Windows in which Vrai itself could not take check-ins. A check-in that was due inside one and came back in time is excused
and counts as on time. <a href="/method#outages-heading">Every declared window</a>.</p>
${body}
</section>`;
}

function renderVerify(score: AgentPageScore): Html {
  return html`<section aria-labelledby="verify-heading">
<h2 id="verify-heading">Recompute this score</h2>
<p>The score is a pure function of its stored inputs: no clock, no randomness, no outside data.</p>
<ul>
<li><a id="inputs-link" href="${score.links.inputs}">The exact inputs</a> (canonical JSON, RFC 8785)</li>
<li><a id="score-link" href="${score.links.self}">The stored score</a> (JSON)</li>
</ul>
<p>SHA-256 of the inputs:</p>
<code class="digest" id="sha256">${score.result.sha256}</code>
</section>`;
}

function renderHistory(history: readonly HistoryDay[]): Html {
  return html`<section aria-labelledby="history-heading">
<h2 id="history-heading">Score history</h2>
<p>The total of each day's score over the last ${history.length} days. Days before the agent's latest claim are shaded:
their scores belong to an earlier claim, if any.</p>
${renderHistoryChart(history)}
<ul class="legend">
<li><span class="swatch bar" aria-hidden="true"></span>Total of the day's score</li>
<li><span class="swatch before" aria-hidden="true"></span>Before the agent's latest claim</li>
</ul>
<details><summary>The ${history.length} days as a table</summary>${renderHistoryTable(history)}</details>
</section>`;
}

function renderBadgeSnippet(agentId: string, origin: string): Html {
  const id = encodeURIComponent(agentId);
  const page = `${origin}/agents/${id}`;
  const image = `${page}/badge.svg`;
  return html`<section aria-labelledby="badge-heading">
<h2 id="badge-heading">Badge</h2>
<p>Show this agent's latest total and state where people meet it. The badge follows the score.</p>
<p><img src="/agents/${id}/badge.svg" alt="Vrai badge of this agent" height="20"></p>
<h3>Markdown</h3>
<pre class="snippet"><code id="badge-markdown">[![Vrai Score](${image})](${page})</code></pre>
<h3>HTML</h3>
<pre class="snippet"><code id="badge-html">&lt;a href="${page}"&gt;&lt;img src="${image}" alt="Vrai Score"&gt;&lt;/a&gt;</code></pre>
</section>`;
}

function renderPanels(panels: readonly ScorePanel[]): Html | null {
  if (panels.length === 0) return null;
  return html`<section aria-labelledby="other-scores-heading">
<h2 id="other-scores-heading">Other scores</h2>
<p class="muted">Separate scores with their own scales and sources. They are never combined with the Vrai Score above.</p>
${panels.map(
  (p) => html`<section class="panel" data-score-type="${p.scoreType}" aria-labelledby="panel-${p.scoreType}">
<h3 id="panel-${p.scoreType}">${p.heading}</h3>
<p class="muted">Score type <code>${p.scoreType}</code>, ${p.scale}</p>
${p.body}
</section>`,
)}
</section>`;
}

/** Longest agentURI shown whole (a data: URI holds the whole file): longer ones are cut. */
const SHOWN_URI_MAX = 200;

function renderSelfDeclared(d: AgentPageSelfDeclared): Html {
  const uri = d.uri === null ? null : d.uri.length > SHOWN_URI_MAX ? `${d.uri.slice(0, SHOWN_URI_MAX)}…` : d.uri;
  const from = uri === null ? html`` : html` at <code id="registration-uri">${uri}</code>`;
  let body: Html;
  if (d.status !== "read") {
    const what = d.status === "refused" ? "was refused when Vrai read it" : "was not read";
    const reason = html`<span id="registration-reason">${d.reason}</span>`;
    const when = formatTime(d.readAt);
    body = html`<p id="registration-status" data-status="${d.status}">The registration file${from} ${what} (${when}): ${reason}. Nothing from it is shown.</p>`;
  } else {
    const image =
      d.image !== null
        ? html`<code>${d.image}</code> (not shown: this page loads no image from other sites)`
        : d.imageNotHttps
          ? html`declared, not over https: not shown`
          : html`none declared`;
    const services =
      d.services.length === 0
        ? html`none declared`
        : html`<ul class="services">${d.services.map(
            (s) => html`<li><strong>${s.name}</strong>${s.version === null ? "" : html` ${s.version}`}: <code>${s.endpoint}</code></li>`,
          )}</ul>`;
    body = html`<dl class="facts" id="registration-fields">
<dt>Registered name</dt><dd id="registered-name">${d.name}</dd>
<dt>Description</dt><dd id="registered-description">${d.description ?? "none declared"}</dd>
<dt>Image</dt><dd id="registered-image">${image}</dd>
<dt>Services</dt><dd id="registered-services">${services}</dd>
</dl>
<p class="muted" id="registration-status" data-status="read">Read from the registration file${from}, ${formatTime(d.readAt)}.</p>`;
  }
  return html`<section id="self-declared" aria-labelledby="self-declared-heading">
<p class="eyebrow">Self-declared</p>
<h2 id="self-declared-heading">What the agent says of itself</h2>
<p>From the registration file of its ERC-8004 identity <code>${d.identity}</code>, as the agent published it.
Vrai shows it as read and checks none of it: it is not evidence, and no part of the Vrai Score or of any other score.</p>
${body}
</section>`;
}

/**
 * The agent page as a complete HTML document. Pure: the same view gives the same bytes.
 * @example renderAgentPage({ agent: { id: "ag_1", name: null, claimedAt }, today, score: null, outages: [], panels: [], history: [], origin })
 */
export function renderAgentPage(view: AgentPageView): string {
  const { agent, score } = view;
  const label = agent.name ?? agent.id;
  const header = html`<header>
<p class="eyebrow">Agent</p>
<h1>${label}</h1>
<p class="muted">Agent id <code id="agent-id">${agent.id}</code></p>
</header>`;
  const vrai =
    score === null
      ? html`<section aria-labelledby="score-heading"><h2 id="score-heading">No score yet</h2>
<p>Vrai has not computed a score for this agent yet. Every claimed agent gets one at its claim and every day after.</p>
</section>${renderToday(view.today)}`
      : html`${renderSummary(score)}${renderToday(view.today)}${renderComponents(score.result)}
${renderWindow(score.result, agent.claimedAt)}${renderOutages(view.outages)}${renderHistory(view.history)}
${renderVerify(score)}${renderBadgeSnippet(agent.id, view.origin)}`;
  return renderDocument({
    title: score === null ? `${label}: no score yet — Vrai` : `${label}: Vrai Score ${score.result.total} — Vrai`,
    main: html`${header}${vrai}${renderErc8004Section(view.erc8004 ?? null)}${renderPanels(view.panels)}
${view.selfDeclared ? renderSelfDeclared(view.selfDeclared) : null}`,
  });
}

/** Why there is no page: no agent has the id, the id cannot be one, or its owner unclaimed it (issue #29). */
export type AgentNotFound = { reason: "unknown" | "invalid" | "unclaimed"; id: string };

// Long enough for any valid id (64), short enough that a hostile path cannot flood the page.
const SHOWN_ID_MAX = 80;

/** The 404 page for an agent id that names no agent, or an unclaimed one. */
export function renderAgentNotFoundPage(notFound: AgentNotFound): string {
  const shown = notFound.id.length > SHOWN_ID_MAX ? `${notFound.id.slice(0, SHOWN_ID_MAX)}…` : notFound.id;
  const messages = {
    invalid: html`<p><code>${shown}</code> is not a valid agent id: an agent id is 1 to 64 letters, digits, <code>_</code> or <code>-</code>.</p>`,
    unknown: html`<p>Vrai has no agent with the id <code>${shown}</code>.</p>`,
    // Issue #29: V2, only a claimed agent has a score; the scores it had stay stored and anchored, under their own ids.
    unclaimed: html`<p>The agent <code>${shown}</code> was unclaimed by its owner: it has no owner and no score until an owner
claims it again.</p>`,
  };
  const heading = notFound.reason === "unclaimed" ? "Agent unclaimed" : "Agent not found";
  return renderDocument({
    title: `${heading} — Vrai`,
    main: html`<header><p class="eyebrow">Agent</p><h1>${heading}</h1></header>${messages[notFound.reason]}`,
  });
}
