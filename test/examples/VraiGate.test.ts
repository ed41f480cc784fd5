import { expect } from "../helpers/expect";
import { ethers } from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import { deployReferenceIdentity } from "../helpers/erc8004Reference";
import { signAgentWallet } from "../helpers/agentWallet";
import { DAY_S, PROVISIONAL, SCORE_DAY_V1_KIND, SCORE_DAY_V2_KIND, scoreOf, treeOf, type Score } from "../helpers/vraiScores";

const MIN_TOTAL = 300;
const MAX_AGE = 12 * 3600;

async function fixture() {
  const [admin, service, owner, wallet, other, stranger] = await ethers.getSigners();
  const anchors = await ethers.deployContract("AnchorRegistry", [admin.address]);
  await anchors.grantRole(await anchors.ANCHORER_ROLE(), service.address);
  // The reference ERC-8004 identity registry: token 0 owned by `owner`, with `wallet` as its agent wallet; token 1 by `other`.
  const identity = await deployReferenceIdentity();
  await identity.connect(owner)["register(string)"]("ipfs://gated-agent");
  await identity.connect(other)["register(string)"]("ipfs://other-agent");
  const deadline = BigInt(await time.latest()) + 60n;
  const signature = await signAgentWallet(identity, wallet, { agentId: 0n, newWallet: wallet.address, owner: owner.address, deadline });
  await identity.connect(owner).setAgentWallet(0n, wallet.address, deadline, signature);
  const registry = await identity.getAddress();
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const gate = await ethers.deployContract("VraiGate", [await anchors.getAddress(), registry, MIN_TOTAL, MAX_AGE]);

  // Today is a day whose yesterday's 00:01 is still ahead of the chain's clock.
  const day = Math.floor((await time.latest()) / DAY_S) + 2;
  const bound = { erc8004ChainId: chainId, erc8004Registry: registry, erc8004TokenId: 0n };
  const scores: Record<string, Score> = {
    passing: scoreOf({ agent: "agt_gated", day, ...bound }),
    provisional: scoreOf({ agent: "agt_provisional", day, ...bound, total: 330, state: PROVISIONAL }),
    low: scoreOf({ agent: "agt_low", day, ...bound, total: 250, reliability: 0, identity: 150 }),
    othersIdentity: scoreOf({ agent: "agt_others", day, ...bound, erc8004TokenId: 1n }),
    unbound: scoreOf({ agent: "agt_unbound", day }),
    otherRegistry: scoreOf({ agent: "agt_elsewhere", day, ...bound, erc8004Registry: ethers.getAddress(`0x${"8004".repeat(10)}`) }),
    otherChain: scoreOf({ agent: "agt_other_chain", day, ...bound, erc8004ChainId: 8453n }),
  };
  const names = Object.keys(scores);
  const today = treeOf(Object.values(scores));
  const arguments_ = (name: string) => [scores[name], today.proofOf(names.indexOf(name)), today.root] as const;
  // Yesterday's day as the service anchors it: at yesterday's 00:01, its leaves of yesterday.
  const yesterday = treeOf([scoreOf({ agent: "agt_gated", day: day - 1, ...bound }), scoreOf({ agent: "agt_low", day: day - 1 })]);
  await time.setNextBlockTimestamp((day - 1) * DAY_S + 60);
  await anchors.connect(service).anchorRoot(yesterday.root, 2n, SCORE_DAY_V2_KIND);
  // Today's root at 00:01; a day of yesterday's leaves anchored late, today; a day anchored under the version-1 kind.
  const lateDay = treeOf([scoreOf({ agent: "agt_gated", day: day - 1, ...bound, inputsSha256: ethers.id("late") }), scores.low]);
  const v1Kind = treeOf([scoreOf({ agent: "agt_gated", day, ...bound, inputsSha256: ethers.id("v1") }), scores.low]);
  const anchoredAt = day * DAY_S + 60;
  await time.setNextBlockTimestamp(anchoredAt);
  await anchors.connect(service).anchorRoot(today.root, BigInt(names.length), SCORE_DAY_V2_KIND);
  await anchors.connect(service).anchorRoot(lateDay.root, 2n, SCORE_DAY_V2_KIND);
  await anchors.connect(service).anchorRoot(v1Kind.root, 2n, SCORE_DAY_V1_KIND);
  await time.increaseTo(day * DAY_S + 3600);
  return {
    gate,
    anchors,
    identity,
    owner,
    wallet,
    other,
    stranger,
    day,
    anchoredAt,
    scores,
    today,
    arguments_,
    yesterday,
    lateDay,
    v1Kind,
    registry,
  };
}

