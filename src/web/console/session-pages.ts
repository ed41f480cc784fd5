/** The console's pages of signing in, sessions and tokens (issue #29), and its refusals. */
import { toRfc3339 } from "../../method";
import type { SessionView } from "../../service/console-sessions";
import type { ReadTokenView } from "../../service/owner-tokens";
import { formatTime } from "../format";
import { html, type Html } from "../html";
import { consoleScript, type ConsoleScriptFile } from "./assets";
import { csrfField, postButton, renderConsolePage, type ConsoleViewer } from "./layout";

/** A signed-in viewer of the sessions page: its own session is marked. */
type SessionViewer = ConsoleViewer & { sessionId: string };

/** What the console's pages of this module render; the HTTP layer (src/api/console) hands them their data. */
export type SessionPages = {
  signIn(view: { next: string; error?: string; notice?: string }): string;
  sessions(view: { viewer: SessionViewer; sessions: SessionView[]; notice?: string; error?: string }): string;
  tokens(view: {
    viewer: ConsoleViewer;
    tokens: ReadTokenView[];
    shown?: { kind: "read"; name: string; token: string } | { kind: "owner"; token: string };
    notice?: string;
    error?: string;
  }): string;
  refusal(view: { status: number; title: string; message: string; viewer?: ConsoleViewer }): string;
  script: ConsoleScriptFile | null;
};

const when = (t: number): Html => formatTime(toRfc3339(t));

/** How a session signed in, in words. */
function loginText(login: string): Html {
  if (login.startsWith("siwe:")) return html`wallet <code>${login.slice("siwe:".length)}</code>`;
  if (login.startsWith("read-token:")) return html`read-only token <code>${login.slice("read-token:".length)}</code>`;
  return html`owner token`;
}

function signIn(view: { next: string; error?: string; notice?: string }): string {
  return renderConsolePage({
    title: "Sign in",
    error: view.error,
    notice: view.notice,
    main: html`<h1>Sign in to the console</h1>
<p class="muted">Your agents, keys, proofs and webhooks, in the browser: what the API does, with the same rules.</p>
<section aria-labelledby="wallet-heading">
<h2 id="wallet-heading">With your wallet</h2>
<p>Sign a message with your wallet (Sign-In with Ethereum, EIP-4361): no transaction and no fee.
A first sign-in with an address makes a new owner; an address you proved as your wallet signs in as you.</p>
<p id="siwe-unavailable" class="hint">Signing in with a wallet needs JavaScript and a wallet in this browser. Without them, use a token below.</p>
<button type="button" id="siwe-sign-in" data-next="${view.next}" hidden>Sign in with Ethereum</button>
<p id="siwe-status" class="hint" role="status" aria-live="polite"></p>
<div id="siwe-error" class="alert" role="alert" hidden></div>
</section>
<section aria-labelledby="token-heading">
<h2 id="token-heading">With a token</h2>
<form class="stack" method="post" action="/console/sign-in">
<input type="hidden" name="next" value="${view.next}">
<label for="token">Owner token</label>
<input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required aria-describedby="token-hint">
<p id="token-hint" class="hint">The owner token (<code>vo_…</code>) <code>POST /v1/owners</code> gave you,
or a read-only token (<code>vor_…</code>), which can look at everything and change nothing.</p>
<div><button type="submit">Sign in</button></div>
</form>
</section>`,
  });
}

function sessions(view: { viewer: SessionViewer; sessions: SessionView[]; notice?: string; error?: string }): string {
  const { viewer } = view;
  const full = viewer.scope === "full";
  const rows = view.sessions.map(
    (s) => html`<tr${s.id === viewer.sessionId ? html` aria-current="true"` : null}>
<td>${when(s.createdAt)}${s.id === viewer.sessionId ? html` <strong>(this browser)</strong>` : null}</td>
<td>${loginText(s.login)}${s.scope === "read" ? " (read-only)" : ""}</td>
<td>${s.userAgent ?? html`<span class="muted">unknown</span>`}</td>
<td>${when(s.lastSeenAt)}</td>
<td>${when(s.endsAt)}</td>
<td>${full ? postButton(viewer, `/console/sessions/${s.id}/revoke`, "Sign out") : null}</td>
</tr>`,
  );
  return renderConsolePage({
    title: "Sessions",
    current: "sessions",
    viewer,
    error: view.error,
    notice: view.notice,
    main: html`<h1>Sessions</h1>
<p class="muted">Every browser signed in to your console. A session ends when it has not been used for a while, at the latest
some hours after it signed in, or when it is signed out here.</p>
<div class="table-wrap" tabindex="0" role="region" aria-labelledby="sessions-caption"><table>
<caption id="sessions-caption">Signed-in sessions, newest first</caption>
<thead><tr><th scope="col">Signed in</th><th scope="col">With</th><th scope="col">Browser</th><th scope="col">Last used</th>
<th scope="col">Ends</th><th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${rows}</tbody>
</table></div>
${
  full
    ? html`<section aria-labelledby="everywhere-heading"><h2 id="everywhere-heading">Sign out everywhere</h2>
<p>Ends every session above, this one too: use it when a browser you signed in on is not in your hands.</p>
${postButton(viewer, "/console/sessions/sign-out-everywhere", "Sign out everywhere", { danger: true })}</section>`
    : null
}`,
  });
}

