/** Assertions and fixtures shared by the proof tests (test-only). */
import { expect } from "chai";
import { BaseError } from "../../errors";
import { createChallenge, type Challenge, type CreateChallengeParams } from "./challenge";
import type { Sleep } from "../../retry";

/** A fixed clock: 2027-01-15T08:00:00Z. */
export const NOW = 1_800_000_000;

/** Awaits `promise`, expects it to reject with a BaseError of `code` (and `status` when given), and returns it. */
export async function expectProofError(promise: Promise<unknown>, code: string, status?: number): Promise<BaseError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a rejection with ${code}`).to.be.instanceOf(BaseError);
  const error = caught as BaseError;
  expect(error.code, error.message).to.equal(code);
  if (status !== undefined) expect(error.status).to.equal(status);
  return error;
}

/** Same as `expectProofError` for a function that throws synchronously. */
export function expectThrowsProofError(fn: () => unknown, code: string, status?: number): BaseError {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(BaseError);
    expect((error as BaseError).code, (error as BaseError).message).to.equal(code);
    if (status !== undefined) expect((error as BaseError).status).to.equal(status);
    return error as BaseError;
  }
  throw new Error(`expected ${code} to be thrown`);
}

/** A challenge issued at `NOW` for an hour, for owner `owner-1` and agent `agent-1`. */
export function challengeFor(
  kind: CreateChallengeParams["kind"],
  subject: string,
  overrides: Partial<CreateChallengeParams> = {},
): Challenge {
  return createChallenge({ kind, subject, ownerId: "owner-1", agentId: "agent-1", now: NOW, ttlS: 3600, ...overrides });
}

/** A `Sleep` that returns at once and records the delays asked for. */
export function recordingSleep(): Sleep & { delays: number[] } {
  const delays: number[] = [];
  const sleep = async (ms: number) => void delays.push(ms);
  return Object.assign(sleep, { delays });
}
