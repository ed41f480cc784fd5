/** The shell of every server-rendered page: one HTML document with inline CSS, no scripts, no outside assets. */
import { html, htmlToString, type Html } from "./html";

/**
 * The response headers of a page. The page runs no script and loads nothing from elsewhere, so
 * the policy forbids both: an injected `<script>` would not run even if escaping ever failed.
 * Forms (the search boxes) may submit to this site only.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Type": "text/html; charset=utf-8",
  "Content-Security-Policy":
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

// Text colours keep a contrast of at least 7:1 on white, muted text at least 4.5:1 (WCAG AA).
/** The site's style sheet, which the console's pages share (src/web/console/layout.ts). */
export const STYLE: Html = html`<style>
:root { color-scheme: light; --ink: #1b1f24; --muted: #555d66; --line: #d5d9de; --accent: #1f5fa8; --soft: #f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: #fff; }
main { max-width: 960px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 1.75rem; margin: 0; line-height: 1.2; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 0 0 8px; }
h3 { font-size: 1rem; margin: 0; }
p { margin: 0 0 8px; }
a { color: var(--accent); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
.eyebrow { color: var(--muted); font-size: 0.85rem; text-transform: uppercase; letter-spacing: 0.06em; margin: 0 0 4px; }
.muted { color: var(--muted); }
section { border-top: 1px solid var(--line); padding: 20px 0; }
header { padding-bottom: 16px; }
.summary { display: grid; grid-template-columns: minmax(220px, 1fr) minmax(0, 1.7fr); gap: 32px; align-items: start; }
.total { font-size: 4.5rem; font-weight: 700; line-height: 1; margin: 0; font-variant-numeric: tabular-nums; }
.total-scale { color: var(--muted); margin: 6px 0 0; font-size: 0.9rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 6px 16px; margin: 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
.components { display: grid; grid-template-columns: repeat(auto-fit, minmax(210px, 1fr)); gap: 14px; }
.component { border: 1px solid var(--line); border-radius: 8px; padding: 14px; background: var(--soft); }
.component .value { font-size: 2rem; font-weight: 700; margin: 4px 0; font-variant-numeric: tabular-nums; }
.component .value .max { font-size: 1rem; font-weight: 400; color: var(--muted); }
.component ul { margin: 6px 0 0; padding-left: 18px; }
.meter { display: block; width: 100%; height: 8px; margin: 2px 0 8px; }
.meter .meter-track { fill: #dde3ea; }
.meter .meter-fill { fill: var(--accent); }
.component.inactive { background: #fff; border-style: dashed; }
.component.inactive .value { font-size: 1.2rem; color: var(--muted); }
.chart-wrap { overflow-x: auto; }
.window-chart { max-width: 100%; min-width: 680px; height: auto; font-size: 11px; }
.window-chart .grid { stroke: var(--line); stroke-width: 1; }
.window-chart .axis, .window-chart .row-label { fill: var(--muted); }
.window-chart .row-label { font-weight: 600; }
.window-chart .num { fill: var(--ink); font-variant-numeric: tabular-nums; }
.window-chart .num.muted { fill: var(--muted); }
.window-chart .track { fill: #e6ebf1; }
.window-chart .before-claim .track { fill: none; }
.window-chart .bar { fill: var(--accent); }
.window-chart .hatch { fill: url(#before-claim-hatch); }
.window-chart .bracket { fill: none; stroke: var(--muted); stroke-width: 1; }
.window-chart .mark { fill: var(--ink); font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: 16px; margin: 8px 0 0; padding: 0; list-style: none; color: var(--muted); font-size: 0.9rem; }
.swatch { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin-right: 6px; border: 1px solid var(--muted); }
.swatch.bar { background: var(--accent); border-color: var(--accent); }
.swatch.hatch { background: repeating-linear-gradient(45deg, #f1f1f1 0 3px, #c4c4c4 3px 5px); }
table { border-collapse: collapse; width: 100%; font-size: 0.92rem; }
caption { text-align: left; color: var(--muted); padding: 4px 0; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); }
thead th { font-weight: 600; }
tr.before-claim th, tr.before-claim td { color: var(--muted); background: #f6f6f6; }
details { margin-top: 12px; }
summary { cursor: pointer; color: var(--accent); }
.digest { display: block; padding: 8px 10px; background: var(--soft); border: 1px solid var(--line); border-radius: 6px; }
.panel { border: 1px solid var(--line); border-radius: 8px; padding: 16px; margin-top: 12px; }
.site-header { border-bottom: 1px solid var(--line); background: var(--soft); padding: 0; }
.site-header nav { max-width: 960px; margin: 0 auto; padding: 10px 20px; display: flex; flex-wrap: wrap; align-items: center; gap: 6px 20px; }
.site-header .brand { font-weight: 700; color: var(--ink); text-decoration: none; margin-right: auto; }
.site-header ul { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 0; padding: 0; list-style: none; }
.site-header a[aria-current="page"] { color: var(--ink); font-weight: 600; text-decoration: none; }
.search { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; }
.search input { flex: 1 1 220px; min-width: 0; font: inherit; padding: 8px 10px; border: 1px solid var(--muted); border-radius: 6px; }
.search button { font: inherit; padding: 8px 16px; border: 1px solid var(--accent); border-radius: 6px; background: var(--accent);
  color: #fff; cursor: pointer; }
.pager { display: flex; gap: 16px; margin: 12px 0 0; }
.table-wrap { overflow-x: auto; }
pre.snippet { margin: 6px 0 12px; padding: 8px 10px; background: var(--soft); border: 1px solid var(--line); border-radius: 6px;
  overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
.history-chart { display: block; width: 100%; height: auto; font-size: 11px; }
.history-chart .grid { stroke: var(--line); stroke-width: 1; }
.history-chart .axis { fill: var(--muted); }
.history-chart .line { fill: none; stroke: var(--accent); stroke-width: 2; }
.history-chart .point { fill: var(--accent); }
.history-chart .before-claim { fill: #e9e9e9; }
.swatch.before { background: #e9e9e9; }
@media (max-width: 640px) { .summary { grid-template-columns: 1fr; } .total { font-size: 3.5rem; } }
</style>`;

/** The sections of the site the header links to. */
export type SiteSection = "home" | "directory" | "method" | "api";

const NAV: ReadonlyArray<{ section: SiteSection; href: string; label: string }> = [
  { section: "home", href: "/", label: "Home" },
  { section: "directory", href: "/agents", label: "Directory" },
  { section: "method", href: "/method", label: "Method" },
  { section: "api", href: "/v1/openapi.json", label: "API" },
];

function siteHeader(current: SiteSection | undefined): Html {
  return html`<header class="site-header"><nav aria-label="Site">
<a class="brand" href="/">Vrai</a>
<ul>${NAV.map((n) => html`<li><a href="${n.href}"${n.section === current ? html` aria-current="page"` : null}>${n.label}</a></li>`)}</ul>
</nav></header>`;
}

/**
 * A complete HTML document around `main`, under the site's header (`current` marks the section the page is in);
 * `head` is added to the document's head after the site's styles (a section's own styles and scripts).
 */
export function renderDocument(page: { title: string; main: Html; current?: SiteSection; head?: Html }): string {
  return htmlToString(html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title}</title>
${STYLE}
${page.head ?? null}
</head>
<body>
${siteHeader(page.current)}
<main>
${page.main}
</main>
</body>
</html>
`);
}
