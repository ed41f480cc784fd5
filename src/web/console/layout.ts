/**
 * The shell of every page of the owners' console (issue #29): the site's style, the console's navigation, who is
 * signed in and a sign-out button, a place for what went wrong (in words a person can act on) and for what just
 * happened, and the console's one script file (no inline script: the console's policy runs only that file).
 */
import { html, htmlToString, type Html } from "../html";
import { STYLE } from "../layout";
import { consoleScript } from "./assets";

/** The sections of the console its navigation links to. */
export type ConsoleSection = "agents" | "proofs" | "webhooks" | "tokens" | "sessions";

/** Who is signed in, as a page needs it: whose console, what it may do, and the token its forms send back. */
export type ConsoleViewer = { ownerId: string; scope: "full" | "read"; csrfToken: string };

export const CONSOLE_NAV: ReadonlyArray<{ section: ConsoleSection; href: string; label: string }> = [
  { section: "agents", href: "/console/agents", label: "Agents" },
  { section: "proofs", href: "/console/proofs", label: "Proofs" },
  { section: "webhooks", href: "/console/webhooks", label: "Webhooks" },
  { section: "tokens", href: "/console/tokens", label: "Tokens" },
  { section: "sessions", href: "/console/sessions", label: "Sessions" },
];

const CONSOLE_STYLE: Html = html`<style>
.console-header .who { color: var(--muted); font-size: 0.9rem; overflow-wrap: anywhere; }
.console-header form { margin: 0; }
.button, button { font: inherit; padding: 8px 16px; border: 1px solid var(--accent); border-radius: 6px; background: var(--accent);
  color: #fff; cursor: pointer; }
.button.secondary, button.secondary { background: #fff; color: var(--accent); }
button.danger { background: #fff; color: #a1261b; border-color: #a1261b; }
.console-header button { padding: 4px 12px; }
.alert { border: 1px solid #a1261b; border-left-width: 6px; border-radius: 6px; padding: 12px 14px; margin: 0 0 16px; background: #fdf3f2; }
.notice { border: 1px solid var(--line); border-left: 6px solid #1e6b34; border-radius: 6px; padding: 12px 14px; margin: 0 0 16px;
  background: #f2f8f3; }
form.stack { display: grid; gap: 8px; max-width: 560px; }
label { font-weight: 600; }
input[type="text"], input[type="password"], textarea { width: 100%; font: inherit; padding: 8px 10px; border: 1px solid var(--muted);
  border-radius: 6px; }
.hint { color: var(--muted); font-size: 0.9rem; }
.secret { display: block; padding: 8px 10px; background: var(--soft); border: 1px solid var(--line); border-radius: 6px; user-select: all; }
td form { margin: 0; }
td code { overflow-wrap: normal; white-space: nowrap; }
</style>`;

/** A page of the console. */
export type ConsolePage = {
  title: string;
  /** The section the page is in, marked in the navigation. */
  current?: ConsoleSection;
  /** Who is signed in; absent on the sign-in page (no navigation then). */
  viewer?: ConsoleViewer;
  main: Html;
  /** What went wrong, in words a person can act on: shown first, announced (role="alert"). */
  error?: string;
  /** What just happened (a token revoked, signed out): shown first, announced politely. */
  notice?: string;
  /** Added to the head after the console's style: a page's own style rules. */
  head?: Html;
};

/** The hidden field every state-changing form of a signed-in page carries. */
export function csrfField(viewer: ConsoleViewer): Html {
  return html`<input type="hidden" name="csrf" value="${viewer.csrfToken}">`;
}

/**
 * A form that changes something: POST to `action` with the session's CSRF token, a submit button labelled `label`.
 * @example postButton(viewer, "/console/tokens/tok_1/revoke", "Revoke", { danger: true })
 */
export function postButton(viewer: ConsoleViewer, action: string, label: string, options: { danger?: boolean; fields?: Html } = {}): Html {
  return html`<form method="post" action="${action}">${csrfField(viewer)}${options.fields}<button type="submit"${
    options.danger ? html` class="danger"` : null
  }>${label}</button></form>`;
}

function consoleHeader(page: ConsolePage): Html {
  const viewer = page.viewer;
  return html`<header class="site-header console-header"><nav aria-label="Console">
<a class="brand" href="/console">Vrai console</a>
${
  viewer
    ? html`<ul>${CONSOLE_NAV.map(
        (n) => html`<li><a href="${n.href}"${n.section === page.current ? html` aria-current="page"` : null}>${n.label}</a></li>`,
      )}</ul>
<span class="who">${viewer.ownerId}${viewer.scope === "read" ? " (read-only)" : ""}</span>
${postButton(viewer, "/console/sign-out", "Sign out")}`
    : html`<ul><li><a href="/">Vrai</a></li><li><a href="/agents">Directory</a></li></ul>`
}
</nav></header>`;
}

/** A complete HTML document of the console: its header, what went wrong or happened, then `main`. */
export function renderConsolePage(page: ConsolePage): string {
  const script = consoleScript();
  return htmlToString(html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title} · Vrai console</title>
<link rel="icon" href="data:,">
${STYLE}
${CONSOLE_STYLE}
${page.head ?? null}
${script ? html`<script src="${script.path}" integrity="${script.integrity}" defer></script>` : null}
</head>
<body>
${consoleHeader(page)}
<main>
${page.error ? html`<div class="alert" role="alert"><p><strong>Not done:</strong> ${page.error}</p></div>` : null}
${page.notice ? html`<div class="notice" role="status"><p>${page.notice}</p></div>` : null}
${page.main}
</main>
</body>
</html>
`);
}
