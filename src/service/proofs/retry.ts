/**
 * Moved (issue 13, one retry helper): the V6 policy and `unreachableRetry` are in ./errors.ts, `Sleep` and
 * `realSleep` in src/retry.ts. This file only serves the importers not changed yet (types.ts, verifiers.ts,
 * test-support.ts): delete it with them.
 */
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './errors';
export { realSleep, type Sleep } from '../../retry';
