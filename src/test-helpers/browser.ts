import os from "node:os";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
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

/**
 * What axe (axe-core's default rules: WCAG 2.0-2.2 A and AA, and best practices) finds wrong on the page as it is,
 * one line per rule: its id and the elements it names. Legacy mode runs `axe.run` in the page itself, where the
 * default (runPartial in each frame, finishRun in a blank page it opens) costs a second more per run for frames the
 * pages do not have: Vrai's pages have no iframe, which is the only thing legacy mode would not test. Only the
 * violations come back with their elements (`resultTypes`), not the passes, which nobody reads here.
 * @example expect(await axeViolations(page)).to.deep.equal([]);
 */
export async function axeViolations(page: Page): Promise<string[]> {
  expect(await page.locator("iframe, frame").count(), "a page with frames: axe's legacy mode would not test them").to.equal(0);
  const { violations } = await new AxeBuilder({ page })
    .setLegacyMode(true)
    .options({ resultTypes: ["violations"] })
    .analyze();
  return violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
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
