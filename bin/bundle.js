// The compiled form of `vrai` (and of `npm run bench:method`, which measures it): one CommonJS file
// built by esbuild from the TypeScript sources, dependencies left to node_modules.
//
// Why: run through tsx, every use of a name imported from another module goes through a getter on
// that module's exports (an index that re-exports hundreds of names is a dictionary lookup too), and
// `vrai replay` makes several such calls for each of hundreds of thousands of check-ins a second.
// In one bundle those are plain references. Nothing else differs: same sources, no minifying, names kept.
//
// The bundle is built on first use and again whenever one of the files it was built from (listed
// beside it, from esbuild's metafile), package.json, package-lock.json or this file is newer than it,
// so an edited source is never run stale. It is written to a temporary file and renamed into place,
// so processes starting at once never load half a file.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const DIST = path.join(ROOT, "dist");

/** Where the bundle of `entry` (a path from the repository root) goes. */
function bundlePath(entry) {
  return path.join(DIST, `${entry.replace(/\.ts$/, "").replace(/[\\/]/g, "_")}.cjs`);
}

/** Newest modification time (ms) among `files`; Infinity when one is missing (it may have moved: build again). */
function newestChange(files) {
  let newest = 0;
  for (const file of files) {
    let stat;
    try {
      stat = fs.statSync(file);
    } catch {
      return Infinity;
    }
    if (stat.mtimeMs > newest) newest = stat.mtimeMs;
  }
  return newest;
}

/** Whether the bundle at `out` exists and is newer than everything it was built from. */
function isFresh(out) {
  let built;
  let inputs;
  try {
    built = fs.statSync(out).mtimeMs;
    inputs = JSON.parse(fs.readFileSync(`${out}.inputs.json`, "utf8"));
  } catch {
    return false;
  }
  const always = [__filename, path.join(ROOT, "package.json"), path.join(ROOT, "package-lock.json")];
  return newestChange([...always, ...inputs.map((file) => path.join(ROOT, file))]) <= built;
}

/**
 * Builds the bundle of `entry` unless a fresh one is in place, and returns its path.
 * @param entry a TypeScript file, relative to the repository root (e.g. "src/cli/main.ts")
 * @param options.define identifiers replaced at build time (esbuild `define`)
 * @throws when esbuild fails (an error in the sources) or dist/ cannot be written
 */
function ensureBundle(entry, options = {}) {
  const out = bundlePath(entry);
  if (isFresh(out)) return out;
  const esbuild = require("esbuild");
  // The bundle is dated when the build began: a source changed while it was being read is newer, and is built again next time.
  const began = new Date();
  const result = esbuild.buildSync({
    entryPoints: [path.join(ROOT, entry)],
    absWorkingDir: ROOT,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    packages: "external",
    keepNames: true,
    sourcemap: "linked",
    metafile: true,
    define: options.define ?? {},
    outfile: out,
    write: false,
    logLevel: "silent",
  });
  fs.mkdirSync(DIST, { recursive: true });
  const temporary = `.${process.pid}.${Date.now()}.tmp`;
  for (const file of result.outputFiles) fs.writeFileSync(file.path + temporary, file.contents);
  fs.writeFileSync(`${out}.inputs.json${temporary}`, JSON.stringify(Object.keys(result.metafile.inputs)));
  // The map and the input list first, the bundle last: a bundle in place always has both beside it.
  for (const file of result.outputFiles.filter((f) => f.path !== out)) fs.renameSync(file.path + temporary, file.path);
  fs.renameSync(`${out}.inputs.json${temporary}`, `${out}.inputs.json`);
  fs.utimesSync(out + temporary, began, began);
  fs.renameSync(out + temporary, out);
  return out;
}

module.exports = { ensureBundle };
