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

/** statfs's type of a tmpfs (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;

/**
 * The tests' scratch files (PGlite clusters, the quick start's clone and `npm ci`, the SDK's install, browser
 * profiles, pg_auto_failover's nodes) go to a RAM-backed tmpfs when the machine has one and `TMPDIR` is not set:
 * on this kind of machine creating a file on the root ext4 costs about 0.75 ms of kernel CPU, 28 times tmpfs, and
 * the quick start's `npm ci` alone creates about 56,000 (DEVELOPERS.md, "Tests"). The workers inherit it.
 */
function scratchDir() {
  if (process.env.TMPDIR) return process.env.TMPDIR;
  try {
    fs.accessSync("/dev/shm", fs.constants.W_OK);
    return fs.statfsSync("/dev/shm").type === TMPFS_MAGIC ? "/dev/shm" : undefined;
  } catch {
    return undefined;
  }
}
const scratch = scratchDir();
if (scratch) process.env.TMPDIR = scratch;

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
