/**
 * The directory page (`/agents`): claimed agents ranked by the total of their latest Vrai score
 * (V8), with band and state in neutral words (a band is a range of totals, not a grade), a search
 * form and filters that work without JavaScript, and links to the pages before and after by cursor.
 * Rendering is a pure function of what the directory service answers.
 */
import { BANDS, CURRENT_METHOD, reachableMax, toRfc3339 } from "../method";
import {
  DIRECTORY_QUERY_MAX,
  DIRECTORY_STATES,
  type Directory,
  type DirectoryEntry,
  type DirectoryFilter,
  type DirectoryRequest,
} from "../service/directory";
import { formatBand, formatTime } from "./format";
import { html, type Html } from "./html";
import { PAGE_HEADERS, renderDocument } from "./layout";

/**
 * The agent page's headers, but the search form may submit to this site (`form-action 'self'`);
 * still no script, nothing from elsewhere, no framing.
 */
export const DIRECTORY_PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...PAGE_HEADERS,
  "Content-Security-Policy": PAGE_HEADERS["Content-Security-Policy"].replace("form-action 'none'", "form-action 'self'"),
};

// V8, V7: the reachable maximum while Shield is not active.
const REACHABLE_MAX = reachableMax(CURRENT_METHOD);

const STATE_WORDS: Readonly<Record<string, string>> = { provisional: "Provisional", established: "Established" };

/** What the directory page shows: one page of the ranking, the filter it was asked with, and its neighbours' cursors. */
export type DirectoryView = {
  agents: readonly DirectoryEntry[];
  filter: DirectoryFilter;
  limit: number;
  nextCursor: string | null;
  prevCursor: string | null;
};

/** A link to the directory with `filter` (and `cursor`), empty parameters left out. */
export function directoryHref(filter: DirectoryFilter, cursor?: string, limit?: number): string {
  const params = new URLSearchParams();
  if (filter.q) params.set("q", filter.q);
  if (filter.band) params.set("band", filter.band);
  if (filter.state) params.set("state", filter.state);
  if (limit !== undefined) params.set("limit", String(limit));
  if (cursor) params.set("cursor", cursor);
  const query = params.toString();
  return query ? `/agents?${query}` : "/agents";
}

function option(value: string, label: string, selected: string | undefined): Html {
  return html`<option value="${value}"${selected === value ? html` selected` : ""}>${label}</option>`;
}

function filterForm(filter: DirectoryFilter): Html {
  return html`<form class="directory-filter" method="get" action="/agents" role="search"
style="display: flex; flex-wrap: wrap; gap: 12px; align-items: end; margin: 0 0 16px;">
<p style="margin: 0; flex: 1 1 220px;"><label for="q">Name or agent id</label><br>
<input id="q" name="q" type="search" maxlength="${DIRECTORY_QUERY_MAX}" value="${filter.q ?? ""}"
style="width: 100%; font: inherit; padding: 6px 8px;"></p>
<p style="margin: 0;"><label for="band">Band (range of totals)</label><br>
<select id="band" name="band" style="font: inherit; padding: 6px;">
${option("", "Any band", filter.band)}${BANDS.map((b) => option(b, formatBand(b), filter.band))}
</select></p>
<p style="margin: 0;"><label for="state">State</label><br>
<select id="state" name="state" style="font: inherit; padding: 6px;">
${option("", "Any state", filter.state)}${DIRECTORY_STATES.map((s) => option(s, STATE_WORDS[s], filter.state))}
</select></p>
<p style="margin: 0;"><button type="submit" style="font: inherit; padding: 6px 14px;">Show</button></p>
</form>`;
}

/** What marks a registered name as the agent's own words. */
const SELF_DECLARED_MARK = html`<span class="muted">(self-declared, ERC-8004)</span>`;

/** Longest registered name shown in a row: a longer one is cut (its agent's page shows it whole). */
const SHOWN_REGISTERED_NAME_MAX = 100;

