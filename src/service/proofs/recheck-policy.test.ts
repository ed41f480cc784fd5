import { expect } from "chai";
import { applyRecheckOutcome, dueForRecheck, nextRecheckAt, recheckIntervalS } from "./recheck-policy";
import type { RecheckOutcome } from "./types";

const ok: RecheckOutcome = { type: "ok" };
const unreachable: RecheckOutcome = { type: "failed", reason: "unreachable", code: "proof_source_unreachable", message: "down" };
const rejected: RecheckOutcome = { type: "failed", reason: "rejected", code: "proof_challenge_missing", message: "gone" };
const T0 = 1_800_000_000;
const DAY = 86_400;

/** Feeds outcomes through the policy from a fresh proof; returns every decision. */
function run(outcomes: RecheckOutcome[]) {
  let consecutiveFailures = 0;
  return outcomes.map((outcome) => {
    const decision = applyRecheckOutcome({ consecutiveFailures }, outcome);
    if (decision.action === "keep") consecutiveFailures = decision.consecutiveFailures;
    return decision;
  });
}

describe("recheck policy (V6)", () => {
  it("re-checks github every 30 days, domain and erc8004 every 7 days, wallet never", () => {
    expect((["github", "wallet", "domain", "erc8004"] as const).map(recheckIntervalS)).to.deep.equal([30 * DAY, null, 7 * DAY, 7 * DAY]);
  });

  it("makes a domain or erc8004 proof due at exactly +7 d, not a second before", () => {
    for (const kind of ["domain", "erc8004"] as const) {
      expect(dueForRecheck({ kind, lastCheckedAt: T0 }, T0 + 7 * DAY - 1)).to.equal(false);
      expect(dueForRecheck({ kind, lastCheckedAt: T0 }, T0 + 7 * DAY)).to.equal(true);
      expect(nextRecheckAt({ kind, lastCheckedAt: T0 })).to.equal(T0 + 7 * DAY);
    }
  });

  it("makes a github proof due at exactly +30 d, not a second before", () => {
    expect(dueForRecheck({ kind: "github", lastCheckedAt: T0 }, T0 + 30 * DAY - 1)).to.equal(false);
    expect(dueForRecheck({ kind: "github", lastCheckedAt: T0 }, T0 + 30 * DAY)).to.equal(true);
  });

  it("never makes a wallet proof due", () => {
    expect(nextRecheckAt({ kind: "wallet", lastCheckedAt: T0 })).to.equal(null);
    expect(dueForRecheck({ kind: "wallet", lastCheckedAt: T0 }, T0 + 10_000 * DAY)).to.equal(false);
  });

  it("removes a proof at the second failed check in a row, unreachable or rejected alike", () => {
    expect(run([unreachable, rejected])).to.deep.equal([
      { action: "keep", consecutiveFailures: 1 },
      { action: "remove", reason: "failed_twice" },
    ]);
    expect(run([unreachable, unreachable]).at(-1)).to.deep.equal({ action: "remove", reason: "failed_twice" });
  });

  it("keeps a proof that fails, passes, then fails again (the count resets on ok)", () => {
    expect(run([rejected, ok, rejected])).to.deep.equal([
      { action: "keep", consecutiveFailures: 1 },
      { action: "keep", consecutiveFailures: 0 },
      { action: "keep", consecutiveFailures: 1 },
    ]);
  });

  it("removes an erc8004 proof at once when its token moved", () => {
    expect(
      applyRecheckOutcome({ consecutiveFailures: 0 }, { type: "moved", newOwner: "0x0000000000000000000000000000000000000002" }),
    ).to.deep.equal({
      action: "remove",
      reason: "moved",
    });
  });
});
