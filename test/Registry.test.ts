import { expect } from "./helpers/expect";
import { ethers } from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import type { AgentIdentity } from "../typechain-types";
import { signAgentWallet } from "./helpers/agentWallet";
import { deployReferenceIdentity } from "./helpers/erc8004Reference";

const SCORE_TYPE = ethers.encodeBytes32String("platform-network");
const Risk = { LOW: 0, MEDIUM: 1, HIGH: 2, CRITICAL: 3 } as const;
const Verdict = { NONE: 0, FULFILLED: 1, PARTIAL: 2, VIOLATED: 3 } as const;
const Party = { EXECUTOR: 0, REQUESTER: 1 } as const;
// METHOD part N, in tenths: [executor, requester].
const ADJUSTMENTS = {
  [Verdict.FULFILLED]: [30n, 15n],
  [Verdict.PARTIAL]: [5n, 5n],
  [Verdict.VIOLATED]: [-50n, -10n],
  [Verdict.NONE]: [20n, 10n],
} as const;

const TRACE_ROOT = ethers.id("trace root");
const INTENT = ethers.id("intent");
const COMPLETION_PROOF = ethers.id("completion proof");
let orderCounter = 0;
const nextOrder = () => ethers.id(`order ${++orderCounter}`);

/** Registry over `identity`, with an executor (wallet set, one approval, one operator) and a requester registered in it. */
async function deployWith(identity: AgentIdentity) {
  const [admin, platform, owner, wallet, approved, operator, stranger, newOwner, requesterOwner] = await ethers.getSigners();
  const registry = await ethers.deployContract("Registry", [admin.address, await identity.getAddress()]);
  const platformRole = await registry.PLATFORM_ROLE();
  await registry.grantRole(platformRole, platform.address);

  await identity.connect(owner)["register(string)"]("ipfs://executor");
  await identity.connect(requesterOwner)["register(string)"]("ipfs://requester");
  const [executorId, requesterId] = [0n, 1n];
  await identity.connect(owner).approve(approved.address, executorId);
  await identity.connect(owner).setApprovalForAll(operator.address, true);
  const deadline = BigInt(await time.latest()) + 120n;
  const signature = await signAgentWallet(identity, wallet, {
    agentId: executorId,
    newWallet: wallet.address,
    owner: owner.address,
    deadline,
  });
  await identity.connect(owner).setAgentWallet(executorId, wallet.address, deadline, signature);

  return {
    identity,
    registry,
    platformRole,
    admin,
    platform,
    owner,
    wallet,
    approved,
    operator,
    stranger,
    newOwner,
    requesterOwner,
    executorId,
    requesterId,
  };
}

async function fixture() {
  return deployWith(await ethers.deployContract("AgentIdentity"));
}

/** The same over the reference ERC-8004 registry behind its proxy, which public networks run. */
async function referenceFixture() {
  return deployWith(await deployReferenceIdentity());
}

// Registry.submitProof's controller checks read only ERC-721 and getAgentWallet: they must hold on both registries.
const IDENTITY_REGISTRIES = [
  ["AgentIdentity", () => loadFixture(fixture)],
  ["the reference IdentityRegistryUpgradeable", () => loadFixture(referenceFixture)],
] as const;

type Fixture = Awaited<ReturnType<typeof fixture>>;

/** Settles a new order between the fixture's agents with `verdict` (NONE: legacy, without Intent). */
function settle(f: Fixture, verdict: number, ids: { executorId?: bigint; requesterId?: bigint; orderId?: string } = {}) {
  const withIntent = verdict !== Verdict.NONE;
  return f.registry
    .connect(f.platform)
    .settle(
      ids.orderId ?? nextOrder(),
      ids.executorId ?? f.executorId,
      ids.requesterId ?? f.requesterId,
      withIntent ? INTENT : ethers.ZeroHash,
      verdict,
      withIntent ? COMPLETION_PROOF : ethers.ZeroHash,
    );
}

async function scoreOf(f: Fixture, agentId: bigint): Promise<bigint> {
  return (await f.registry.networkScoreOf(agentId)).score;
}

