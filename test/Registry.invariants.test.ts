/**
 * Registry's Platform Network Score under random sequences of settlements (issue #30): valid and invalid
 * verdicts, legacy orders, orders settled again, callers without the platform role, the same agent on both
 * sides, time passing, from scores anywhere in 0–1000. After every call each agent's score is the model's
 * (METHOD part N, `applyVerdict` of src/method/verdict.ts), within 0–1000 tenths, and every settlement
 * applied once: an order settles once, and a second settlement changes nothing.
 */
import { expect } from "./helpers/expect";
import fc from "fast-check";
import { ethers, network } from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import type { Registry } from "../typechain-types";
import { applyVerdict, NETWORK_SCORE_MAX, type Verdict as MethodVerdict } from "../src/method/verdict";
import { waitCommand } from "./helpers/invariants";

/** IRegistry.Verdict; NONE is an order settled without an Intent (legacy). */
const Verdict = { NONE: 0, FULFILLED: 1, PARTIAL: 2, VIOLATED: 3 } as const;
const METHOD_VERDICT: Record<number, MethodVerdict> = { 0: "LEGACY", 1: "FULFILLED", 2: "PARTIAL", 3: "VIOLATED" };
const AGENTS = [0n, 1n, 2n, 3n];
/** A few orders, so that calls settle the same order again. */
const ORDERS = Array.from({ length: 8 }, (_, i) => ethers.id(`order ${i}`));
const INTENT = ethers.id("intent");
const COMPLETION_PROOF = ethers.id("completion proof");
/** Storage slot of Registry's `_scores` mapping: after AccessControl's `_roles` (slot 0); checked by reading the seeded scores back. */
const SCORES_SLOT = 1n;

async function fixture() {
  const [admin, platform, stranger] = await ethers.getSigners();
  const identity = await ethers.deployContract("AgentIdentity");
  const registry = await ethers.deployContract("Registry", [admin.address, await identity.getAddress()]);
  const platformRole = await registry.PLATFORM_ROLE();
  await registry.grantRole(platformRole, platform.address);
  return { registry, platform, stranger, platformRole };
}

type Real = Awaited<ReturnType<typeof fixture>>;
type NetworkScore = { score: number; settlements: number; lastSettledAt: bigint };
type Model = { scores: Map<bigint, NetworkScore>; settled: Map<string, { settledAt: bigint; verdict: number }> };

/**
 * Sets the stored scores of the agents directly (their settlement counts and times left at 0), so that
 * short sequences reach both ends of 0–1000: 34 FULFILLED settlements would be needed to climb from 0.
 */
async function seedScores(registry: Registry, scores: readonly number[]): Promise<void> {
  for (const [i, agentId] of AGENTS.entries()) {
    const slot = ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["uint256", "uint256"], [agentId, SCORES_SLOT]));
    await network.provider.send("hardhat_setStorageAt", [await registry.getAddress(), slot, ethers.toBeHex(scores[i], 32)]);
  }
  for (const [i, agentId] of AGENTS.entries()) expect((await registry.networkScoreOf(agentId)).score, "seeded score").to.equal(scores[i]);
}

/** Every agent's score and every order's settlement read back as the model has them. */
async function expectScoresAndSettlements(m: Model, r: Real): Promise<void> {
  const [scores, settlements] = await Promise.all([
    Promise.all(AGENTS.map((agentId) => r.registry.networkScoreOf(agentId))),
    Promise.all(ORDERS.map((orderId) => r.registry.settlementOf(orderId))),
  ]);
  AGENTS.forEach((agentId, i) => {
    const [score, count, lastSettledAt] = scores[i];
    expect(Number(score)).to.be.within(0, NETWORK_SCORE_MAX);
    expect({ score: Number(score), settlements: Number(count), lastSettledAt }, `agent ${agentId}`).to.deep.equal(m.scores.get(agentId));
  });
  ORDERS.forEach((orderId, i) => {
    const expected = m.settled.get(orderId) ?? { settledAt: 0n, verdict: Verdict.NONE };
    expect({ settledAt: settlements[i].settledAt, verdict: Number(settlements[i].verdict) }, orderId).to.deep.equal(expected);
  });
}

/** How a settlement call is formed: with an Intent and a verdict and proof, legacy, or one of the invalid mixes. */
type Shape = "intent" | "legacy" | "intent-without-verdict" | "intent-without-proof" | "legacy-with-verdict" | "legacy-with-proof";

class SettleCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly order: number,
    readonly executor: number,
    readonly requester: number,
    readonly shape: Shape,
    readonly verdict: 1 | 2 | 3,
    readonly byPlatform: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const orderId = ORDERS[this.order];
    const [executorId, requesterId] = [AGENTS[this.executor], AGENTS[this.requester]];
    const withIntent = this.shape.startsWith("intent");
    const verdict =
      this.shape === "intent" || this.shape === "legacy-with-verdict" || this.shape === "intent-without-proof"
        ? this.verdict
        : Verdict.NONE;
    const proof =
      this.shape === "intent" || this.shape === "intent-without-verdict" || this.shape === "legacy-with-proof"
        ? COMPLETION_PROOF
        : ethers.ZeroHash;
    const intent = withIntent ? INTENT : ethers.ZeroHash;
    const caller = this.byPlatform ? r.platform : r.stranger;
    const call = r.registry.connect(caller).settle(orderId, executorId, requesterId, intent, verdict, proof);
    // The contract's order of checks: the platform role, the shape of the settlement, an order already settled.
    if (!this.byPlatform) {
      await expect(call)
        .to.be.revertedWithCustomError(r.registry, "AccessControlUnauthorizedAccount")
        .withArgs(caller.address, r.platformRole);
    } else if (this.shape !== "intent" && this.shape !== "legacy") {
      await expect(call).to.be.revertedWithCustomError(r.registry, "RegistryInvalidSettlement").withArgs(intent, verdict, proof);
    } else if (m.settled.has(orderId)) {
      await expect(call).to.be.revertedWithCustomError(r.registry, "RegistryOrderAlreadySettled").withArgs(orderId);
    } else {
      await expect(call).to.emit(r.registry, "OrderSettled").withArgs(orderId, executorId, requesterId, intent, verdict, proof);
      const settledAt = BigInt(await time.latest());
      m.settled.set(orderId, { settledAt, verdict });
      const updated = applyVerdict((agent) => m.scores.get(BigInt(agent))!.score, {
        executor: String(executorId),
        requester: String(requesterId),
        verdict: METHOD_VERDICT[verdict],
      });
      for (const [agent, score] of updated) {
        const before = m.scores.get(BigInt(agent))!;
        m.scores.set(BigInt(agent), { score, settlements: before.settlements + 1, lastSettledAt: settledAt });
      }
    }
    await expectScoresAndSettlements(m, r);
  }
  toString = () =>
    `settle order ${this.order} ${this.executor}->${this.requester} ${this.shape} verdict ${this.verdict}${this.byPlatform ? "" : " by a stranger"}`;
}

const agentArb = fc.nat(AGENTS.length - 1);
const commandsArb = fc.commands(
  [
    fc
      .record({
        order: fc.nat(ORDERS.length - 1),
        executor: agentArb,
        requester: agentArb,
        shape: fc.oneof(
          { weight: 6, arbitrary: fc.constant<Shape>("intent") },
          { weight: 2, arbitrary: fc.constant<Shape>("legacy") },
          {
            weight: 2,
            arbitrary: fc.constantFrom<Shape>("intent-without-verdict", "intent-without-proof", "legacy-with-verdict", "legacy-with-proof"),
          },
        ),
        verdict: fc.constantFrom<1 | 2 | 3>(1, 2, 3),
        // Now and then a caller without the platform role.
        byPlatform: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      })
      .map((c) => new SettleCommand(c.order, c.executor, c.requester, c.shape, c.verdict, c.byPlatform)),
    fc.integer({ min: 1, max: 86_400 }).map((s) => waitCommand<Model, Real>(s, expectScoresAndSettlements)),
  ],
  { maxCommands: 20, size: "max" },
);

/** Starting scores near both ends of 0–1000 as well as anywhere between. */
const startArb = fc.array(
  fc.oneof(
    fc.integer({ min: 0, max: 60 }),
    fc.integer({ min: 940, max: NETWORK_SCORE_MAX }),
    fc.integer({ min: 0, max: NETWORK_SCORE_MAX }),
  ),
  { minLength: AGENTS.length, maxLength: AGENTS.length },
);

describe("Registry invariants (random sequences of settlements, METHOD part N)", () => {
  it("keeps every network score within 0–1000 tenths and applies every settlement once, exactly as the method's rules say", async () => {
    await fc.assert(
      fc.asyncProperty(startArb, commandsArb, async (start, commands) => {
        const real = await loadFixture(fixture);
        await seedScores(real.registry, start);
        const model: Model = {
          scores: new Map(AGENTS.map((id, i) => [id, { score: start[i], settlements: 0, lastSettledAt: 0n }])),
          settled: new Map(),
        };
        await fc.asyncModelRun(() => ({ model, real }), commands);
        // One OrderSettled event per order settled, and two adjustments (executor, requester) for each.
        const settledEvents = await real.registry.queryFilter(real.registry.filters.OrderSettled());
        expect(settledEvents.map((e) => e.args.orderId).sort()).to.deep.equal([...model.settled.keys()].sort());
        const adjustments = await real.registry.queryFilter(real.registry.filters.NetworkScoreAdjusted());
        expect(adjustments).to.have.length(2 * model.settled.size);
        for (const a of adjustments) expect(Number(a.args.score)).to.be.within(0, NETWORK_SCORE_MAX);
      }),
      { numRuns: 12, seed: 3031 },
    );
  });
});
