/**
 * What the console's pages of agents, proofs and webhooks (issue #29) share: whether the session may write (a read-only
 * session sees every page and no form that writes), the forms that carry the session's token, the message at the top of
 * a page, a secret shown once, and their style rules beside the console's.
 */
import { html, type Html } from "../html";
import { csrfField, type ConsoleViewer } from "./layout";

export type { ConsoleViewer };

/** A message at the top of a page: what went wrong, in words a person acts on, or what was just done. */
export type Notice = { kind: "error" | "done"; text: string };

/** A rendered console page: its status and its HTML (the console's layer sets its headers). */
export type RenderedPage<S extends number = number> = { status: S; text: string };

/** Whether the session may change anything: a read-only session sees every page and is shown no form that writes. */
export const canWrite = (viewer: ConsoleViewer): boolean => viewer.scope === "full";

/**
 * A form that changes something, posted to `action`, with the session's token; nothing for a read-only session.
 * @param options.label the button's words
 * @param options.fields the form's fields before its button
 */
export function postForm(
  viewer: ConsoleViewer,
  action: string,
  options: { label: string; fields?: Html; className?: string; danger?: boolean; attributes?: Html },
): Html | null {
  if (!canWrite(viewer)) return null;
  return html`<form method="post" action="${action}" class="${options.className ?? "inline-form"}"${options.attributes ?? null}>
${csrfField(viewer)}
${options.fields ?? null}<button type="submit"${options.danger ? html` class="danger"` : null}>${options.label}</button>
</form>`;
}

/**
 * The links of a keyset-paged list at `base`: back to its first page on a later one, and on to the next (`?cursor=`).
 * @param words what the two links say, e.g. ["First page", "Next agents"]
 */
export function pager(label: string, base: string, page: { later: boolean; nextCursor: string | null }, words: [string, string]): Html {
  return html`<nav class="pager" aria-label="${label}">${page.later ? html`<a href="${base}">${words[0]}</a>` : null}${
    page.nextCursor === null ? null : html`<a rel="next" href="${base}?cursor=${encodeURIComponent(page.nextCursor)}">${words[1]}</a>`
  }</nav>`;
}

/** Shown to a read-only session where a form would be. */
export function readOnlyNote(viewer: ConsoleViewer, what: string): Html | null {
  return canWrite(viewer)
    ? null
    : html`<p class="muted">This session is read-only: sign in with the owner token or a wallet to ${what}.</p>`;
}

/** A secret shown once (an agent key, a signing secret): selected whole in one click, to copy. */
export function secretBox(label: string, id: string, value: string): Html {
  return html`<div class="secret-box">
<p><strong>${label}</strong></p>
<pre class="copyable" id="${id}" tabindex="0">${value}</pre>
</div>`;
}

/** A command or a code snippet to copy, after its label (none when empty). */
export function snippet(label: string, id: string, code: string): Html {
  return html`${label === "" ? null : html`<p>${label}</p>`}
<pre class="copyable" id="${id}" tabindex="0">${code}</pre>`;
}

/** The console's own styles, added to the site's (forms, notices, secrets). */
export const CONSOLE_STYLE: Html = html`<style>
main { overflow-wrap: anywhere; }
form.stacked { display: grid; gap: 10px; max-width: 640px; margin: 8px 0; }
form.stacked label { display: block; overflow-wrap: anywhere; }
form.stacked button { justify-self: start; }
form.stacked .confirm-box { display: flex; gap: 8px; align-items: baseline; }
form.stacked .confirm-box label { display: inline; }
form.stacked .hint { color: var(--muted); font-size: 0.9rem; font-weight: 400; }
form input[type="text"], form input[type="url"], form select, form textarea { font: inherit; padding: 7px 9px; width: 100%;
  border: 1px solid var(--muted); border-radius: 6px; min-width: 0; }
form fieldset { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
form fieldset label { font-weight: 400; display: inline-block; margin-right: 14px; }
.inline-form { display: inline; margin: 0 8px 0 0; }
.actions { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
button.copy-button { padding: 2px 12px; margin: 0 0 8px; }
pre.copyable { user-select: all; margin: 6px 0; padding: 8px 10px; background: var(--soft); border: 1px solid var(--line);
  border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.9em; }
.secret-box { border: 2px solid #8a5a00; border-radius: 8px; padding: 10px 14px; margin: 12px 0; background: #fffaf0; }
.cards { display: grid; gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card h2, .card h3 { margin: 0 0 6px; overflow-wrap: anywhere; }
.state-ok { color: #1e6b35; }
.state-bad { color: #a4262c; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
ul.cards { list-style: none; padding: 0; margin: 8px 0; }
dl.facts dd { min-width: 0; overflow-wrap: anywhere; }
@media (max-width: 480px) { dl.facts { grid-template-columns: 1fr; } dl.facts dd { margin-bottom: 6px; } }
</style>`;
