/**
 * The method page: the method in force and every version with what changed and why (from the
 * method registry, so a new version appears by itself), the exact rules of V3–V8 with the numbers
 * the engine uses, how to verify a score, and every declared window (V4.4), newest first, a page at a time.
 */
import {
  BANDS,
  BUSY_NEXT_HEARTBEAT_S,
  CLAIM_POINTS,
  CURRENT_METHOD,
  ESTABLISHED_DAYS,
  GRACE_S,
  identityMax,
  INTEGRITY_BASE,
  kindsOf,
  METHOD_VERSIONS,
  METHODS,
  MIN_INTERVAL_S,
  NEXT_HEARTBEAT_S,
  PENALTY_CODES,
  PENALTY_DAYS,
  PENALTY_POINTS,
  reachableMax,
  RELIABILITY_FULL_S,
  RELIABILITY_MAX,
  type ProofKind,
} from "../method";
import { proofKindModule } from "../service/proofs/kinds";
import { formatBand, formatCount, formatTime } from "./format";
import { html, type Html } from "./html";
import { renderDocument } from "./layout";

/** A declared window as the page lists it (RFC 3339 instants; `end` null while open). */
export type MethodPageOutage = { start: string; end: string | null; declaredAt: string; reason: string };

/** What the method page shows beyond the method itself: one page of declared windows. */
export type MethodPageView = {
  outages: readonly MethodPageOutage[];
  /** The link to the next page of windows, null on the last. */
  nextPage: string | null;
  /** Whether this is a later page (it then links back to the first). */
  laterPage: boolean;
};

/** The current method's V6 table. */
const IDENTITY = METHODS[CURRENT_METHOD].identity;

/** When a kind's proofs are checked again: the method's cadence, and what the kind's module adds. */
function recheck(kind: ProofKind): string {
  const days = IDENTITY[kind]?.recheckDays ?? null;
  const note = proofKindModule(kind).recheckNote;
  if (days === null) return note ? `never: ${note}` : "never";
  return note ? `every ${days} days, ${note}` : `every ${days} days`;
}

function renderVersions(): Html {
  return html`<section aria-labelledby="versions-heading">
<h2 id="versions-heading">Versions</h2>
<p>Vrai computes new scores with method <strong id="current-method">${CURRENT_METHOD}</strong>.
A stored score keeps the method it was computed with and is recomputed with that method's rules.</p>
<ol class="versions" reversed>${METHOD_VERSIONS.map((v) => {
    const m = METHODS[v];
    return html`<li data-version="${v}"><h3>Method ${v}${v === CURRENT_METHOD ? " (current)" : ""}</h3>
<p class="muted">Published <time datetime="${m.published}">${m.published}</time></p>
<p>${m.changes}</p></li>`;
  })}</ol>
</section>`;
}

/** The kinds that belong to one agent, by name: "Domain, ERC-8004 identity". */
const oneAgentKinds = () =>
  kindsOf(IDENTITY)
    .filter((k) => IDENTITY[k]?.belongsTo === "agent")
    .map((k) => proofKindModule(k).title)
    .join(", ");

/** A proof kind's row of the identity table. */
function identityRow(kind: ProofKind): Html {
  const title = proofKindModule(kind).title;
  const points = IDENTITY[kind]?.points;
  const holder = IDENTITY[kind]?.belongsTo === "owner" ? "the owner: counts for each agent the owner has claimed" : "one agent";
  return html`<tr data-proof="${kind}"><th scope="row">${title}</th><td>${points}</td><td>${holder}</td><td>${recheck(kind)}</td></tr>`;
}

