/**
 * The console's webhooks (issue #28, #29): the owner's endpoints with their state, the form that adds one (its event
 * types from the table of events), and one endpoint's page: a test ping, its delivery log a page at a time with a
 * redelivery of each, its secret rotated (shown once), enabled, disabled or deleted.
 */
import { toRfc3339 } from "../../method";
import { EVENT_MODULES, SUBSCRIBABLE_EVENT_TYPES } from "../../service/events/kinds";
import type { AttemptRow, WebhookEndpointRow } from "../../store/webhooks";
import { formatTime } from "../format";
import { html, type Html } from "../html";
import { pager, postForm, readOnlyNote, secretBox, type RenderedPage, type ConsoleViewer, type Notice } from "./common";
import { consolePage } from "./document";

const at = (t: number) => formatTime(toRfc3339(t));

/** An endpoint's state in words: enabled, failing since when, or disabled and why. */
export function endpointState(w: WebhookEndpointRow): Html {
  if (w.disabledAt !== null)
    return html`<span class="state-bad">disabled</span> since ${at(w.disabledAt)} (${w.disabledReason ?? "disabled"})`;
  if (w.failingSince !== null) return html`<span class="state-bad">failing</span> since ${at(w.failingSince)}`;
  return html`<span class="state-ok">enabled</span>`;
}

/** The form's values after a refusal, so nothing typed is lost. */
export type WebhookFormValues = { url?: string; description?: string; events?: readonly string[] };

function addForm(viewer: ConsoleViewer, values: WebhookFormValues): Html | null {
  const checked = new Set(values.events ?? SUBSCRIBABLE_EVENT_TYPES);
  return postForm(viewer, "/console/webhooks", {
    label: "Add the endpoint",
    className: "stacked",
    fields: html`<div><label for="webhook-url">URL <span class="hint">(https://)</span></label>
<input type="url" id="webhook-url" name="url" required maxlength="8192" value="${values.url ?? ""}"></div>
<div><label for="webhook-description">Description <span class="hint">(optional)</span></label>
<input type="text" id="webhook-description" name="description" maxlength="200" value="${values.description ?? ""}"></div>
<fieldset><legend>Events it is sent</legend>
${SUBSCRIBABLE_EVENT_TYPES.map(
  (type) => html`<label title="${EVENT_MODULES[type].summary}"><input type="checkbox" name="events" value="${type}"${
    checked.has(type) ? html` checked` : null
  }> ${type}</label>
`,
)}</fieldset>
`,
  });
}

/** The webhooks page: the owner's endpoints and the form that adds one. */
export type WebhooksView = {
  viewer: ConsoleViewer;
  endpoints: readonly WebhookEndpointRow[];
  nextCursor: string | null;
  later: boolean;
  values?: WebhookFormValues;
  notice?: Notice;
};

/** The console's webhooks page. */
export function renderWebhooksPage<S extends number>(status: S, view: WebhooksView): RenderedPage<S> {
  const { viewer } = view;
  const list =
    view.endpoints.length === 0
      ? html`<p>No endpoint${view.later ? " after these" : " yet"}.</p>`
      : html`<ul class="cards webhooks">${view.endpoints.map(
          (w) => html`<li class="card" data-webhook="${w.id}"><h3><a href="/console/webhooks/${w.id}">${w.url}</a></h3>
${w.description === null ? null : html`<p>${w.description}</p>`}
<p>${endpointState(w)} · ${w.events.length} event type${w.events.length === 1 ? "" : "s"}</p></li>`,
        )}</ul>`;
  const main = html`<header><h1>Webhooks</h1>
<p>Endpoints are sent your agents' events as they happen (signed as Standard Webhooks says; <code>verifyWebhook</code> of @vrai/sdk checks them).</p>
</header>
<section aria-labelledby="endpoints-heading"><h2 id="endpoints-heading">Endpoints</h2>${list}
${pager("Pages of endpoints", "/console/webhooks", view, ["First page", "Next endpoints"])}</section>
<section aria-labelledby="add-webhook-heading"><h2 id="add-webhook-heading">Add an endpoint</h2>
<p>Its signing secret is shown once.</p>
${addForm(viewer, view.values ?? {}) ?? readOnlyNote(viewer, "add endpoints")}</section>`;
  return consolePage(status, { title: "Webhooks", main, viewer, current: "webhooks", notice: view.notice });
}

