/**
 * npx installs what it runs into npm's cache (`~/.npm/_npx/<hash>`, one directory per package spec) and keeps it.
 * A test that runs npx on a temporary directory's package (a tarball in it) removes what npx kept of it, as the
 * directory goes. The project's own `vrai` is no such install: npx runs the link in node_modules/.bin.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const NPX_CACHE = path.join(os.homedir(), ".npm", "_npx");

/** The installs npx keeps now. */
export function npxInstalls(): Set<string> {
  return new Set(fs.existsSync(NPX_CACHE) ? fs.readdirSync(NPX_CACHE) : []);
}

/**
 * The installs npx made since `before` (what `npxInstalls()` gave then) of packages from `dir`: their package.json names
 * `dir`, by a path relative to the cache or absolute, so by its last segment.
 */
export function npxInstallsFrom(dir: string, before: Set<string>): string[] {
  return [...npxInstalls()].filter((entry) => {
    const manifest = path.join(NPX_CACHE, entry, "package.json");
    return !before.has(entry) && fs.existsSync(manifest) && fs.readFileSync(manifest, "utf8").includes(path.basename(dir));
  });
}

/** Removes the installs npx made since `before` of packages from `dir` (`npxInstallsFrom`). */
export function removeNpxInstallsFrom(dir: string, before: Set<string>): void {
  for (const entry of npxInstallsFrom(dir, before)) fs.rmSync(path.join(NPX_CACHE, entry), { recursive: true, force: true });
}
