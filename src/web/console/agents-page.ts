/**
 * The console's agents (issue #29): the owner's agents a page at a time, each with its latest score, its check-ins'
 * deadline (V3.5), its proofs and their next re-check (V6), its ERC-8004 publishing and where its events go; one agent
 * with what its owner does to it (a new key, proofs, publishing, unclaiming it); the page that asks before it is
 * unclaimed; and the page that shows an agent's key, once.
 */
import { toRfc3339 } from "../../method";
import type { AgentOverview } from "../../service/owner-agents";
import type { PublishingStatus } from "../../service/erc8004-publishing";
import { formatBand, formatTime } from "../format";
import { html, type Html } from "../html";
import { canWrite, pager, postForm, readOnlyNote, secretBox, snippet, type RenderedPage, type ConsoleViewer, type Notice } from "./common";
import { consolePage } from "./document";
import { agentProofForms, type ProofKindView } from "./proofs-page";

/** Where the owner's events go (issue #28): its endpoints as a list counts them. */
export type WebhookSummary = { endpoints: number; enabled: number; failing: number };

/** The agents page: one page of the owner's agents, where events go, and the form that claims a new one. */
export type AgentsView = {
  viewer: ConsoleViewer;
  agents: readonly AgentOverview[];
  nextCursor: string | null;
  /** Whether this is a later page (a link back to the first is shown). */
  later: boolean;
  webhooks: WebhookSummary;
  notice?: Notice;
};

const at = (t: number) => formatTime(toRfc3339(t));

/** An agent's publishing in words: off, on, or not offered by this service. */
export function publishingWords(status: PublishingStatus): string {
  if (status.target === null) return "not offered by this service";
  if (status.enabled)
    return `on: its score is given as feedback in the registry ${status.target.registry} (chain ${status.target.chainId})`;
  return status.reason === null ? "off" : `off (${status.reason})`;
}

/** Where events go, in words. */
export function webhookWords(summary: WebhookSummary): string {
  if (summary.endpoints === 0) return "no webhook endpoint: its events are sent nowhere";
  const failing = summary.failing === 0 ? "" : `, ${summary.failing} failing`;
  return `sent to ${summary.enabled} enabled endpoint${summary.enabled === 1 ? "" : "s"} of ${summary.endpoints}${failing}`;
}

function scoreFacts(o: AgentOverview): Html {
  if (o.score === null) return html`<dt>Score</dt><dd>none yet (the first comes at its claim's recompute)</dd>`;
  return html`<dt>State</dt><dd data-field="state">${o.score.state === "established" ? "Established" : "Provisional"}</dd>
<dt>Total</dt><dd data-field="total">${o.score.total}</dd>
<dt>Band</dt><dd data-field="band">${formatBand(o.score.band)}</dd>`;
}

function proofList(o: AgentOverview): Html {
  if (o.proofs.length === 0) return html`none`;
  return html`<ul class="proof-list">${o.proofs.map(
    ({ proof, nextRecheckAt }) =>
      html`<li data-kind="${proof.kind}">${proof.kind} <code>${proof.subject}</code>${proof.agentId === null ? " (owner)" : ""}: ${
        nextRecheckAt === null ? "never re-checked" : html`next check ${at(nextRecheckAt)}`
      }</li>`,
  )}</ul>`;
}

/** The facts of one agent, as its card and its page show them. */
function agentFacts(o: AgentOverview, webhooks: WebhookSummary): Html {
  const last = o.agent.last;
  return html`<dl class="facts">
${scoreFacts(o)}
<dt>Last counted check-in</dt><dd data-field="last-checkin">${last === null ? "none since its claim" : at(last.arrival)}</dd>
<dt>Next deadline</dt><dd data-field="deadline">${o.nextDeadline === null ? "none until its first check-in" : at(o.nextDeadline)}</dd>
<dt>Proofs</dt><dd data-field="proofs">${proofList(o)}</dd>
<dt>ERC-8004 publishing</dt><dd data-field="publishing">${publishingWords(o.publishing)}</dd>
<dt>Webhook events</dt><dd data-field="webhooks">${webhookWords(webhooks)}</dd>
</dl>`;
}

const agentTitle = (o: AgentOverview) => o.agent.name ?? o.agent.id;

function createForm(viewer: ConsoleViewer): Html | null {
  return postForm(viewer, "/console/agents", {
    label: "Create the agent",
    className: "stacked",
    fields: html`<div><label for="agent-name">Name <span class="hint">(shown on its public page; up to 100 characters)</span></label>
<input type="text" id="agent-name" name="name" maxlength="100" required></div>
`,
  });
}

