/**
 * The console's one script file (issue #29): `src/web/console/browser/console.ts`, built by `npm run build` into
 * `dist/console.js` (`bundle.ts`). Served under a name with its content's hash, so a page always loads the script
 * it was made with and a browser may keep it for a year.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../../project-root";

/** Where `npm run build` writes the console's script. */
export const CONSOLE_SCRIPT_FILE = path.join(PROJECT_ROOT, "dist", "console.js");

/** The script as served: its path under /console/assets, its bytes, and its Subresource Integrity digest (the page's `integrity`). */
export type ConsoleScriptFile = { path: string; body: Buffer; integrity: string };

let loaded: ConsoleScriptFile | null | undefined;

/** The built script, read once per process; null when it was never built (the pages then work without it). */
export function consoleScript(): ConsoleScriptFile | null {
  if (loaded !== undefined) return loaded;
  if (!fs.existsSync(CONSOLE_SCRIPT_FILE)) return null;
  const body = fs.readFileSync(CONSOLE_SCRIPT_FILE);
  const hash = crypto.createHash("sha256").update(body).digest("hex").slice(0, 16);
  const integrity = `sha384-${crypto.createHash("sha384").update(body).digest("base64")}`;
  loaded = { path: `/console/assets/console-${hash}.js`, body, integrity };
  return loaded;
}
