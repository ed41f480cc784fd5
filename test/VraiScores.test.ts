import { expect } from "./helpers/expect";
import { ethers } from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import { DAY_S, NOT_ACTIVE, PROVISIONAL, SCORE_DAY_V1_KIND, SCORE_DAY_V2_KIND, scoreOf, treeOf, valuesOf } from "./helpers/vraiScores";

async function fixture() {
  const [admin, service, verifier] = await ethers.getSigners();
  const anchors = await ethers.deployContract("AnchorRegistry", [admin.address]);
  await anchors.grantRole(await anchors.ANCHORER_ROLE(), service.address);
  await anchors.grantRole(await anchors.VERIFIER_ROLE(), verifier.address);
  const scores = await ethers.deployContract("VraiScoresHarness");
  const day = Math.floor((await time.latest()) / DAY_S) + 1;
  const day1 = [
    scoreOf({
      agent: "agt_3f9c0d1e2b4a5968",
      day,
      erc8004ChainId: 31337n,
      erc8004Registry: ethers.getAddress(`0x${"8004".repeat(10)}`),
      erc8004TokenId: 2n ** 256n - 1n,
    }),
    scoreOf({ agent: "agt_provisional", day, total: 200, identity: 100, reliability: 0, state: PROVISIONAL }),
    // A component not active in its method (none is in 0.1 and 0.2), and the longest agent id (64 characters).
    scoreOf({ agent: "a".repeat(64), day, total: 250, identity: NOT_ACTIVE, reliability: 150, integrity: 100 }),
  ];
  return { anchors, scores, service, verifier, day, day1, ...treeOf(day1) };
}

describe("VraiScores", () => {
  it(
    "uses the StandardMerkleTree leaf of the fields in their order, as the service's tree " +
      "(a not-active component and a 64-character id included)",
    async () => {
      const { scores, day1, tree } = await loadFixture(fixture);
      for (const score of day1) expect(await scores.leafHash(score)).to.equal(tree.leafHash(valuesOf(score)));
    },
  );

  it('names the kind bytes32("vrai-score-day-v2")', async () => {
    const { scores } = await loadFixture(fixture);
    expect(await scores.scoreDayV2Kind()).to.equal(SCORE_DAY_V2_KIND);
  });

  it("returns the root's anchor time for every leaf once the proof holds and the root is anchored as a day of version-2 scores", async () => {
    const { anchors, scores, service, day, day1, root, proofOf } = await loadFixture(fixture);
    const at = day * DAY_S + 60;
    await time.setNextBlockTimestamp(at);
    await anchors.connect(service).anchorRoot(root, 3n, SCORE_DAY_V2_KIND);
    for (const [i, score] of day1.entries()) expect(await scores.verify(anchors, score, proofOf(i), root)).to.equal(at);
  });

  it("accepts a root the verifier role anchored", async () => {
    const { anchors, scores, verifier, day1, root, proofOf } = await loadFixture(fixture);
    await anchors.connect(verifier).anchorRoot(root, 3n, SCORE_DAY_V2_KIND);
    expect(await scores.verify(anchors, day1[0], proofOf(0), root)).to.equal(await anchors.rootAnchoredAt(root, SCORE_DAY_V2_KIND));
  });

  it("refuses a proof that does not lead to the root: a changed value, another leaf's proof, a tampered sibling", async () => {
    const { anchors, scores, service, day1, root, proofOf, leafOf } = await loadFixture(fixture);
    await anchors.connect(service).anchorRoot(root, 3n, SCORE_DAY_V2_KIND);
    const raised = { ...day1[1], total: 500 };
    await expect(scores.verify(anchors, raised, proofOf(1), root))
      .to.be.revertedWithCustomError(scores, "VraiScoresInvalidProof")
      .withArgs(root, await scores.leafHash(raised));
    await expect(scores.verify(anchors, day1[0], proofOf(1), root))
      .to.be.revertedWithCustomError(scores, "VraiScoresInvalidProof")
      .withArgs(root, leafOf(0));
    const tampered = [...proofOf(0)];
    tampered[0] = ethers.toBeHex(BigInt(tampered[0]) ^ 1n, 32);
    await expect(scores.verify(anchors, day1[0], tampered, root))
      .to.be.revertedWithCustomError(scores, "VraiScoresInvalidProof")
      .withArgs(root, leafOf(0));
  });

  it("refuses a root that is not anchored", async () => {
    const { anchors, scores, day1, root, proofOf } = await loadFixture(fixture);
    await expect(scores.verify(anchors, day1[0], proofOf(0), root))
      .to.be.revertedWithCustomError(scores, "VraiScoresRootNotAnchored")
      .withArgs(root);
  });

  it("refuses a root anchored as a day of version-1 leaves, or as a single digest of the version-2 kind", async () => {
    const { anchors, scores, service, verifier, day1, root, proofOf } = await loadFixture(fixture);
    await anchors.connect(service).anchorRoot(root, 3n, SCORE_DAY_V1_KIND);
    await expect(scores.verify(anchors, day1[0], proofOf(0), root))
      .to.be.revertedWithCustomError(scores, "VraiScoresRootOfAnotherKind")
      .withArgs(root);
    await anchors.connect(verifier).anchor(root, SCORE_DAY_V2_KIND);
    await expect(scores.verify(anchors, day1[0], proofOf(0), root))
      .to.be.revertedWithCustomError(scores, "VraiScoresRootOfAnotherKind")
      .withArgs(root);
  });
});
