import { expect } from "chai";
import { escapeHtml, html, htmlToString } from "./html";

describe("escapeHtml", () => {
  it("escapes the five characters that can end text or an attribute", () => {
    expect(escapeHtml(`&<>"'`)).to.equal("&amp;&lt;&gt;&quot;&#39;");
  });

  it("turns a script tag into inert text", () => {
    expect(escapeHtml("<script>alert(1)</script>")).to.equal("&lt;script&gt;alert(1)&lt;/script&gt;");
  });

  it("cannot break out of a quoted attribute", () => {
    expect(escapeHtml(`x" onmouseover="alert(1)`)).to.equal("x&quot; onmouseover=&quot;alert(1)");
    expect(escapeHtml(`x' onfocus='alert(1)`)).to.equal("x&#39; onfocus=&#39;alert(1)");
  });

  it("escapes an ampersand once, so existing entities stay visible as text", () => {
    expect(escapeHtml("&lt;b&gt;")).to.equal("&amp;lt;b&amp;gt;");
  });

  it("leaves ordinary text, digits and non-ASCII as they are", () => {
    expect(escapeHtml("Agent 7 — café 200–399")).to.equal("Agent 7 — café 200–399");
  });
});

describe("html", () => {
  it("escapes interpolated text and numbers but keeps the literal markup", () => {
    const name = "<img src=x onerror=alert(1)>";
    expect(htmlToString(html`<p title="${name}">${name} ${42}</p>`)).to.equal(
      '<p title="&lt;img src=x onerror=alert(1)&gt;">&lt;img src=x onerror=alert(1)&gt; 42</p>',
    );
  });

  it("keeps nested fragments as markup and joins lists", () => {
    const items = ["a<b", "c&d"].map((x) => html`<li>${x}</li>`);
    expect(htmlToString(html`<ul>${items}</ul>`)).to.equal("<ul><li>a&lt;b</li><li>c&amp;d</li></ul>");
  });

  it("renders nothing for null, undefined and false", () => {
    expect(htmlToString(html`[${null}${undefined}${false}]`)).to.equal("[]");
  });

  it("does not treat a look-alike object as markup", () => {
    const fake = { toString: () => "<script>" } as unknown as string;
    expect(htmlToString(html`${fake}`)).to.equal("&lt;script&gt;");
  });
});