/** The agents page. */
export function renderAgentsPage<S extends number>(status: S, view: AgentsView): RenderedPage<S> {
  const { viewer } = view;
  const cards =
    view.agents.length === 0
      ? html`<p>${view.later ? "No more agents." : "No agent yet: create the first below."}</p>`
      : html`<ul class="cards agents">${view.agents.map(
          (o) => html`<li class="card agent" data-agent="${o.agent.id}">
<h2><a href="/console/agents/${o.agent.id}">${agentTitle(o)}</a></h2>
<p class="muted"><code>${o.agent.id}</code> · <a href="/agents/${o.agent.id}">public page</a></p>
${agentFacts(o, view.webhooks)}
</li>`,
        )}</ul>`;
  const main = html`<header><h1>Your agents</h1></header>
<section aria-labelledby="agents-heading"><h2 id="agents-heading" class="visually-hidden">Agents</h2>${cards}
${pager("Pages of agents", "/console/agents", view, ["First page", "Next agents"])}</section>
<section aria-labelledby="create-heading"><h2 id="create-heading">Create an agent</h2>
<p>Its key is shown once, with the command that keeps it checking in.</p>
${createForm(viewer) ?? readOnlyNote(viewer, "create agents")}</section>`;
  return consolePage(status, { title: "Agents", main, viewer, current: "agents", notice: view.notice });
}

/** One agent's console page: its facts, a new key, its proofs of one agent and its publishing switch. */
export type AgentView = {
  viewer: ConsoleViewer;
  overview: AgentOverview;
  webhooks: WebhookSummary;
  /** The agent-level proof kinds it may prove (V6), from the table of kinds. */
  kinds: readonly ProofKindView[];
  notice?: Notice;
};

/** The console page of one agent. */
export function renderAgentPage<S extends number>(status: S, view: AgentView): RenderedPage<S> {
  const { viewer, overview: o } = view;
  const id = o.agent.id;
  const own = o.proofs.filter(({ proof }) => proof.agentId === id);
  const removals = own.map(({ proof }) =>
    postForm(viewer, `/console/proofs/${proof.id}/remove`, {
      label: `Remove the ${proof.kind} proof of ${proof.subject}`,
      danger: true,
      fields: html`<input type="hidden" name="back" value="/console/agents/${id}">`,
    }),
  );
  const publishing =
    o.publishing.target === null
      ? null
      : postForm(viewer, `/console/agents/${id}/publishing`, {
          label: o.publishing.enabled ? "Turn ERC-8004 publishing off" : "Turn ERC-8004 publishing on",
          fields: html`<input type="hidden" name="enabled" value="${o.publishing.enabled ? "false" : "true"}">`,
        });
  const unclaimLink = canWrite(viewer)
    ? html`<p><a id="unclaim-link" class="button secondary" href="/console/agents/${id}/unclaim">Unclaim this agent…</a></p>`
    : null;
  const main = html`<header><p class="eyebrow">Agent</p><h1>${agentTitle(o)}</h1>
<p class="muted"><code>${id}</code> · <a href="/agents/${id}">public page</a> · <a href="/console/agents">all agents</a></p></header>
<section aria-labelledby="facts-heading"><h2 id="facts-heading">Now</h2>${agentFacts(o, view.webhooks)}
${publishing === null ? null : html`<div class="actions">${publishing}</div>`}</section>
<section aria-labelledby="key-heading"><h2 id="key-heading">Its key</h2>
<p>A new key is shown once; the old key is refused from then on. The claim, its check-ins, proofs and score stay.</p>
${postForm(viewer, `/console/agents/${id}/rotate-key`, { label: "Rotate the key", danger: true }) ?? readOnlyNote(viewer, "rotate its key")}
</section>
<section aria-labelledby="agent-proofs-heading"><h2 id="agent-proofs-heading">Proofs of this agent</h2>
${removals.some((f) => f !== null) ? html`<div class="actions">${removals}</div>` : null}
${agentProofForms(viewer, id, view.kinds) ?? readOnlyNote(viewer, "add proofs")}
<p>Proofs of the owner (a GitHub account, a wallet) count for every agent: <a href="/console/proofs">Proofs</a>.</p></section>
<section aria-labelledby="unclaim-heading"><h2 id="unclaim-heading">Unclaim it</h2>
<p>Let the agent go: its key stops, its proofs of this agent are removed and it has no score, until an owner claims it again.</p>
${unclaimLink ?? readOnlyNote(viewer, "unclaim it")}
</section>`;
  return consolePage(status, { title: agentTitle(o), main, viewer, current: "agents", notice: view.notice });
}

