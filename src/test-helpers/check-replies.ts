/**
 * Loaded by mocha before the test files (.mocharc.cjs `require`; add `-r ./src/test-helpers/check-replies.ts`
 * to a run with `--no-config`): every API server the tests start checks each answer against its route's
 * declaration (VRAI_CHECK_REPLIES=1, src/api/reply-check.ts), answering a mismatch with a 500, and the run
 * fails at its end when any answer did not match, even one a test did not look at.
 */
import { REPLY_MISMATCH_WARNING } from "../api/reply-check";

process.env.VRAI_CHECK_REPLIES = "1";

const mismatches: string[] = [];
process.on("warning", (warning) => {
  if (warning.name === REPLY_MISMATCH_WARNING) mismatches.push(warning.message);
});

/**
 * The mismatches reported while `action` ran, taken out of the run's list (the test of the check causes
 * some on purpose); those reported before stay in it.
 */
export async function mismatchesDuring(action: () => unknown): Promise<string[]> {
  const before = mismatches.length;
  await action();
  // A process warning is emitted on the next tick.
  await new Promise((resolve) => setImmediate(resolve));
  return mismatches.splice(before);
}

/** Mocha's root hooks: after every test file ran, no answer may have broken its declaration. */
export const mochaHooks = {
  afterAll(): void {
    if (mismatches.length > 0)
      throw new Error(`${mismatches.length} answers did not match their declaration:\n${[...new Set(mismatches)].join("\n")}`);
  },
};
