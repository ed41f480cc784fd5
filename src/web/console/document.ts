/** The document around a console page (issue #29): the console's layout, with what went wrong or was done at its top. */
import { html, type Html } from "../html";
import { renderDocument } from "../layout";
import { CONSOLE_STYLE, noticeBox, type RenderedPage, type ConsoleSection, type ConsoleViewer, type Notice } from "./common";

const SECTIONS: ReadonlyArray<{ section: ConsoleSection; href: string; label: string }> = [
  { section: "agents", href: "/console/agents", label: "Agents" },
  { section: "proofs", href: "/console/proofs", label: "Proofs" },
  { section: "webhooks", href: "/console/webhooks", label: "Webhooks" },
];

function consoleNav(viewer: ConsoleViewer, current: ConsoleSection | undefined): Html {
  return html`<nav aria-label="Console" class="console-nav"><ul class="actions">
${SECTIONS.map((s) => html`<li><a href="${s.href}"${s.section === current ? html` aria-current="page"` : null}>${s.label}</a></li>`)}
</ul><p class="muted">Owner <code>${viewer.ownerId}</code>${viewer.scope === "read" ? " · read-only session" : ""}</p></nav>`;
}

/** A console page of `status`: `main` in the console's layout (`current` marked in its navigation), `notice` at its top. */
export function consolePage<S extends number>(
  status: S,
  page: { title: string; main: Html; viewer: ConsoleViewer; current?: ConsoleSection; notice?: Notice },
): RenderedPage<S> {
  const main = html`${consoleNav(page.viewer, page.current)}${noticeBox(page.notice)}${page.main}`;
  return { status, text: renderDocument({ title: `${page.title} · Vrai console`, main, head: CONSOLE_STYLE }) };
}
