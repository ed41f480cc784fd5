import type fc from "fast-check";
import { time } from "@nomicfoundation/hardhat-toolbox/network-helpers";

/**
 * The command of a random sequence of contract calls (fast-check's model-based testing) in which time passes: the
 * chain's clock moves `seconds` on, then `expectInvariants` checks the contract against the model as after any call.
 */
export function waitCommand<Model extends object, Real>(
  seconds: number,
  expectInvariants: (model: Model, real: Real) => Promise<void>,
): fc.AsyncCommand<Model, Real> {
  return {
    check: () => true,
    async run(model, real) {
      await time.increase(seconds);
      await expectInvariants(model, real);
    },
    toString: () => `wait ${seconds} s`,
  };
}
