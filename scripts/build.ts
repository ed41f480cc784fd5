/**
 * `npm run build`: the `vrai` command (src/cli/main.ts) into one file, dist/vrai.cjs with its source map, and the
 * owners' console's script into dist/console.js. A file is rewritten only when its bytes change, and atomically
 * (src/build-output.ts), so a build beside a running `vrai` never hands it half a file.
 */
import path from "node:path";
import { build } from "esbuild";
import { writeBuiltFiles } from "../src/build-output";
import { PROJECT_ROOT } from "../src/project-root";
import { buildConsoleScript } from "../src/web/console/bundle";

async function main(): Promise<void> {
  const cli = await build({
    entryPoints: [path.join(PROJECT_ROOT, "src", "cli", "main.ts")],
    outfile: path.join(PROJECT_ROOT, "dist", "vrai.cjs"),
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
  writeBuiltFiles(cli.outputFiles);
  await buildConsoleScript();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
