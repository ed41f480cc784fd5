import os from "node:os";
import path from "node:path";
import axe from "axe-core";
import { expect } from "chai";
import { chromium, type Browser, type Page } from "playwright-core";

/** Debian's Chromium, the browser tests run (DEVELOPERS.md). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

// Headless and offline: no sandbox (containers), no GPU, and none of Chromium's own network traffic.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
];

/**
 * Starts headless Chromium for a browser test; the caller closes it.
 * @example const browser = await launchBrowser(); const page = await browser.newPage(); ... await browser.close();
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** axe-core's script as a page runs it, configured for the page's own origin only (its frames are not checked: below). */
const AXE_SCRIPT = `${axe.source}\n;axe.configure({ allowedOrigins: ["<same_origin>"] });`;

/**
 * What axe (axe-core's default rules: WCAG 2.0-2.2 A and AA, and best practices) finds wrong on the page as it is,
 * one line per rule: its id and the elements it names. `axe.run` runs in the page itself, as @axe-core/playwright's
 * legacy mode did, without its costs: it injected the 550 kB script twice a check (its default mode also opens a blank
 * page a run). Here the script goes in once per document, so a check costs 0.72 CPU-s of the browser's and this
 * process's time, and a second check of a page as it is (at another width) 0.47, against 1.03 each before. Vrai's pages
 * have no iframe, the only thing a run in the page would not test: a page with one fails here. Only the violations come
 * back with their elements (`resultTypes`), not the passes, which nobody reads here.
 * @example expect(await axeViolations(page)).to.deep.equal([]);
 */
export async function axeViolations(page: Page): Promise<string[]> {
  expect(await page.locator("iframe, frame").count(), "a page with frames: a run in the page would not test them").to.equal(0);
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(AXE_SCRIPT);
  return page.evaluate(() =>
    (window as unknown as { axe: typeof axe }).axe
      .run(document, { resultTypes: ["violations"] })
      .then(({ violations }) => violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)),
  );
}

/**
 * Checks the page at a desktop width (1280 px) and at 360 px: axe reports no violation and nothing is wider than the
 * window; a full-page screenshot of each is saved under the temporary directory (its path printed). `load` (re)loads the
 * page after each resize; without it the page is checked as it is (a page a form's POST answered cannot be reloaded).
 * @example await checkPageAtWidths(page, "console-agents", () => page.goto(url).then(() => undefined));
 */
export async function checkPageAtWidths(page: Page, label: string, load?: () => Promise<void>): Promise<void> {
  for (const [size, width] of [
    ["desktop", 1280],
    ["360px", 360],
  ] as const) {
    await page.setViewportSize({ width, height: 900 });
    await load?.();
    expect(await axeViolations(page), `${label} ${size}`).to.deep.equal([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `${label} ${size}`).to.be.at.most(width);
    const file = path.join(os.tmpdir(), `vrai-${label}-${size}-${process.pid}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`      ${label} page screenshot (${size}): ${file}`);
  }
}