function tokens(view: {
  viewer: ConsoleViewer;
  tokens: ReadTokenView[];
  shown?: { kind: "read"; name: string; token: string } | { kind: "owner"; token: string };
  notice?: string;
  error?: string;
}): string {
  const { viewer, shown } = view;
  const full = viewer.scope === "full";
  const rows = view.tokens.map(
    (t) => html`<tr>
<td>${t.name}</td><td><code>${t.id}</code></td><td>${when(t.createdAt)}</td>
<td>${t.revokedAt === null ? "works" : html`revoked ${when(t.revokedAt)}`}</td>
<td>${full && t.revokedAt === null ? postButton(viewer, `/console/tokens/${t.id}/revoke`, "Revoke", { danger: true }) : null}</td>
</tr>`,
  );
  return renderConsolePage({
    title: "Tokens",
    current: "tokens",
    viewer,
    error: view.error,
    notice: view.notice,
    main: html`<h1>API tokens</h1>
${
  shown
    ? html`<section class="notice" aria-labelledby="shown-heading">
<h2 id="shown-heading">${shown.kind === "read" ? html`Your new read-only token “${shown.name}”` : "Your new owner token"}</h2>
<p>Copy it now: it is shown this once, and only its hash is kept.${
        shown.kind === "owner"
          ? " The old owner token no longer works, and the other sessions signed in with it are signed out: update every program that used it."
          : ""
      }</p>
<code class="secret" id="shown-token">${shown.token}</code>
</section>`
    : null
}
${full ? null : html`<p class="notice">You signed in with a read-only token: you can see your tokens, and change none.</p>`}
<section aria-labelledby="owner-heading">
<h2 id="owner-heading">Owner token</h2>
<p>The owner token (<code>vo_…</code>) can do everything you can: claim agents, rotate keys, add proofs and webhooks.
Rotating it gives you a new one and stops the old one at once, with the other sessions signed in with it.</p>
${full ? postButton(viewer, "/console/tokens/owner/rotate", "Rotate the owner token", { danger: true }) : null}
</section>
<section aria-labelledby="read-heading">
<h2 id="read-heading">Read-only tokens</h2>
<p>A read-only token (<code>vor_…</code>) can call every owner route of the API that reads (<code>GET</code>), and sign in here to look;
everything that would change something is refused. Give one to a dashboard or a monitoring script.</p>
${
  view.tokens.length === 0
    ? html`<p class="muted">You have no read-only token.</p>`
    : html`<div class="table-wrap" tabindex="0" role="region" aria-labelledby="tokens-caption"><table>
<caption id="tokens-caption">Read-only tokens, oldest first</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Created</th><th scope="col">State</th>
<th scope="col"><span class="muted">Action</span></th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
}
${
  full
    ? html`<form class="stack" method="post" action="/console/tokens">
${csrfField(viewer)}
<label for="token-name">Name of a new read-only token</label>
<input id="token-name" name="name" type="text" maxlength="100" required placeholder="dashboard">
<div><button type="submit">Create a read-only token</button></div>
</form>`
    : null
}
</section>`,
  });
}

function refusal(view: { status: number; title: string; message: string; viewer?: ConsoleViewer }): string {
  return renderConsolePage({
    title: view.title,
    viewer: view.viewer,
    error: view.message,
    main: html`<h1>${view.title}</h1>
<p><a href="${view.viewer ? "/console" : "/console/sign-in"}">${view.viewer ? "Back to the console" : "Sign in"}</a></p>`,
  });
}

/** The console's pages of signing in, sessions and tokens. */
export function createSessionPages(): SessionPages {
  return {
    signIn,
    sessions,
    tokens,
    refusal,
    get script() {
      return consoleScript();
    },
  };
}