/** The page that asks before one of the owner's agents is unclaimed (issue #29): what it does, and the form that does it. */
export type UnclaimView = { viewer: ConsoleViewer; overview: AgentOverview; notice?: Notice };

/** The page that asks before an agent is unclaimed; the form's box must be ticked (the service checks it too). */
export function renderUnclaimPage<S extends number>(status: S, view: UnclaimView): RenderedPage<S> {
  const { viewer, overview: o } = view;
  const id = o.agent.id;
  const own = o.proofs.filter(({ proof }) => proof.agentId === id);
  const proofs =
    own.length === 0
      ? html`it holds none now`
      : html`${own.map(({ proof }, i) => html`${i === 0 ? "" : ", "}${proof.kind} <code>${proof.subject}</code>`)}`;
  const form = postForm(viewer, `/console/agents/${id}/unclaim`, {
    label: "Unclaim the agent",
    className: "stacked",
    danger: true,
    fields: html`<div class="confirm-box"><input type="checkbox" id="unclaim-confirm" name="confirm" value="yes" required>
<label for="unclaim-confirm">I understand the key stops working and the domain and ERC-8004 proofs are removed</label></div>
`,
  });
  const main = html`<header><p class="eyebrow">Unclaim</p><h1>Unclaim ${agentTitle(o)}?</h1>
<p class="muted"><code>${id}</code> · <a href="/console/agents/${id}">back to the agent</a></p></header>
<section aria-labelledby="effects-heading"><h2 id="effects-heading">What it does, at once</h2>
<ul class="effects">
<li>Its key stops working: its check-ins are refused.</li>
<li>Its proofs of this agent are removed (<span data-field="removed-proofs">${proofs}</span>).
Your own proofs (a GitHub account, a wallet) stay.</li>
<li>It leaves your agents, and no longer counts toward how many you may have.</li>
<li>It has no score: its public page, score and proof answer “not found”. The scores stored stay, and those anchored on chain stay
verifiable.</li>
<li>Any owner may claim it again, you too: a new claim, with a new key, from nothing (V2).</li>
</ul>
${form ?? readOnlyNote(viewer, "unclaim it")}</section>`;
  return consolePage(status, { title: `Unclaim ${agentTitle(o)}`, main, viewer, current: "agents", notice: view.notice });
}

/** An agent's key just made (a new agent, or a rotation): shown once, with how to check in with it. */
export type AgentKeyView = {
  viewer: ConsoleViewer;
  agentId: string;
  name: string | null;
  agentKey: string;
  /** The service's public URL, e.g. https://vrai.example.org. */
  origin: string;
  rotated: boolean;
};

const HEARTBEAT_WORDS =
  "With vrai-heartbeat (from @vrai/sdk): the key in a file only you can read, then the heartbeat, about hourly as the service asks.";

/** The page that shows an agent's key, once. */
export function renderAgentKeyPage<S extends number>(status: S, view: AgentKeyView): RenderedPage<S> {
  const { viewer, agentId, agentKey, origin } = view;
  const command = `umask 077 && printf '%s\\n' '${agentKey}' > vrai-agent.key\nnpx vrai-heartbeat --api ${origin} --agent ${agentId} --key-file vrai-agent.key`;
  const sdk =
    `import { createVraiAgent } from "@vrai/sdk";\n\n` +
    `const agent = createVraiAgent({ baseUrl: "${origin}", agentId: "${agentId}", agentKey: process.env.VRAI_AGENT_KEY ?? "" });\n` +
    "const heartbeat = agent.startHeartbeat({ onCheckIn: console.log, onError: (e) => console.error(e.message) });\n" +
    `process.once("SIGTERM", () => heartbeat.stop());`;
  const main = html`<header><p class="eyebrow">${view.rotated ? "Key rotated" : "Agent created"}</p><h1>${view.name ?? agentId}</h1>
<p class="muted"><code>${agentId}</code></p></header>
<div class="notice done" role="status"><p>${
    view.rotated
      ? "The agent has a new key: the old one is refused from now on."
      : "The agent is claimed: its score starts at its claim (V2)."
  } Copy its key now: it is shown this once and only its hash is kept.</p></div>
${secretBox("Agent key", "agent-key", agentKey)}
<section aria-labelledby="run-heading"><h2 id="run-heading">Keep it checking in</h2>
${snippet(HEARTBEAT_WORDS, "heartbeat-command", command)}
${snippet("Or in your agent's code, with the key in VRAI_AGENT_KEY:", "sdk-snippet", sdk)}
</section>
<p><a href="/console/agents/${agentId}">Go to the agent</a> · <a href="/console/agents">All agents</a></p>`;
  return consolePage(status, { title: view.rotated ? "New key" : "Agent created", main, viewer, current: "agents" });
}
