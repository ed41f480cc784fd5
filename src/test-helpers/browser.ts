import { chromium, type Browser } from "playwright-core";

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