function renderIdentity(): Html {
  return html`<section aria-labelledby="identity-heading">
<h2 id="identity-heading">Identity: 0 to ${identityMax(IDENTITY)}</h2>
<div class="table-wrap" tabindex="0" role="region" aria-label="Identity proofs"><table class="identity">
<thead><tr><th scope="col">Proof</th><th scope="col">Points</th><th scope="col">Belongs to</th><th scope="col">Checked again</th></tr></thead>
<tbody>
<tr><th scope="row">Claim</th><td>${CLAIM_POINTS}</td><td>the agent</td><td>—</td></tr>
${kindsOf(IDENTITY).map(identityRow)}
</tbody></table></div>
<p>Each kind counts once. What a proof of one agent proves (${oneAgentKinds()}) is bound to that agent alone while the proof holds.
A check that cannot reach its source is tried 3 times; a proof that fails two checks in a row is removed, and the score is recomputed
at once. No agent gains points from another agent's score.</p>
</section>`;
}

function renderReliability(): Html {
  return html`<section aria-labelledby="reliability-heading">
<h2 id="reliability-heading">Reliability: 0 to ${RELIABILITY_MAX}</h2>
<ul>
<li>Each answer to a check-in says when to come back: ${formatCount(NEXT_HEARTBEAT_S)} seconds normally,
${formatCount(BUSY_NEXT_HEARTBEAT_S)} seconds while Vrai is busy.</li>
<li>A check-in less than ${formatCount(MIN_INTERVAL_S)} seconds after the previous counted one is refused and not counted.
A repeated idempotency key counts once.</li>
<li>A check-in is on time when it arrives no later than the previous counted check-in's arrival, plus the time it was given,
plus ${GRACE_S} seconds. A check-in due inside a declared window that comes back in time is excused and counts as on time.</li>
<li>An on-time check-in earns as credit the seconds since the previous counted one; a late one earns 0; the first after a claim earns 0.</li>
<li>Reliability = round(${RELIABILITY_MAX} × min(1, S ÷ ${formatCount(RELIABILITY_FULL_S)})), where S is the sum of the credits
of the 30 complete UTC days before the day of the score, and a half rounds up (method 0.1 rounded down).
${formatCount(RELIABILITY_FULL_S)} is the number of seconds in 30 days.</li>
</ul>
<p>Vrai publishes no count of missed check-ins: under load it asks for fewer check-ins, and such a count would blame agents for Vrai's own load.</p>
</section>`;
}

function renderIntegrity(): Html {
  return html`<section aria-labelledby="integrity-heading">
<h2 id="integrity-heading">Integrity: 0 to ${INTEGRITY_BASE}, Shield not active</h2>
<p>Integrity starts at ${INTEGRITY_BASE}; active penalties subtract their points, down to 0.
A penalty has a code (${PENALTY_CODES.map((c, i) => html`${i > 0 ? ", " : ""}<code>${c}</code>`)}),
${PENALTY_POINTS.min} to ${PENALTY_POINTS.max} points and lasts ${PENALTY_DAYS.min} to ${PENALTY_DAYS.max} whole days.
Only an operator adds or revokes one, and each is logged with who, when and why.</p>
<p>Shield, the 50 points above ${INTEGRITY_BASE}, is not active in method ${CURRENT_METHOD}: it has no value and never counts against
an agent, in its score or in rankings.</p>
</section>`;
}

function renderTotal(): Html {
  const reachable = reachableMax(CURRENT_METHOD);
  return html`<section aria-labelledby="total-heading">
<h2 id="total-heading">Total, bands and state</h2>
<p>The total is Identity + Reliability + Integrity, the active components only: 0 to ${reachable} under method ${CURRENT_METHOD},
on a scale of 0 to 1,000.
A newly claimed agent with no proofs scores ${CLAIM_POINTS} + 0 + ${INTEGRITY_BASE} = ${CLAIM_POINTS + INTEGRITY_BASE}.</p>
<p>A band is the range of the total: ${BANDS.map((b, i) => html`${i > 0 ? ", " : ""}<span class="band">${formatBand(b)}</span>`)}.
A band names a range, nothing more: it is not a grade.</p>
<p>A score is <strong>established</strong> when counted check-ins since the latest claim fall on
${ESTABLISHED_DAYS} or more different UTC days, and <strong>provisional</strong> before that.
Under method 0.2 an established score stays established until the agent's next claim.</p>
</section>`;
}

