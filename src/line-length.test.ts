/**
 * Lines a reader can read (issue #25). Biome formats to 140 columns (biome.jsonc) but leaves string and template
 * literals and comments as they are written: past 160 columns, a line is one to break by hand. Generated files are
 * kept as their generators write them (biome.jsonc says which).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { PROJECT_ROOT } from "./project-root";

const MAX_COLUMNS = 160;
/** The contracts' ABIs (scripts/export-abis.ts) and the SDK's API types (npm run gen:api-types). */
const GENERATED = [/^src\/chain\/abi\//, /^src\/sdk\/api-types\.ts$/];

/** The tracked TypeScript, JavaScript and Solidity sources, repository-relative, generated ones left out. */
function trackedSources(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z", "--", "*.ts", "*.js", "*.sol"], { cwd: PROJECT_ROOT, encoding: "utf8" });
  return listed
    .split("\0")
    .filter((file) => file !== "" && !GENERATED.some((generated) => generated.test(file)))
    .filter((file) => fs.existsSync(path.join(PROJECT_ROOT, file)));
}

describe("source lines", () => {
  it(`are at most ${MAX_COLUMNS} columns in every tracked .ts, .js and .sol file, generated ones aside`, () => {
    const files = trackedSources();
    expect(files).to.include.members(["src/line-length.test.ts", "contracts/VraiScores.sol"]);
    const long: string[] = [];
    for (const file of files) {
      const lines = fs.readFileSync(path.join(PROJECT_ROOT, file), "utf8").split(/\r?\n/);
      for (const [i, line] of lines.entries()) {
        const columns = [...line].length;
        if (columns > MAX_COLUMNS) long.push(`${file}:${i + 1}: ${columns} columns`);
      }
    }
    expect(long, `lines over ${MAX_COLUMNS} columns:\n${long.join("\n")}`).to.deep.equal([]);
  });
});