describe("examples/VraiGate", () => {
  it("states what it asks: the registries, the threshold and the maximum age", async () => {
    const { gate, anchors, registry } = await loadFixture(fixture);
    expect(await gate.requirements()).to.deep.equal([await anchors.getAddress(), registry, BigInt(MIN_TOTAL), BigInt(MAX_AGE)]);
  });

  it("lets the identity token's owner in with its established score of today, and check returns the root's anchor time", async () => {
    const { gate, owner, anchoredAt, arguments_ } = await loadFixture(fixture);
    await expect(gate.connect(owner).enter(...arguments_("passing")))
      .to.emit(gate, "Entered")
      .withArgs(owner.address, 0n);
    expect(await gate.connect(owner).check(...arguments_("passing"))).to.equal(anchoredAt);
  });

  it("lets the identity's agent wallet in", async () => {
    const { gate, wallet, arguments_ } = await loadFixture(fixture);
    await expect(gate.connect(wallet).enter(...arguments_("passing")))
      .to.emit(gate, "Entered")
      .withArgs(wallet.address, 0n);
  });

  it("lets a score in up to the maximum age of its anchor, and refuses it as stale one second later", async () => {
    const { gate, owner, anchoredAt, arguments_ } = await loadFixture(fixture);
    await time.setNextBlockTimestamp(anchoredAt + MAX_AGE);
    await expect(gate.connect(owner).enter(...arguments_("passing"))).to.emit(gate, "Entered");
    await time.setNextBlockTimestamp(anchoredAt + MAX_AGE + 1);
    await expect(gate.connect(owner).enter(...arguments_("passing")))
      .to.be.revertedWithCustomError(gate, "VraiGateStaleScore")
      .withArgs(anchoredAt, MAX_AGE);
  });

  it("refuses yesterday's score under yesterday's root as stale", async () => {
    const { gate, owner, day, yesterday } = await loadFixture(fixture);
    const score = scoreOf({
      agent: "agt_gated",
      day: day - 1,
      erc8004ChainId: 31337n,
      erc8004Registry: (await gate.requirements()).identityRegistry,
      erc8004TokenId: 0n,
    });
    await expect(gate.connect(owner).enter(score, yesterday.proofOf(0), yesterday.root))
      .to.be.revertedWithCustomError(gate, "VraiGateStaleScore")
      .withArgs((day - 1) * DAY_S + 60, MAX_AGE);
  });

  it("refuses a leaf of another day: yesterday's score under a root anchored today, and a leaf whose day was changed", async () => {
    const { gate, owner, day, scores, lateDay, arguments_ } = await loadFixture(fixture);
    const late = scoreOf({
      agent: "agt_gated",
      day: day - 1,
      erc8004ChainId: 31337n,
      erc8004Registry: scores.passing.erc8004Registry,
      erc8004TokenId: 0n,
      inputsSha256: ethers.id("late"),
    });
    await expect(gate.connect(owner).enter(late, lateDay.proofOf(0), lateDay.root))
      .to.be.revertedWithCustomError(gate, "VraiGateScoreOfAnotherDay")
      .withArgs(day - 1, day);
    const [score, proof, root] = arguments_("passing");
    await expect(gate.connect(owner).enter({ ...score, day: day + 1 }, proof, root)).to.be.revertedWithCustomError(
      gate,
      "VraiScoresInvalidProof",
    );
  });

  it("refuses a wrong proof", async () => {
    const { gate, owner, today, arguments_ } = await loadFixture(fixture);
    const [score, , root] = arguments_("passing");
    await expect(gate.connect(owner).enter(score, today.proofOf(1), root))
      .to.be.revertedWithCustomError(gate, "VraiScoresInvalidProof")
      .withArgs(root, today.leafOf(0));
  });

  it("refuses a root that is not anchored", async () => {
    const { gate, owner, scores } = await loadFixture(fixture);
    const unanchored = treeOf([scores.passing, scores.low]);
    await expect(gate.connect(owner).enter(scores.passing, unanchored.proofOf(0), unanchored.root))
      .to.be.revertedWithCustomError(gate, "VraiScoresRootNotAnchored")
      .withArgs(unanchored.root);
  });

  it("refuses a root anchored under another kind (a day of version-1 leaves)", async () => {
    const { gate, owner, day, scores, v1Kind } = await loadFixture(fixture);
    const score = { ...scores.passing, day, inputsSha256: ethers.id("v1") };
    await expect(gate.connect(owner).enter(score, v1Kind.proofOf(0), v1Kind.root))
      .to.be.revertedWithCustomError(gate, "VraiScoresRootOfAnotherKind")
      .withArgs(v1Kind.root);
  });

  it("refuses a provisional score", async () => {
    const { gate, owner, arguments_ } = await loadFixture(fixture);
    await expect(gate.connect(owner).enter(...arguments_("provisional")))
      .to.be.revertedWithCustomError(gate, "VraiGateScoreNotEstablished")
      .withArgs("agt_provisional");
  });

  it("refuses a score below the threshold", async () => {
    const { gate, owner, arguments_ } = await loadFixture(fixture);
    await expect(gate.connect(owner).enter(...arguments_("low")))
      .to.be.revertedWithCustomError(gate, "VraiGateScoreBelowThreshold")
      .withArgs(250, MIN_TOTAL);
  });

  it("refuses a caller that neither owns the score's ERC-8004 identity nor is its agent wallet", async () => {
    const { gate, owner, stranger, other, arguments_ } = await loadFixture(fixture);
    await expect(gate.connect(stranger).enter(...arguments_("passing")))
      .to.be.revertedWithCustomError(gate, "VraiGateNotIdentityHolder")
      .withArgs(stranger.address, 0n);
    // Someone else's identity: token 1 is `other`'s, not the owner's of token 0.
    await expect(gate.connect(owner).enter(...arguments_("othersIdentity")))
      .to.be.revertedWithCustomError(gate, "VraiGateNotIdentityHolder")
      .withArgs(owner.address, 1n);
    await expect(gate.connect(other).enter(...arguments_("othersIdentity")))
      .to.emit(gate, "Entered")
      .withArgs(other.address, 1n);
  });

  it("refuses a score whose identity is of no ERC-8004 registry, of another registry, or of another chain", async () => {
    const { gate, owner, scores, arguments_ } = await loadFixture(fixture);
    await expect(gate.connect(owner).enter(...arguments_("unbound")))
      .to.be.revertedWithCustomError(gate, "VraiGateIdentityNotInRegistry")
      .withArgs(0n, ethers.ZeroAddress);
    await expect(gate.connect(owner).enter(...arguments_("otherRegistry")))
      .to.be.revertedWithCustomError(gate, "VraiGateIdentityNotInRegistry")
      .withArgs(31337n, scores.otherRegistry.erc8004Registry);
    await expect(gate.connect(owner).enter(...arguments_("otherChain")))
      .to.be.revertedWithCustomError(gate, "VraiGateIdentityNotInRegistry")
      .withArgs(8453n, scores.otherChain.erc8004Registry);
  });

  it("refuses the agent wallet once the identity token moves (the transfer clears it)", async () => {
    const { gate, identity, owner, wallet, stranger, arguments_ } = await loadFixture(fixture);
    await identity.connect(owner).transferFrom(owner.address, stranger.address, 0n);
    await expect(gate.connect(wallet).enter(...arguments_("passing")))
      .to.be.revertedWithCustomError(gate, "VraiGateNotIdentityHolder")
      .withArgs(wallet.address, 0n);
    await expect(gate.connect(stranger).enter(...arguments_("passing"))).to.emit(gate, "Entered");
  });
});
