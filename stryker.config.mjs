// Mutation testing of the rules (issue #30): Stryker changes one operator, condition or literal at a time
// ("a mutant") in the method library and in the check-in, proof-check and scoring services, and runs the tests
// that cover it; a mutant no test fails on is a wrong rule the tests would not notice.
// Run it with `npm run test:mutation` (scripts/mutation.ts: each area in turn, then its score against its target
// and the survivors, one line each). Not part of `npm test`: see DEVELOPERS.md, "Mutation testing".
import fs from "node:fs";
import path from "node:path";

/**
 * The two areas of the issue, each with the tests of its code: none that spawns a process, a chain or a browser.
 * A mutant runs only the tests that reached it, but a mutant of code run as a module loads ("static") runs all
 * of its area's tests in a new process, so each area runs its own tests only.
 */
const AREAS = {
  method: {
    mutate: ["src/method/**/*.ts", "!src/method/**/*.test.ts"],
    spec: ["src/method/**/*.test.ts"],
  },
  services: {
    mutate: ["src/service/checkins.ts", "src/service/proof-checks.ts", "src/service/scoring.ts"],
    spec: [
      "src/service/checkins.test.ts",
      "src/service/proof-checks.test.ts",
      "src/service/scoring.test.ts",
      "src/service/claims.test.ts",
      "src/store/checkins.test.ts",
    ],
  },
};
const AREA = process.env.MUTATION_AREA ?? "method";
if (!(AREA in AREAS)) throw new Error(`MUTATION_AREA: expected ${Object.keys(AREAS).join(" or ")}, got ${AREA}`);
// The services' rules are the same code on every store: their tests run on the memory store only here
// (src/test-helpers/stores.ts reads TEST_STORES), the unit run tests them on PostgreSQL and PGlite too.
if (AREA === "services") process.env.TEST_STORES ??= "memory";

const TEMP_DIR = ".stryker-tmp";
// Stryker runs the tests in a copy, TEMP_DIR/sandbox-*: a test that reads ../shared beside the clone (the RFC 8785
// vectors, src/test-helpers/jcs.ts) finds it through TEMP_DIR/shared.
fs.mkdirSync(TEMP_DIR, { recursive: true });
if (!fs.existsSync(path.join(TEMP_DIR, "shared"))) fs.symlinkSync(path.resolve("..", "shared"), path.join(TEMP_DIR, "shared"));

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "mocha",
  plugins: ["@stryker-mutator/mocha-runner"],
  mutate: AREAS[AREA].mutate,
  mochaOptions: {
    "no-config": true,
    "no-package": true,
    spec: AREAS[AREA].spec,
    require: ["tsx/cjs", "./src/test-helpers/check-replies.ts"],
    extension: ["ts"],
  },
  // Each mutant runs only the tests that executed its code in the first run, and stops at the first that fails.
  coverageAnalysis: "perTest",
  // Two test processes: the machine's two cores (shared; `-- --concurrency 1` leaves one to the others).
  concurrency: 2,
  // A loaded machine slows a test run by several times: allow for it before calling a mutant a timeout.
  timeoutMS: 20_000,
  reporters: ["clear-text", "progress-append-only", "html", "json"],
  clearTextReporter: { allowColor: false, reportMutants: false, reportTests: false, logTests: false },
  htmlReporter: { fileName: `reports/mutation/${AREA}.html` },
  jsonReporter: { fileName: `reports/mutation/${AREA}.json` },
  incrementalFile: `reports/mutation/${AREA}-incremental.json`,
  tempDirName: TEMP_DIR,
  // Not copied into the sandbox: build output and what earlier runs left (node_modules is linked, not copied).
  ignorePatterns: ["/reports", "/dist", "/data", "/coverage", "/artifacts", "/cache", "/typechain-types"],
  // The targets: 90 % in src/method/, 80 % in the services (scripts/mutation.ts checks each area).
  thresholds: AREA === "method" ? { high: 90, low: 90, break: null } : { high: 80, low: 80, break: null },
};