/** One endpoint's page: its settings and state, what its owner does to it, and a page of its delivery log. */
export type WebhookView = {
  viewer: ConsoleViewer;
  endpoint: WebhookEndpointRow;
  attempts: readonly AttemptRow[];
  nextCursor: string | null;
  later: boolean;
  /** The signing secret just made (a new endpoint, or a rotation): shown this once. */
  secret?: string;
  notice?: Notice;
};

function attemptRow(viewer: ConsoleViewer, w: WebhookEndpointRow, a: AttemptRow): Html {
  const outcome = a.status === null ? (a.error ?? "no answer") : `HTTP ${a.status}${a.error === null ? "" : `: ${a.error}`}`;
  const redeliver =
    w.disabledAt === null
      ? postForm(viewer, `/console/webhooks/${w.id}/deliveries/${a.deliveryId}/redeliver`, { label: "Redeliver" })
      : null;
  return html`<tr data-delivery="${a.deliveryId}"><td>${at(a.at)}</td><td><code>${a.eventType}</code></td><td>${a.attempt}</td>
<td>${outcome}</td><td>${a.latencyMs} ms</td><td>${a.state}${a.nextAttemptAt === null ? "" : html`, next try ${at(a.nextAttemptAt)}`}</td>
<td>${redeliver}</td></tr>`;
}

/** The console page of one endpoint. */
export function renderWebhookPage<S extends number>(status: S, view: WebhookView): RenderedPage<S> {
  const { viewer, endpoint: w } = view;
  const base = `/console/webhooks/${w.id}`;
  const actions = [
    w.disabledAt === null ? postForm(viewer, `${base}/test`, { label: "Send a test ping" }) : null,
    postForm(viewer, `${base}/enabled`, {
      label: w.disabledAt === null ? "Disable" : "Enable again",
      fields: html`<input type="hidden" name="enabled" value="${w.disabledAt === null ? "false" : "true"}">`,
    }),
    postForm(viewer, `${base}/rotate-secret`, { label: "Rotate the secret", danger: true }),
    postForm(viewer, `${base}/delete`, { label: "Delete", danger: true }),
  ];
  const log =
    view.attempts.length === 0
      ? html`<p>No delivery tried yet.</p>`
      : html`<div class="table-wrap" tabindex="0"><table class="deliveries"><caption>Tries, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Try</th><th scope="col">Answer</th><th scope="col">Time</th>
<th scope="col">Delivery</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${view.attempts.map((a) => attemptRow(viewer, w, a))}</tbody></table></div>`;
  const main = html`<header><p class="eyebrow">Webhook endpoint</p><h1>${w.url}</h1>
<p class="muted"><code>${w.id}</code> · <a href="/console/webhooks">all endpoints</a></p></header>
${
  view.secret === undefined
    ? null
    : html`${secretBox("Signing secret (shown this once: keep it where your receiver reads it)", "webhook-secret", view.secret)}${
        w.previousSecretUntil === null ? null : html`<p>The previous secret signs beside it until ${at(w.previousSecretUntil)}.</p>`
      }`
}
<section aria-labelledby="endpoint-heading"><h2 id="endpoint-heading">Endpoint</h2>
<dl class="facts"><dt>State</dt><dd data-field="state">${endpointState(w)}</dd>
<dt>Description</dt><dd>${w.description ?? "none"}</dd>
<dt>Events</dt><dd>${w.events.map((e, i) => html`${i === 0 ? "" : ", "}<code>${e}</code>`)}</dd>
<dt>Created</dt><dd>${at(w.createdAt)}</dd></dl>
${viewer.scope === "full" ? html`<div class="actions">${actions}</div>` : readOnlyNote(viewer, "change it")}</section>
<section aria-labelledby="deliveries-heading"><h2 id="deliveries-heading">Deliveries</h2>${log}
${pager("Pages of deliveries", base, view, ["Newest", "Older tries"])}</section>`;
  return consolePage(status, { title: "Webhook endpoint", main, viewer, current: "webhooks", notice: view.notice });
}
