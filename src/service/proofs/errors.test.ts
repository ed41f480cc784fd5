import { expect } from "chai";
import { InvalidInputError } from "../../errors";
import { retry } from "../../retry";
import { ProofSourceUnreachableError, unreachableRetry } from "./errors";
import { expectProofError, recordingSleep } from "./test-support";

describe("unreachableRetry (V6: 3 tries, backing off)", () => {
  it("tries an unreachable source 3 times, backing off 100 then 200 ms, then gives up as unreachable", async () => {
    const sleep = recordingSleep();
    let attempts = 0;
    const error = await expectProofError(
      retry(
        async () => {
          attempts++;
          throw new ProofSourceUnreachableError("down");
        },
        unreachableRetry({ retry: { tries: 3, baseDelayMs: 100 }, sleep }),
      ),
      "proof_source_unreachable",
      503,
    );
    expect(attempts).to.equal(3);
    expect(sleep.delays).to.deep.equal([100, 200]);
    expect((error as ProofSourceUnreachableError).attempts).to.equal(3);
    expect(error.retryable).to.equal(true);
  });

  it("returns the first success after unreachable tries", async () => {
    const sleep = recordingSleep();
    let attempts = 0;
    const value = await retry(
      async () => {
        if (++attempts < 3) throw new ProofSourceUnreachableError("down");
        return "up";
      },
      unreachableRetry({ retry: { tries: 3, baseDelayMs: 10 }, sleep }),
    );
    expect(value).to.equal("up");
    expect(sleep.delays).to.deep.equal([10, 20]);
  });

  it("does not retry a definitive answer", async () => {
    const sleep = recordingSleep();
    let attempts = 0;
    await expectProofError(
      retry(
        async () => {
          attempts++;
          throw new InvalidInputError("proof_gist_not_found", "gone", { status: 422 });
        },
        unreachableRetry({ retry: { tries: 3, baseDelayMs: 10 }, sleep }),
      ),
      "proof_gist_not_found",
    );
    expect(attempts).to.equal(1);
    expect(sleep.delays).to.deep.equal([]);
  });
});
