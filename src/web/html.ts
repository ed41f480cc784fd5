/**
 * HTML building for server-rendered pages. Every interpolated value is escaped unless it is
 * already `Html` built by `html`, so a page cannot emit an unescaped value by forgetting to.
 */

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * Escapes text for HTML element content and quoted attribute values (also inside inline SVG).
 * @example escapeHtml('<script>alert("x")</script>') // "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const SAFE: unique symbol = Symbol("html");

/** A fragment of markup that is already safe to emit. Only `html` makes one. */
export type Html = { readonly [SAFE]: string };

/** What may be interpolated: text and numbers are escaped, `Html` kept, lists joined; null, undefined and false render nothing. */
export type HtmlValue = string | number | Html | null | undefined | false | readonly HtmlValue[];

function isHtml(value: unknown): value is Html {
  return typeof value === "object" && value !== null && SAFE in value;
}

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (isHtml(value)) return value[SAFE];
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/**
 * Tagged template for markup: the literal parts are trusted, every value is escaped.
 * @example htmlToString(html`<p>${name}</p>`) // "<p>&lt;b&gt;</p>" for name "<b>"
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return { [SAFE]: out };
}

/** The markup of a fragment. */
export function htmlToString(fragment: Html): string {
  return fragment[SAFE];
}
