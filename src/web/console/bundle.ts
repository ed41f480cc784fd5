/** How the console's script is built (`npm run build` runs `scripts/build.ts`; browser tests build it first). */
import path from "node:path";
import { build } from "esbuild";
import { writeBuiltFiles } from "../../build-output";
import { PROJECT_ROOT } from "../../project-root";
import { CONSOLE_SCRIPT_FILE } from "./assets";

/** The script's source: what runs in the console's pages. */
export const CONSOLE_SCRIPT_SOURCE = path.join(PROJECT_ROOT, "src", "web", "console", "browser", "console.ts");

/**
 * Builds the console's script into `dist/console.js`: one file, no imports, for the browsers of the last few years. The
 * file is replaced only when its bytes change, and atomically: a server of another test may be serving it meanwhile.
 */
export async function buildConsoleScript(): Promise<void> {
  const result = await build({
    entryPoints: [CONSOLE_SCRIPT_SOURCE],
    outfile: CONSOLE_SCRIPT_FILE,
    bundle: true,
    format: "iife",
    target: "es2020",
    platform: "browser",
    minify: true,
    legalComments: "none",
    logLevel: "warning",
    write: false,
  });
  writeBuiltFiles(result.outputFiles);
}