describe("Registry", () => {
  describe("deployment", () => {
    it("keeps the identity registry, the role ids and the score type", async () => {
      const { registry, identity, admin } = await loadFixture(fixture);
      expect(await registry.identityRegistry()).to.equal(await identity.getAddress());
      expect(await registry.PLATFORM_ROLE()).to.equal(ethers.id("PLATFORM_ROLE"));
      expect(await registry.SCORE_TYPE()).to.equal(SCORE_TYPE);
      expect(ethers.decodeBytes32String(await registry.SCORE_TYPE())).to.equal("platform-network");
      expect(await registry.hasRole(await registry.DEFAULT_ADMIN_ROLE(), admin.address)).to.equal(true);
    });

    it("refuses a zero identity registry", async () => {
      const { registry, admin } = await loadFixture(fixture);
      await expect(ethers.deployContract("Registry", [admin.address, ethers.ZeroAddress]))
        .to.be.revertedWithCustomError(registry, "RegistryInvalidIdentityRegistry")
        .withArgs(ethers.ZeroAddress);
    });

    it("has no function that could store an SDK Derived Score", async () => {
      const { registry } = await loadFixture(fixture);
      const writes = registry.interface.fragments
        .filter((fragment) => fragment.type === "function")
        .map((fragment) => fragment as unknown as { name: string; stateMutability: string })
        .filter((fragment) => fragment.stateMutability !== "view" && fragment.stateMutability !== "pure")
        .map((fragment) => fragment.name)
        .sort();
      expect(writes).to.deep.equal(["grantRole", "renounceRole", "revokeRole", "settle", "submitProof"]);
    });
  });

  for (const [label, load] of IDENTITY_REGISTRIES)
    describe(`submitProof, agents in ${label}`, () => {
      it("emits every field of the proof record for the owner", async () => {
        const f = await load();
        await expect(f.registry.connect(f.owner).submitProof(f.executorId, true, Risk.HIGH, 0, TRACE_ROOT))
          .to.emit(f.registry, "ProofSubmitted")
          .withArgs(f.executorId, f.owner.address, TRACE_ROOT, true, Risk.HIGH, 0);
      });

      it("carries each risk level and the violation count", async () => {
        const f = await load();
        for (const risk of Object.values(Risk)) {
          await expect(f.registry.connect(f.owner).submitProof(f.executorId, false, risk, 4_294_967_295n, TRACE_ROOT))
            .to.emit(f.registry, "ProofSubmitted")
            .withArgs(f.executorId, f.owner.address, TRACE_ROOT, false, risk, 4_294_967_295n);
        }
      });

      it("refuses a risk level outside low/medium/high/critical", async () => {
        const f = await load();
        const data = f.registry.interface
          .encodeFunctionData("submitProof", [f.executorId, true, Risk.LOW, 0, TRACE_ROOT])
          .replace(/0{64}(0{64}[0-9a-f]{64})$/, `${"0".repeat(63)}4$1`);
        await expect(f.owner.sendTransaction({ to: await f.registry.getAddress(), data })).to.be.reverted;
      });

      it("accepts the agent wallet, the approved account and an operator", async () => {
        const f = await load();
        for (const caller of [f.wallet, f.approved, f.operator]) {
          await expect(f.registry.connect(caller).submitProof(f.executorId, true, Risk.LOW, 1, TRACE_ROOT))
            .to.emit(f.registry, "ProofSubmitted")
            .withArgs(f.executorId, caller.address, TRACE_ROOT, true, Risk.LOW, 1);
        }
      });

      it("refuses anyone else, naming the caller and the agent", async () => {
        const f = await load();
        for (const caller of [f.stranger, f.requesterOwner, f.platform]) {
          await expect(f.registry.connect(caller).submitProof(f.executorId, true, Risk.LOW, 0, TRACE_ROOT))
            .to.be.revertedWithCustomError(f.registry, "RegistryNotAgentController")
            .withArgs(caller.address, f.executorId);
        }
      });

      it("refuses an agent that does not exist in the identity registry", async () => {
        const f = await load();
        await expect(f.registry.connect(f.owner).submitProof(42n, true, Risk.LOW, 0, TRACE_ROOT))
          .to.be.revertedWithCustomError(f.registry, "RegistryNonexistentAgent")
          .withArgs(42n);
      });

      it("moves control with the token: the new owner submits, the previous controllers cannot", async () => {
        const f = await load();
        await f.identity.connect(f.owner).transferFrom(f.owner.address, f.newOwner.address, f.executorId);
        await expect(f.registry.connect(f.newOwner).submitProof(f.executorId, true, Risk.MEDIUM, 0, TRACE_ROOT))
          .to.emit(f.registry, "ProofSubmitted")
          .withArgs(f.executorId, f.newOwner.address, TRACE_ROOT, true, Risk.MEDIUM, 0);
        // The old owner, its operator, the token approval and the agent wallet (cleared on transfer) lose control.
        for (const caller of [f.owner, f.operator, f.approved, f.wallet]) {
          await expect(f.registry.connect(caller).submitProof(f.executorId, true, Risk.LOW, 0, TRACE_ROOT))
            .to.be.revertedWithCustomError(f.registry, "RegistryNotAgentController")
            .withArgs(caller.address, f.executorId);
        }
      });

      it("gives control to the new owner's operator after a transfer", async () => {
        const f = await load();
        await f.identity.connect(f.owner).transferFrom(f.owner.address, f.newOwner.address, f.executorId);
        await f.identity.connect(f.newOwner).setApprovalForAll(f.stranger.address, true);
        await expect(f.registry.connect(f.stranger).submitProof(f.executorId, true, Risk.LOW, 0, TRACE_ROOT))
          .to.emit(f.registry, "ProofSubmitted")
          .withArgs(f.executorId, f.stranger.address, TRACE_ROOT, true, Risk.LOW, 0);
      });

      it("stops the agent wallet once it is unset", async () => {
        const f = await load();
        await f.identity.connect(f.owner).unsetAgentWallet(f.executorId);
        await expect(f.registry.connect(f.wallet).submitProof(f.executorId, true, Risk.LOW, 0, TRACE_ROOT))
          .to.be.revertedWithCustomError(f.registry, "RegistryNotAgentController")
          .withArgs(f.wallet.address, f.executorId);
      });
    });

  describe("submitProof, agents in a plain ERC-721 without getAgentWallet", () => {
    async function plainFixture() {
      const [admin, owner, approved, operator, stranger] = await ethers.getSigners();
      const identity = await ethers.deployContract("MockERC721Identity");
      const registry = await ethers.deployContract("Registry", [admin.address, await identity.getAddress()]);
      await identity.mint(owner.address, 7n);
      await identity.connect(owner).approve(approved.address, 7n);
      await identity.connect(owner).setApprovalForAll(operator.address, true);
      return { registry, owner, approved, operator, stranger };
    }

    it("takes the owner, the approved account and an operator, with no agent wallet to ask about", async () => {
      const f = await loadFixture(plainFixture);
      for (const caller of [f.owner, f.approved, f.operator]) {
        await expect(f.registry.connect(caller).submitProof(7n, true, Risk.LOW, 0, TRACE_ROOT))
          .to.emit(f.registry, "ProofSubmitted")
          .withArgs(7n, caller.address, TRACE_ROOT, true, Risk.LOW, 0);
      }
    });

    it("refuses anyone else as not the agent's controller, and a token it does not have as nonexistent", async () => {
      const f = await loadFixture(plainFixture);
      await expect(f.registry.connect(f.stranger).submitProof(7n, true, Risk.LOW, 0, TRACE_ROOT))
        .to.be.revertedWithCustomError(f.registry, "RegistryNotAgentController")
        .withArgs(f.stranger.address, 7n);
      await expect(f.registry.connect(f.owner).submitProof(8n, true, Risk.LOW, 0, TRACE_ROOT))
        .to.be.revertedWithCustomError(f.registry, "RegistryNonexistentAgent")
        .withArgs(8n);
    });
  });

  describe("settle", () => {
    it("is restricted to the platform role, which only the admin grants", async () => {
      const f = await loadFixture(fixture);
      for (const caller of [f.stranger, f.admin, f.owner]) {
        await expect(
          f.registry.connect(caller).settle(nextOrder(), f.executorId, f.requesterId, INTENT, Verdict.FULFILLED, COMPLETION_PROOF),
        )
          .to.be.revertedWithCustomError(f.registry, "AccessControlUnauthorizedAccount")
          .withArgs(caller.address, f.platformRole);
      }
      await expect(f.registry.connect(f.platform).grantRole(f.platformRole, f.stranger.address))
        .to.be.revertedWithCustomError(f.registry, "AccessControlUnauthorizedAccount")
        .withArgs(f.platform.address, await f.registry.DEFAULT_ADMIN_ROLE());
      await f.registry.connect(f.admin).revokeRole(f.platformRole, f.platform.address);
      await expect(settle(f, Verdict.FULFILLED))
        .to.be.revertedWithCustomError(f.registry, "AccessControlUnauthorizedAccount")
        .withArgs(f.platform.address, f.platformRole);
    });

    for (const [name, verdict] of Object.entries(Verdict)) {
      const [executorDelta, requesterDelta] = ADJUSTMENTS[verdict];
      const label = verdict === Verdict.NONE ? "a legacy order (no Intent)" : `a ${name} verdict`;
      it(`applies ${executorDelta} / ${requesterDelta} tenths for ${label}, emitting one event per adjustment`, async () => {
        const f = await loadFixture(fixture);
        // Bring both agents to 500 (legacy executor adjustments, +20 each) so that no adjustment is clamped.
        for (const agentId of [f.executorId, f.requesterId]) {
          for (let i = 0; i < 25; i++) await settle(f, Verdict.NONE, { executorId: agentId, requesterId: 99n });
        }
        const [executorBefore, requesterBefore] = [await scoreOf(f, f.executorId), await scoreOf(f, f.requesterId)];
        expect([executorBefore, requesterBefore]).to.deep.equal([500n, 500n]);

        const orderId = nextOrder();
        const intent = verdict === Verdict.NONE ? ethers.ZeroHash : INTENT;
        const proof = verdict === Verdict.NONE ? ethers.ZeroHash : COMPLETION_PROOF;
        const at = (await time.latest()) + 7;
        await time.setNextBlockTimestamp(at);
        const tx = f.registry.connect(f.platform).settle(orderId, f.executorId, f.requesterId, intent, verdict, proof);
        await expect(tx)
          .to.emit(f.registry, "OrderSettled")
          .withArgs(orderId, f.executorId, f.requesterId, intent, verdict, proof)
          .and.to.emit(f.registry, "NetworkScoreAdjusted")
          .withArgs(f.executorId, orderId, SCORE_TYPE, Party.EXECUTOR, executorDelta, executorBefore + executorDelta)
          .and.to.emit(f.registry, "NetworkScoreAdjusted")
          .withArgs(f.requesterId, orderId, SCORE_TYPE, Party.REQUESTER, requesterDelta, requesterBefore + requesterDelta);
        const executor = await f.registry.networkScoreOf(f.executorId);
        expect(executor.score).to.equal(executorBefore + executorDelta);
        expect(executor.lastSettledAt).to.equal(at);
        expect(executor.scoreType).to.equal(SCORE_TYPE);
        expect((await f.registry.networkScoreOf(f.requesterId)).score).to.equal(requesterBefore + requesterDelta);
        const settlement = await f.registry.settlementOf(orderId);
        expect(settlement.settledAt).to.equal(at);
        expect(settlement.verdict).to.equal(verdict);
      });
    }

    it("emits the order first, then the executor's and the requester's adjustments", async () => {
      const f = await loadFixture(fixture);
      const receipt = await (await settle(f, Verdict.FULFILLED)).wait();
      const names = receipt!.logs.map((log) => f.registry.interface.parseLog(log)!.name);
      expect(names).to.deep.equal(["OrderSettled", "NetworkScoreAdjusted", "NetworkScoreAdjusted"]);
      const parties = receipt!.logs.slice(1).map((log) => f.registry.interface.parseLog(log)!.args.party);
      expect(parties).to.deep.equal([BigInt(Party.EXECUTOR), BigInt(Party.REQUESTER)]);
    });

    it("counts settlements and records the time of the last one", async () => {
      const f = await loadFixture(fixture);
      const fresh = await f.registry.networkScoreOf(7n);
      expect([fresh.score, fresh.settlements, fresh.lastSettledAt, fresh.scoreType]).to.deep.equal([0n, 0n, 0n, SCORE_TYPE]);
      await settle(f, Verdict.FULFILLED);
      const at = (await time.latest()) + 100;
      await time.setNextBlockTimestamp(at);
      await settle(f, Verdict.PARTIAL);
      const [score, settlements, lastSettledAt, scoreType] = await f.registry.networkScoreOf(f.executorId);
      expect([score, settlements, lastSettledAt, scoreType]).to.deep.equal([35n, 2n, BigInt(at), SCORE_TYPE]);
      const requester = await f.registry.networkScoreOf(f.requesterId);
      expect([requester.score, requester.settlements, requester.lastSettledAt]).to.deep.equal([20n, 2n, BigInt(at)]);
    });

    it("clamps at 0: a VIOLATED verdict on a new agent leaves 0, and the next FULFILLED counts from 0", async () => {
      const f = await loadFixture(fixture);
      await expect(settle(f, Verdict.PARTIAL)).to.emit(f.registry, "NetworkScoreAdjusted");
      const orderId = nextOrder();
      await expect(settle(f, Verdict.VIOLATED, { orderId }))
        .to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.executorId, orderId, SCORE_TYPE, Party.EXECUTOR, -50n, 0n)
        .and.to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.requesterId, orderId, SCORE_TYPE, Party.REQUESTER, -10n, 0n);
      await settle(f, Verdict.FULFILLED);
      expect(await scoreOf(f, f.executorId)).to.equal(30n);
      expect(await scoreOf(f, f.requesterId)).to.equal(15n);
    });

    it("clamps at 1000: the 34th FULFILLED reaches 1000, not 1020, and a VIOLATED then gives 950", async () => {
      const f = await loadFixture(fixture);
      for (let i = 0; i < 33; i++) await settle(f, Verdict.FULFILLED);
      expect(await scoreOf(f, f.executorId)).to.equal(990n);
      const orderId = nextOrder();
      await expect(settle(f, Verdict.FULFILLED, { orderId }))
        .to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.executorId, orderId, SCORE_TYPE, Party.EXECUTOR, 30n, 1000n);
      await settle(f, Verdict.FULFILLED);
      expect(await scoreOf(f, f.executorId)).to.equal(1000n);
      await settle(f, Verdict.VIOLATED);
      expect(await scoreOf(f, f.executorId)).to.equal(950n);
      expect((await f.registry.networkScoreOf(f.executorId)).settlements).to.equal(36n);
    });

    it("applies both adjustments in turn when the executor is the requester, counting one settlement", async () => {
      const f = await loadFixture(fixture);
      const orderId = nextOrder();
      const self = { executorId: f.executorId, requesterId: f.executorId, orderId };
      await expect(settle(f, Verdict.FULFILLED, self))
        .to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.executorId, orderId, SCORE_TYPE, Party.EXECUTOR, 30n, 30n)
        .and.to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.executorId, orderId, SCORE_TYPE, Party.REQUESTER, 15n, 45n);
      expect((await f.registry.networkScoreOf(f.executorId)).settlements).to.equal(1n);
      const violated = nextOrder();
      await expect(settle(f, Verdict.VIOLATED, { ...self, orderId: violated }))
        .to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.executorId, violated, SCORE_TYPE, Party.EXECUTOR, -50n, 0n)
        .and.to.emit(f.registry, "NetworkScoreAdjusted")
        .withArgs(f.executorId, violated, SCORE_TYPE, Party.REQUESTER, -10n, 0n);
      expect((await f.registry.networkScoreOf(f.executorId)).settlements).to.equal(2n);
    });

    it("does not need the agents to be controlled by the platform, nor to exist yet", async () => {
      const f = await loadFixture(fixture);
      await settle(f, Verdict.NONE, { executorId: 1000n, requesterId: 1001n });
      expect(await scoreOf(f, 1000n)).to.equal(20n);
      expect(await scoreOf(f, 1001n)).to.equal(10n);
    });

    it("settles an order once", async () => {
      const f = await loadFixture(fixture);
      const orderId = nextOrder();
      await settle(f, Verdict.FULFILLED, { orderId });
      for (const verdict of [Verdict.FULFILLED, Verdict.VIOLATED, Verdict.NONE]) {
        await expect(settle(f, verdict, { orderId }))
          .to.be.revertedWithCustomError(f.registry, "RegistryOrderAlreadySettled")
          .withArgs(orderId);
      }
      expect(await scoreOf(f, f.executorId)).to.equal(30n);
    });

    it("records the legacy settlement with no Completion Proof", async () => {
      const f = await loadFixture(fixture);
      const orderId = nextOrder();
      await expect(settle(f, Verdict.NONE, { orderId }))
        .to.emit(f.registry, "OrderSettled")
        .withArgs(orderId, f.executorId, f.requesterId, ethers.ZeroHash, Verdict.NONE, ethers.ZeroHash);
      expect((await f.registry.settlementOf(orderId)).verdict).to.equal(Verdict.NONE);
      expect((await f.registry.settlementOf(nextOrder())).settledAt).to.equal(0n);
    });

    const invalid: Array<[string, string, number, string]> = [
      ["an Intent with verdict NONE", INTENT, Verdict.NONE, COMPLETION_PROOF],
      ["an Intent without a Completion Proof", INTENT, Verdict.FULFILLED, ethers.ZeroHash],
      ["an Intent with NONE and no Completion Proof", INTENT, Verdict.NONE, ethers.ZeroHash],
      ["no Intent with a verdict", ethers.ZeroHash, Verdict.PARTIAL, ethers.ZeroHash],
      ["no Intent with a Completion Proof", ethers.ZeroHash, Verdict.NONE, COMPLETION_PROOF],
      ["no Intent with a verdict and a Completion Proof", ethers.ZeroHash, Verdict.VIOLATED, COMPLETION_PROOF],
    ];
    for (const [label, intent, verdict, proof] of invalid) {
      it(`refuses ${label}`, async () => {
        const f = await loadFixture(fixture);
        await expect(f.registry.connect(f.platform).settle(nextOrder(), f.executorId, f.requesterId, intent, verdict, proof))
          .to.be.revertedWithCustomError(f.registry, "RegistryInvalidSettlement")
          .withArgs(intent, verdict, proof);
      });
    }
  });
});
