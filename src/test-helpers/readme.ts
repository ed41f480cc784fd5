/** The README's shell blocks, for the tests that run them as they are written. */
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

/** The ```sh blocks of the README section headed `heading` (`## heading`), in order. */
export function readmeShellBlocks(heading: string): string[] {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf(`## ${heading}`);
  if (start < 0) throw new Error(`README.md has no section ## ${heading}`);
  const end = readme.indexOf("\n## ", start + 3);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}
