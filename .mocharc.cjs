/**
 * The unit run (`npm run test:unit`): every `src/**\/*.test.ts`, in two worker processes (mocha's parallel mode;
 * `src/test-helpers/check-replies.ts` and `test-times.ts` give each worker its root hooks). A worker takes the next
 * file when it finishes one, so the files that take longest go first: two workers end together instead of one
 * finishing a two-minute file alone. The order is by the files' times in a run with `VRAI_TEST_TIMES` set
 * (DEVELOPERS.md, "Tests"); a file named here that no longer exists stops the run, so the list cannot drift.
 */
const fs = require("node:fs");
const path = require("node:path");

const LONGEST_FIRST = [
  "src/quick-start.test.ts",
  "src/app/daily-cycle-faults.test.ts",
  "src/cli/commands/dev-signals.test.ts",
  "src/sdk/package.test.ts",
  "src/web/console/console-pages.browser.test.ts",
  "src/web/console/console.browser.test.ts",
  "src/cli/commands/dev.test.ts",
  "src/cli/commands/operator.test.ts",
  "src/app/failover.test.ts",
  "src/cli/commands/serve.test.ts",
  "src/store/data-dir.test.ts",
  "src/indexer/indexer.test.ts",
  "src/cli/commands/instances.test.ts",
];

/** Every test file under `dir`, sorted. */
function testFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return testFiles(file);
      return entry.name.endsWith(".test.ts") ? [file] : [];
    })
    .sort();
}

for (const file of LONGEST_FIRST)
  if (!fs.existsSync(file)) throw new Error(`.mocharc.cjs: ${file} is listed to run first but does not exist`);
const rest = testFiles("src").filter((file) => !LONGEST_FIRST.includes(file));

module.exports = {
  require: ["tsx/cjs", "./src/test-helpers/check-replies.ts", "./src/test-helpers/test-times.ts"],
  spec: [...LONGEST_FIRST, ...rest],
  extension: ["ts"],
  timeout: 60000,
  reporter: "dot",
  parallel: true,
  jobs: 2,
};