function row(a: DirectoryEntry): Html {
  const at = toRfc3339(a.at);
  const shown = (name: string) => (name.length > SHOWN_REGISTERED_NAME_MAX ? `${name.slice(0, SHOWN_REGISTERED_NAME_MAX)}…` : name);
  const registered =
    a.registeredName === null
      ? null
      : html`<br><small class="registered-name" style="font-weight: normal;">Registered as “${shown(a.registeredName)}” ${SELF_DECLARED_MARK}</small>`;
  return html`<tr data-agent-id="${a.agentId}">
<th scope="row" style="overflow-wrap: anywhere;"><a href="/agents/${a.agentId}">${a.name ?? a.agentId}</a>${registered}<br>
<code class="muted">${a.agentId}</code><br>
<small class="muted" style="font-weight: normal;">scored ${formatTime(at)}</small></th>
<td style="font-variant-numeric: tabular-nums;">${a.total}</td>
<td>${formatBand(a.band)}</td>
<td>${STATE_WORDS[a.state] ?? a.state}</td>
</tr>`;
}

function ranking(view: DirectoryView): Html {
  if (view.agents.length === 0) return html`<p id="no-agents">No claimed agent with a score matches this search.</p>`;
  return html`<table id="directory">
<caption>Ranked by the total of the latest Vrai score (0–${REACHABLE_MAX} reachable in method ${CURRENT_METHOD}), highest first;
equal totals by agent id.</caption>
<thead><tr><th scope="col">Agent</th><th scope="col">Total</th><th scope="col">Band</th><th scope="col">State</th></tr></thead>
<tbody>
${view.agents.map(row)}
</tbody>
</table>`;
}

function pager(view: DirectoryView): Html {
  if (!view.prevCursor && !view.nextCursor) return html``;
  const limit = view.limit === 20 ? undefined : view.limit;
  return html`<nav aria-label="Pages of the directory" style="display: flex; justify-content: space-between; gap: 16px; margin-top: 16px;">
${view.prevCursor ? html`<a id="prev-page" rel="prev" href="${directoryHref(view.filter, view.prevCursor, limit)}">← Previous page</a>` : html`<span></span>`}
${view.nextCursor ? html`<a id="next-page" rel="next" href="${directoryHref(view.filter, view.nextCursor, limit)}">Next page →</a>` : html`<span></span>`}
</nav>`;
}

const header = html`<header>
<p class="eyebrow">Vrai</p>
<h1>Directory of agents</h1>
<p>Every claimed agent with its latest Vrai score. The band is the range of 200 points the total falls in; the state says whether
the agent has checked in on enough different days since its latest claim to be established. Only active components count, so Shield,
not active in method 0.2, counts against no one.</p>
</header>`;

/** The directory page. */
export function renderDirectoryPage(view: DirectoryView): string {
  return renderDocument({
    title: "Directory of agents — Vrai",
    main: html`${header}<section aria-label="Search and filters">${filterForm(view.filter)}${ranking(view)}${pager(view)}</section>
<p class="muted">The same ranking as JSON: <a href="/v1/agents">/v1/agents</a>.</p>`,
  });
}

/** The page for a request the directory cannot answer, naming the parameter. */
export function renderDirectoryBadRequestPage(message: string): string {
  return renderDocument({
    title: "Not a directory request — Vrai",
    main: html`${header}<section aria-labelledby="bad-request"><h2 id="bad-request">This request cannot be answered</h2>
<p id="bad-request-reason"><code>${message}</code></p>
<p><a href="/agents">The directory from its first page</a>.</p>
</section>`,
  });
}

/** A rendered directory page. */
export type DirectoryPageAnswer = { status: 200 | 400; headers: Readonly<Record<string, string>>; text: string };

/** What renders the directory page. */
export type DirectoryPages = {
  /** The page a valid request asks for, or a 400 page saying which parameter is not valid. */
  directoryPage(request: DirectoryRequest | { invalid: string }): Promise<DirectoryPageAnswer>;
};

/** The directory page over the directory service. */
export function createDirectoryPages(deps: { directory: Directory }): DirectoryPages {
  return {
    async directoryPage(request) {
      if ("invalid" in request)
        return { status: 400, headers: DIRECTORY_PAGE_HEADERS, text: renderDirectoryBadRequestPage(request.invalid) };
      const page = await deps.directory.page(request);
      return {
        status: 200,
        headers: DIRECTORY_PAGE_HEADERS,
        text: renderDirectoryPage({ ...page, filter: request.filter, limit: request.limit }),
      };
    },
  };
}
