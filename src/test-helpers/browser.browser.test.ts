/**
 * `axeViolations`, the accessibility check of every browser test: it must see what is wrong (a check that always
 * answered nothing would pass every page), on a second check of the same document as on the first, and refuse a page
 * with a frame it would not test.
 */
import { expect } from "chai";
import type { Browser, Page } from "playwright-core";
import { axeViolations, launchBrowser } from "./browser";

const page = (body: string) => `<!doctype html><html lang="en"><head><title>t</title></head><body><main>${body}</main></body></html>`;

describe("axeViolations: axe-core's rules run in the page", () => {
  let browser: Browser;
  let tab: Page;
  before(async () => {
    browser = await launchBrowser();
    tab = await browser.newPage();
  });
  after(() => browser?.close());

  it("names each rule broken and the elements that break it; nothing on a page that breaks none", async () => {
    await tab.setContent(page('<h1>Fine</h1><p>Text.</p><img src="data:," alt="a dot">'));
    expect(await axeViolations(tab)).to.deep.equal([]);
    await tab.setContent(page('<h1>Wrong</h1><img id="no-alt" src="data:,"><input id="unlabelled">'));
    expect(await axeViolations(tab)).to.deep.equal(["image-alt: #no-alt", "label: #unlabelled"]);
  });

  it("checks the document as it is now on a second check of the same document, the script injected once", async () => {
    await tab.setContent(page('<h1>Changing</h1><img id="late" src="data:," alt="x">'));
    expect(await axeViolations(tab)).to.deep.equal([]);
    // A mark on the injected axe: a second injection would replace it with a new one, unmarked.
    await tab.evaluate(() => {
      (window as unknown as { axe: { marked?: boolean } }).axe.marked = true;
      document.getElementById("late")?.removeAttribute("alt");
    });
    expect(await axeViolations(tab)).to.deep.equal(["image-alt: #late"]);
    expect(await tab.evaluate(() => (window as unknown as { axe: { marked?: boolean } }).axe.marked)).to.equal(true);
  });

  it("refuses a page with a frame, which a run in the page would not check", async () => {
    await tab.setContent(page('<h1>Framed</h1><iframe title="inner" srcdoc="<p>inner</p>"></iframe>'));
    const refused = await axeViolations(tab).then(
      () => undefined,
      (error: Error) => error.message,
    );
    expect(refused).to.contain("a page with frames");
  });
});
