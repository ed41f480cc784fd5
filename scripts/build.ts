/**
 * `npm run build`: the `vrai` command (src/cli/main.ts) into one file, dist/vrai.cjs with its source map, the worker
 * thread it scores the daily recompute's pages on into dist/score-worker.cjs, and the owners' console's script into
 * dist/console.js. A file is rewritten only when its bytes change, and atomically (src/build-output.ts), so a build
 * beside a running `vrai` never hands it half a file.
 */
import path from "node:path";
import { build } from "esbuild";
import { writeBuiltFiles } from "../src/build-output";
import { PROJECT_ROOT } from "../src/project-root";
import { buildConsoleScript } from "../src/web/console/bundle";

/** Each entry and the file it is bundled into: the command, and the worker thread that scores the daily recompute's pages (src/app/score-workers.ts). */
const ENTRIES = [
  { source: ["src", "cli", "main.ts"], out: "vrai.cjs" },
  { source: ["src", "app", "score-worker.ts"], out: "score-worker.cjs" },
];

async function main(): Promise<void> {
  for (const entry of ENTRIES) await buildEntry(path.join(PROJECT_ROOT, ...entry.source), path.join(PROJECT_ROOT, "dist", entry.out));
  await buildConsoleScript();
}

async function buildEntry(source: string, outfile: string): Promise<void> {
  const built = await build({
    entryPoints: [source],
    outfile,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    packages: "external",
    keepNames: true,
    sourcemap: "linked",
    logLevel: "warning",
    write: false,
  });
  writeBuiltFiles(built.outputFiles);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
