import fs from "node:fs";
import path from "node:path";

/**
 * The repository root (the directory of Vrai's package.json), found from this file's directory
 * upwards: the same whether the code runs from `src/` through tsx or from the bundle in `dist/`
 * (`npm run build`: dist/vrai.cjs), where every module's `__dirname` is `dist/`.
 */
export const PROJECT_ROOT = findPackageDir(__dirname, "vrai");

/** The directory of the package named `name`: the first, from `from` upwards, whose package.json names it. */
export function findPackageDir(from: string, name: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      if (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).name === name) return dir;
    } catch {
      // no package.json here, or not a readable one: look further up
    }
    if (path.dirname(dir) === dir) throw new Error(`${name}'s package.json not found above ${from}`);
  }
}
