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
    const { violations } = await new AxeBuilder({ page }).analyze();
    expect(
      violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`),
      `${label} ${size}`,
    ).to.deep.equal([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth), `${label} ${size}`).to.be.at.most(width);
    const file = path.join(os.tmpdir(), `vrai-${label}-${size}-${process.pid}.png`);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`      ${label} page screenshot (${size}): ${file}`);
  }
}