function renderVerify(): Html {
  return html`<section aria-labelledby="verify-heading">
<h2 id="verify-heading">Verify a score yourself</h2>
<p>Every score is a pure function of its stored inputs, kept as canonical JSON (RFC 8785) with their SHA-256.
Each day's scores are gathered in a Merkle tree whose root is anchored on chain.</p>
<p>Until the <code>@vrai/sdk</code> package is on the npm registry, pack it from a checkout of Vrai's repository
(after its <code>npm install</code>; Node 20.19 or later), then run its command from the tarball, here or anywhere you copy it:</p>
<pre class="snippet"><code>cd packages/sdk &amp;&amp; npm pack
npx --yes --package ./vrai-sdk-0.1.0.tgz vrai-verify AGENT_ID --day YYYY-MM-DD --api https://vrai.example --rpc RPC_URL</code></pre>
<p><code>vrai-verify</code>, the command of the <code>@vrai/sdk</code> package
(in a project that has it installed: <code>npx vrai-verify</code>), does what an outside verifier does:
it fetches the score's inputs from the API, recomputes the score from them, checks their SHA-256, checks the Merkle proof of the score
in the day's tree, and reads the root's anchor on chain. It exits 0 only when all of these hold.
It needs nothing of Vrai but the package, and <code>verifyScore</code> does the same from code.</p>
<p>A daily score exists from the first 00:00 UTC after an agent's claim; before it, the command says when it comes.</p>
</section>`;
}

function renderOutages(view: MethodPageView): Html {
  const rows =
    view.outages.length === 0
      ? html`<p>${view.laterPage ? "No more declared windows." : "Vrai has declared no window."}</p>`
      : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Declared windows, table"><table class="outages">
<thead><tr><th scope="col">Start</th><th scope="col">End</th><th scope="col">Declared at</th><th scope="col">Reason</th></tr></thead>
<tbody>${view.outages.map((o) => {
          const end = o.end === null ? "open" : formatTime(o.end);
          return html`<tr><td>${formatTime(o.start)}</td><td>${end}</td><td>${formatTime(o.declaredAt)}</td><td>${o.reason}</td></tr>`;
        })}</tbody>
</table></div>`;
  const newest = view.laterPage ? html`<a href="/method#outages-heading">Newest windows</a>` : null;
  const older = view.nextPage === null ? null : html`<a rel="next" href="${view.nextPage}">Older windows</a>`;
  const pager =
    newest === null && older === null ? null : html`<nav class="pager" aria-label="Declared windows pages">${newest}${older}</nav>`;
  return html`<section aria-labelledby="outages-heading">
<h2 id="outages-heading">Every declared window</h2>
<p>Windows in which Vrai itself could not take check-ins, newest first (V4.4). A window may be declared while it lasts, or after it ended
within 48 hours of its start; windows that overlap or touch count as one.
The same list is served as JSON at <a href="/v1/outages">/v1/outages</a>.</p>
${rows}
${pager}
</section>`;
}

/**
 * The method page as a complete HTML document. Pure: the same view gives the same bytes.
 * @example renderMethodPage({ outages: [], nextPage: null, laterPage: false })
 */
export function renderMethodPage(view: MethodPageView): string {
  return renderDocument({
    title: `Method ${CURRENT_METHOD} — Vrai`,
    current: "method",
    main: html`<header><p class="eyebrow">Method</p><h1>How the Vrai Score is computed</h1>
<p class="muted">The rules below are the ones the service runs, with the numbers it uses. The same inputs always give the same score.</p></header>
${renderVersions()}${renderIdentity()}${renderReliability()}${renderIntegrity()}${renderTotal()}${renderVerify()}${renderOutages(view)}`,
  });
}

/** The 400 page for a link to the windows that no page gave (a cursor that is not one). */
export function renderMethodBadRequestPage(message: string): string {
  return renderDocument({
    title: "Bad request — Vrai",
    current: "method",
    main: html`<header><p class="eyebrow">Method</p><h1>Bad request</h1></header><p>${message}</p><p><a href="/method">The method page</a></p>`,
  });
}
