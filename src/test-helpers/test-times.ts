/**
 * Loaded by mocha before the test files (.mocharc.cjs `require`): where the unit run's time goes (issue #30).
 * - A test over 10 s says why in its name, as a last parenthesis naming its cost and a time, e.g. "(starts vrai dev:
 *   10-30 s)". One that does not is listed at the end of the run (a warning, not a failure: a loaded machine slows
 *   every test, and a file's time depends on what runs beside it).
 * - With `VRAI_TEST_TIMES` naming a file, each test file's time (its hooks included) is appended to it as
 *   "ms<TAB>path", one line per file: the data `.mocharc.cjs`'s LONGEST_FIRST is ordered by.
 */
import { appendFileSync } from "node:fs";
import type { Context } from "mocha";

/** A test may take this long without saying why in its name. */
export const SLOW_TEST_MS = 10_000;

/** A name's last parenthesis naming a time: "(... 10-30 s)", "(about a minute ...)". */
const SAYS_WHY = /\([^()]*(?:\d ?s\b|minute)[^()]*\)$/;

/** Whether a test that took `ms` says why in its `title` when it must. */
export function saysWhyItIsSlow(title: string, ms: number): boolean {
  return ms <= SLOW_TEST_MS || SAYS_WHY.test(title);
}

const timesFile = process.env.VRAI_TEST_TIMES;
const unexplained: string[] = [];
let fileStarted = 0;

/** The file a root hook runs for: in parallel mode each file runs alone under the root suite. */
function testFile(context: Context): string {
  const root = context.test?.parent;
  return root?.suites[0]?.file ?? root?.file ?? "(unknown)";
}

export const mochaHooks = {
  beforeAll(): void {
    fileStarted = performance.now();
  },
  afterEach(this: Context): void {
    const test = this.currentTest;
    if (test?.duration !== undefined && !saysWhyItIsSlow(test.title, test.duration))
      unexplained.push(`${(test.duration / 1000).toFixed(1)} s: ${test.fullTitle()}`);
  },
  afterAll(this: Context): void {
    if (timesFile) appendFileSync(timesFile, `${Math.round(performance.now() - fileStarted)}\t${testFile(this)}\n`);
    if (unexplained.length > 0) {
      console.warn(`  over ${SLOW_TEST_MS / 1000} s without saying why in the name (DEVELOPERS.md, "Tests"):`);
      for (const line of unexplained.splice(0)) console.warn(`    ${line}`);
    }
  },
};
