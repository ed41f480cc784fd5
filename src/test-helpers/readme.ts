/** The README's code blocks, for the tests that run or compile them as they are written. */
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

/**
 * The ````language` blocks of the section headed `heading` (`## heading`, or deeper) of a Markdown file (the
 * repository's README unless `file`), in order, up to the next `## ` heading.
 */
export function readmeBlocks(heading: string, language: string, file = path.join(ROOT, "README.md")): string[] {
  const readme = fs.readFileSync(file, "utf8");
  const start = readme.indexOf(`## ${heading}`);
  if (start < 0) throw new Error(`${file} has no section ## ${heading}`);
  const end = readme.indexOf("\n## ", start + 3);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, "g"))].map((m) => m[1]);
}
