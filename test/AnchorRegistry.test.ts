import { expect } from "./helpers/expect";
import { ethers } from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";

const ANCHORER = 0n;
const VERIFIER = 1n;
const KIND = ethers.encodeBytes32String("vrai.score-inputs");
const LEAF_TYPES = ["string", "string", "string", "bytes32"];

async function fixture() {
  const [admin, service, verifier, both, other] = await ethers.getSigners();
  const anchors = await ethers.deployContract("AnchorRegistry", [admin.address]);
  const anchorerRole = await anchors.ANCHORER_ROLE();
  const verifierRole = await anchors.VERIFIER_ROLE();
  await anchors.grantRole(anchorerRole, service.address);
  await anchors.grantRole(verifierRole, verifier.address);
  await anchors.grantRole(anchorerRole, both.address);
  await anchors.grantRole(verifierRole, both.address);

  // One day of scores: [agent, day, method, inputs sha256], as the service builds it.
  const values = ["0", "1", "2", "3", "4"].map((agent) => [
    `agent-${agent}`,
    "2025-11-29",
    "0.2",
    ethers.sha256(ethers.toUtf8Bytes(`inputs of agent ${agent}`)),
  ]);
  const tree = StandardMerkleTree.of(values, LEAF_TYPES);
  return { anchors, admin, service, verifier, both, other, anchorerRole, verifierRole, values, tree };
}

const digestOf = (label: string) => ethers.id(label);
/** IAnchorRegistry.kindTagOf: the first 4 bytes of keccak256(abi.encode(kind)). */
const tagOf = (kind: string) => ethers.dataSlice(ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["bytes32"], [kind])), 0, 4);
const DAY_V1 = ethers.encodeBytes32String("vrai-score-day");
const DAY_V2 = ethers.encodeBytes32String("vrai-score-day-v2");

describe("AnchorRegistry", () => {
  describe("roles", () => {
    it("defines the role ids as keccak256 of their names", async () => {
      const { anchors } = await loadFixture(fixture);
      expect(await anchors.ANCHORER_ROLE()).to.equal(ethers.id("ANCHORER_ROLE"));
      expect(await anchors.VERIFIER_ROLE()).to.equal(ethers.id("VERIFIER_ROLE"));
    });

    it("makes the constructor's admin the only DEFAULT_ADMIN_ROLE holder", async () => {
      const { anchors, admin, service } = await loadFixture(fixture);
      const adminRole = await anchors.DEFAULT_ADMIN_ROLE();
      expect(await anchors.hasRole(adminRole, admin.address)).to.equal(true);
      expect(await anchors.hasRole(adminRole, service.address)).to.equal(false);
    });

    it("lets only the admin grant and revoke the anchorer and verifier roles", async () => {
      const { anchors, other, service, anchorerRole, verifierRole } = await loadFixture(fixture);
      const adminRole = await anchors.DEFAULT_ADMIN_ROLE();
      for (const role of [anchorerRole, verifierRole]) {
        await expect(anchors.connect(other).grantRole(role, other.address))
          .to.be.revertedWithCustomError(anchors, "AccessControlUnauthorizedAccount")
          .withArgs(other.address, adminRole);
        await expect(anchors.connect(service).revokeRole(role, service.address))
          .to.be.revertedWithCustomError(anchors, "AccessControlUnauthorizedAccount")
          .withArgs(service.address, adminRole);
      }
    });

    it("stops an account anchoring once its role is revoked", async () => {
      const { anchors, admin, service, anchorerRole } = await loadFixture(fixture);
      await anchors.connect(admin).revokeRole(anchorerRole, service.address);
      await expect(anchors.connect(service).anchor(digestOf("a"), KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryUnauthorizedAnchorer")
        .withArgs(service.address);
    });

    it("stops an account anchoring once it renounces its role", async () => {
      const { anchors, verifier, verifierRole } = await loadFixture(fixture);
      await anchors.connect(verifier).renounceRole(verifierRole, verifier.address);
      await expect(anchors.connect(verifier).anchorRoot(digestOf("r"), 1n, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryUnauthorizedAnchorer")
        .withArgs(verifier.address);
    });

    it("records ANCHORER once the verifier role of an account holding both is revoked", async () => {
      const { anchors, admin, both, verifierRole } = await loadFixture(fixture);
      await anchors.connect(admin).revokeRole(verifierRole, both.address);
      await expect(anchors.connect(both).anchor(digestOf("a"), KIND))
        .to.emit(anchors, "Anchored")
        .withArgs(digestOf("a"), KIND, ANCHORER);
      expect((await anchors.anchorOf(digestOf("a"), ANCHORER)).submitter).to.equal(both.address);
      expect(await anchors.isVerified(digestOf("a"))).to.equal(false);
    });

    it("does not let the admin anchor without an anchoring role", async () => {
      const { anchors, admin } = await loadFixture(fixture);
      await expect(anchors.connect(admin).anchor(digestOf("a"), KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryUnauthorizedAnchorer")
        .withArgs(admin.address);
    });

    it("does not treat an unrelated role as an anchoring role", async () => {
      const { anchors, admin, other } = await loadFixture(fixture);
      await anchors.connect(admin).grantRole(ethers.id("PLATFORM_ROLE"), other.address);
      await expect(anchors.connect(other).anchor(digestOf("a"), KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryUnauthorizedAnchorer")
        .withArgs(other.address);
    });
  });

  describe("anchor", () => {
    it("stores the timestamp, the submitter and the anchorer role, and emits Anchored", async () => {
      const { anchors, service } = await loadFixture(fixture);
      const digest = digestOf("score inputs");
      const at = (await time.latest()) + 10;
      await time.setNextBlockTimestamp(at);
      await expect(anchors.connect(service).anchor(digest, KIND)).to.emit(anchors, "Anchored").withArgs(digest, KIND, ANCHORER);
      const stored = await anchors.anchorOf(digest, ANCHORER);
      expect(stored.anchoredAt).to.equal(at);
      expect(stored.submitter).to.equal(service.address);
      expect(stored.isRoot).to.equal(false);
      expect(stored.kindTag).to.equal(tagOf(KIND));
      expect((await anchors.anchorOf(digest, VERIFIER)).submitter).to.equal(ethers.ZeroAddress);
      expect(await anchors.isAnchored(digest)).to.equal(true);
      expect(await anchors.isVerified(digest)).to.equal(false);
    });

    it("records the verifier role, which makes the digest verified (A6)", async () => {
      const { anchors, verifier } = await loadFixture(fixture);
      const traceRoot = digestOf("trace root");
      await expect(anchors.connect(verifier).anchor(traceRoot, KIND)).to.emit(anchors, "Anchored").withArgs(traceRoot, KIND, VERIFIER);
      expect((await anchors.anchorOf(traceRoot, VERIFIER)).submitter).to.equal(verifier.address);
      expect((await anchors.anchorOf(traceRoot, ANCHORER)).submitter).to.equal(ethers.ZeroAddress);
      expect(await anchors.isAnchored(traceRoot)).to.equal(true);
      expect(await anchors.isVerified(traceRoot)).to.equal(true);
    });

    it("records VERIFIER for an account holding both roles", async () => {
      const { anchors, both } = await loadFixture(fixture);
      await expect(anchors.connect(both).anchor(digestOf("a"), KIND))
        .to.emit(anchors, "Anchored")
        .withArgs(digestOf("a"), KIND, VERIFIER);
      expect(await anchors.isVerified(digestOf("a"))).to.equal(true);
    });

    it("refuses an account holding neither role", async () => {
      const { anchors, other } = await loadFixture(fixture);
      await expect(anchors.connect(other).anchor(digestOf("a"), KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryUnauthorizedAnchorer")
        .withArgs(other.address);
    });

    it("refuses the zero digest", async () => {
      const { anchors, service } = await loadFixture(fixture);
      await expect(anchors.connect(service).anchor(ethers.ZeroHash, KIND)).to.be.revertedWithCustomError(
        anchors,
        "AnchorRegistryZeroDigest",
      );
    });

    it("refuses a second anchor of the same digest by the same role and keeps the first", async () => {
      const { anchors, service, verifier, both } = await loadFixture(fixture);
      const digest = digestOf("once");
      await anchors.connect(service).anchor(digest, KIND);
      await anchors.connect(verifier).anchor(digest, KIND);
      const [firstByAnchorer, firstByVerifier] = [await anchors.anchorOf(digest, ANCHORER), await anchors.anchorOf(digest, VERIFIER)];
      await expect(anchors.connect(service).anchor(digest, ethers.encodeBytes32String("other")))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryAlreadyAnchored")
        .withArgs(digest, ANCHORER);
      await expect(anchors.connect(service).anchorRoot(digest, 3n, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryAlreadyAnchored")
        .withArgs(digest, ANCHORER);
      await expect(anchors.connect(both).anchor(digest, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryAlreadyAnchored")
        .withArgs(digest, VERIFIER);
      await expect(anchors.connect(verifier).anchorRoot(digest, 3n, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryAlreadyAnchored")
        .withArgs(digest, VERIFIER);
      expect(await anchors.anchorOf(digest, ANCHORER)).to.deep.equal(firstByAnchorer);
      expect(await anchors.anchorOf(digest, VERIFIER)).to.deep.equal(firstByVerifier);
    });

    it("reads an unknown digest as all zeros, for both roles", async () => {
      const { anchors } = await loadFixture(fixture);
      for (const role of [ANCHORER, VERIFIER]) {
        const stored = await anchors.anchorOf(digestOf("unknown"), role);
        expect(stored.anchoredAt).to.equal(0n);
        expect(stored.submitter).to.equal(ethers.ZeroAddress);
        expect(stored.isRoot).to.equal(false);
        expect(stored.kindTag).to.equal("0x00000000");
      }
      expect(await anchors.isAnchored(digestOf("unknown"))).to.equal(false);
      expect(await anchors.isVerified(digestOf("unknown"))).to.equal(false);
    });

    it("refuses a role index outside AnchorRole when reading", async () => {
      const { anchors } = await loadFixture(fixture);
      await expect(anchors.anchorOf(digestOf("unknown"), 2n)).to.be.revertedWithoutReason();
    });
  });

  describe("a verifier's attestation beside the first anchor (METHOD A6)", () => {
    it("lets a verifier attest a digest an anchorer anchored first, keeping the anchorer's anchor", async () => {
      const { anchors, service, verifier } = await loadFixture(fixture);
      const traceRoot = digestOf("raced trace root");
      const anchoredAt = (await time.latest()) + 10;
      await time.setNextBlockTimestamp(anchoredAt);
      await anchors.connect(service).anchor(traceRoot, KIND);
      expect(await anchors.isVerified(traceRoot)).to.equal(false);
      const attestedAt = anchoredAt + 60;
      await time.setNextBlockTimestamp(attestedAt);
      await expect(anchors.connect(verifier).anchor(traceRoot, KIND)).to.emit(anchors, "Anchored").withArgs(traceRoot, KIND, VERIFIER);
      expect(await anchors.isVerified(traceRoot)).to.equal(true);
      const first = await anchors.anchorOf(traceRoot, ANCHORER);
      expect([first.anchoredAt, first.submitter, first.isRoot]).to.deep.equal([BigInt(anchoredAt), service.address, false]);
      const attestation = await anchors.anchorOf(traceRoot, VERIFIER);
      expect([attestation.anchoredAt, attestation.submitter, attestation.isRoot]).to.deep.equal([
        BigInt(attestedAt),
        verifier.address,
        false,
      ]);
    });

    it("lets an anchorer anchor a digest a verifier attested first, which stays verified", async () => {
      const { anchors, service, verifier } = await loadFixture(fixture);
      const traceRoot = digestOf("attested trace root");
      await anchors.connect(verifier).anchor(traceRoot, KIND);
      const attestation = await anchors.anchorOf(traceRoot, VERIFIER);
      await expect(anchors.connect(service).anchor(traceRoot, KIND)).to.emit(anchors, "Anchored").withArgs(traceRoot, KIND, ANCHORER);
      expect(await anchors.isVerified(traceRoot)).to.equal(true);
      expect(await anchors.anchorOf(traceRoot, VERIFIER)).to.deep.equal(attestation);
      expect((await anchors.anchorOf(traceRoot, ANCHORER)).submitter).to.equal(service.address);
    });

    it("lets a verifier attest a digest an anchorer anchored first as a batch root", async () => {
      const { anchors, service, verifier, tree } = await loadFixture(fixture);
      await anchors.connect(service).anchorRoot(tree.root, 5n, KIND);
      await expect(anchors.connect(verifier).anchor(tree.root, KIND)).to.emit(anchors, "Anchored").withArgs(tree.root, KIND, VERIFIER);
      expect(await anchors.isVerified(tree.root)).to.equal(true);
      expect((await anchors.anchorOf(tree.root, ANCHORER)).isRoot).to.equal(true);
      expect((await anchors.anchorOf(tree.root, VERIFIER)).isRoot).to.equal(false);
    });

    it("keeps a verifier's attestation once its verifier role is revoked", async () => {
      const { anchors, admin, verifier, verifierRole } = await loadFixture(fixture);
      const traceRoot = digestOf("trace root");
      await anchors.connect(verifier).anchor(traceRoot, KIND);
      await anchors.connect(admin).revokeRole(verifierRole, verifier.address);
      expect(await anchors.isVerified(traceRoot)).to.equal(true);
    });
  });

  describe("anchorRoot", () => {
    it("stores the root as a root and emits RootAnchored with the leaf count", async () => {
      const { anchors, service, tree } = await loadFixture(fixture);
      const at = (await time.latest()) + 5;
      await time.setNextBlockTimestamp(at);
      await expect(anchors.connect(service).anchorRoot(tree.root, 5n, KIND))
        .to.emit(anchors, "RootAnchored")
        .withArgs(tree.root, KIND, 5n, ANCHORER);
      const stored = await anchors.anchorOf(tree.root, ANCHORER);
      expect(stored.anchoredAt).to.equal(at);
      expect(stored.submitter).to.equal(service.address);
      expect(stored.isRoot).to.equal(true);
      expect(stored.kindTag).to.equal(tagOf(KIND));
      expect(await anchors.isAnchored(tree.root)).to.equal(true);
    });

    it("records the verifier role for a root anchored by a verifier", async () => {
      const { anchors, verifier, tree } = await loadFixture(fixture);
      await expect(anchors.connect(verifier).anchorRoot(tree.root, 5n, KIND))
        .to.emit(anchors, "RootAnchored")
        .withArgs(tree.root, KIND, 5n, VERIFIER);
      expect(await anchors.isVerified(tree.root)).to.equal(true);
      expect((await anchors.anchorOf(tree.root, VERIFIER)).isRoot).to.equal(true);
    });

    it("accepts the largest leaf count", async () => {
      const { anchors, service } = await loadFixture(fixture);
      const max = 2n ** 64n - 1n;
      await expect(anchors.connect(service).anchorRoot(digestOf("big"), max, KIND))
        .to.emit(anchors, "RootAnchored")
        .withArgs(digestOf("big"), KIND, max, ANCHORER);
    });

    it("refuses an empty batch", async () => {
      const { anchors, service, tree } = await loadFixture(fixture);
      await expect(anchors.connect(service).anchorRoot(tree.root, 0n, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryEmptyBatch")
        .withArgs(tree.root);
    });

    it("refuses the zero root", async () => {
      const { anchors, service } = await loadFixture(fixture);
      await expect(anchors.connect(service).anchorRoot(ethers.ZeroHash, 1n, KIND)).to.be.revertedWithCustomError(
        anchors,
        "AnchorRegistryZeroDigest",
      );
    });

    it("refuses an account holding neither role, before looking at the arguments", async () => {
      const { anchors, other, tree } = await loadFixture(fixture);
      await expect(anchors.connect(other).anchorRoot(tree.root, 0n, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryUnauthorizedAnchorer")
        .withArgs(other.address);
    });

    it("refuses to anchor the same root twice by the same role, by either function", async () => {
      const { anchors, service, tree } = await loadFixture(fixture);
      await anchors.connect(service).anchorRoot(tree.root, 5n, KIND);
      await expect(anchors.connect(service).anchorRoot(tree.root, 6n, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryAlreadyAnchored")
        .withArgs(tree.root, ANCHORER);
      await expect(anchors.connect(service).anchor(tree.root, KIND))
        .to.be.revertedWithCustomError(anchors, "AnchorRegistryAlreadyAnchored")
        .withArgs(tree.root, ANCHORER);
      expect((await anchors.anchorOf(tree.root, ANCHORER)).isRoot).to.equal(true);
    });

    it("anchors a root as a root for the service when a verifier anchored it first as a single digest", async () => {
      const { anchors, service, verifier, tree, values } = await loadFixture(fixture);
      await anchors.connect(verifier).anchor(tree.root, KIND);
      expect(await anchors.verify(tree.root, tree.leafHash(values[0]), tree.getProof(0))).to.equal(false);
      await expect(anchors.connect(service).anchorRoot(tree.root, 5n, KIND))
        .to.emit(anchors, "RootAnchored")
        .withArgs(tree.root, KIND, 5n, ANCHORER);
      expect(await anchors.verify(tree.root, tree.leafHash(values[0]), tree.getProof(0))).to.equal(true);
    });
  });

  describe("kind tags and rootAnchoredAt", () => {
    it("tags each kind with the first 4 bytes of keccak256(abi.encode(kind)), the two day kinds apart", async () => {
      const { anchors } = await loadFixture(fixture);
      for (const kind of [KIND, DAY_V1, DAY_V2, ethers.ZeroHash]) expect(await anchors.kindTagOf(kind)).to.equal(tagOf(kind));
      expect(tagOf(DAY_V1)).to.not.equal(tagOf(DAY_V2));
    });

    it("answers a root's anchor time for the kind it was anchored with, and 0 for any other kind", async () => {
      const { anchors, service, tree } = await loadFixture(fixture);
      const at = (await time.latest()) + 7;
      await time.setNextBlockTimestamp(at);
      await anchors.connect(service).anchorRoot(tree.root, 5n, DAY_V2);
      expect(await anchors.rootAnchoredAt(tree.root, DAY_V2)).to.equal(at);
      expect(await anchors.rootAnchoredAt(tree.root, DAY_V1)).to.equal(0n);
      expect(await anchors.rootAnchoredAt(digestOf("not anchored"), DAY_V2)).to.equal(0n);
    });

    it("answers the verifier's anchor when the root is the verifier's only, and the anchorer's when both anchored it with the kind", async () => {
      const { anchors, service, verifier, tree } = await loadFixture(fixture);
      const first = (await time.latest()) + 3;
      await time.setNextBlockTimestamp(first);
      await anchors.connect(verifier).anchorRoot(tree.root, 5n, DAY_V2);
      expect(await anchors.rootAnchoredAt(tree.root, DAY_V2)).to.equal(first);
      await time.setNextBlockTimestamp(first + 100);
      await anchors.connect(service).anchorRoot(tree.root, 5n, DAY_V2);
      expect(await anchors.rootAnchoredAt(tree.root, DAY_V2)).to.equal(first + 100);
    });

    it("answers the verifier's anchor when the anchorer's is of another kind", async () => {
      const { anchors, service, verifier, tree } = await loadFixture(fixture);
      await anchors.connect(service).anchorRoot(tree.root, 5n, DAY_V1);
      const at = (await time.latest()) + 4;
      await time.setNextBlockTimestamp(at);
      await anchors.connect(verifier).anchorRoot(tree.root, 5n, DAY_V2);
      expect(await anchors.rootAnchoredAt(tree.root, DAY_V2)).to.equal(at);
    });

    it("answers 0 for a digest anchored with the kind by anchor(), not as a root", async () => {
      const { anchors, service, verifier, tree } = await loadFixture(fixture);
      await anchors.connect(service).anchor(tree.root, DAY_V2);
      await anchors.connect(verifier).anchor(tree.root, DAY_V2);
      expect(await anchors.rootAnchoredAt(tree.root, DAY_V2)).to.equal(0n);
    });
  });

  describe("verify", () => {
    it("accepts every proof of a StandardMerkleTree whose root is anchored", async () => {
      const { anchors, service, tree, values } = await loadFixture(fixture);
      await anchors.connect(service).anchorRoot(tree.root, BigInt(values.length), KIND);
      for (const [index, leaf] of tree.entries()) {
        expect(await anchors.verify(tree.root, tree.leafHash(leaf), tree.getProof(index))).to.equal(true);
      }
    });

    it("uses the StandardMerkleTree leaf hash keccak256(bytes.concat(keccak256(abi.encode(values))))", async () => {
      const { tree, values } = await loadFixture(fixture);
      const coder = ethers.AbiCoder.defaultAbiCoder();
      const expected = ethers.keccak256(ethers.keccak256(coder.encode(LEAF_TYPES, values[0])));
      expect(tree.leafHash(values[0])).to.equal(expected);
    });

    it("accepts a one-leaf batch with an empty proof", async () => {
      const { anchors, service, values } = await loadFixture(fixture);
      const single = StandardMerkleTree.of([values[0]], LEAF_TYPES);
      await anchors.connect(service).anchorRoot(single.root, 1n, KIND);
      expect(single.getProof(0)).to.deep.equal([]);
      expect(await anchors.verify(single.root, single.leafHash(values[0]), [])).to.equal(true);
    });

    it("rejects a tampered leaf", async () => {
      const { anchors, service, tree, values } = await loadFixture(fixture);
      await anchors.connect(service).anchorRoot(tree.root, 5n, KIND);
      const tampered = [values[1][0], "2025-11-30", values[1][2], values[1][3]];
      expect(await anchors.verify(tree.root, tree.leafHash(tampered), tree.getProof(1))).to.equal(false);
      // The inner hash alone (one keccak) is not a leaf.
      const inner = ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(LEAF_TYPES, values[1]));
      expect(await anchors.verify(tree.root, inner, tree.getProof(1))).to.equal(false);
    });

    it("rejects a tampered proof", async () => {
      const { anchors, service, tree, values } = await loadFixture(fixture);
      await anchors.connect(service).anchorRoot(tree.root, 5n, KIND);
      const proof = tree.getProof(2);
      const flipped = [...proof];
      flipped[0] = ethers.toBeHex(BigInt(flipped[0]) ^ 1n, 32);
      expect(await anchors.verify(tree.root, tree.leafHash(values[2]), flipped)).to.equal(false);
      expect(await anchors.verify(tree.root, tree.leafHash(values[2]), proof.slice(1))).to.equal(false);
      expect(await anchors.verify(tree.root, tree.leafHash(values[2]), tree.getProof(3))).to.equal(false);
    });

    it("rejects a valid proof under a root that is not anchored", async () => {
      const { anchors, tree, values } = await loadFixture(fixture);
      expect(await anchors.verify(tree.root, tree.leafHash(values[0]), tree.getProof(0))).to.equal(false);
    });

    it("rejects a valid proof under another anchored root", async () => {
      const { anchors, service, tree, values } = await loadFixture(fixture);
      const otherTree = StandardMerkleTree.of([values[0], values[1]], LEAF_TYPES);
      await anchors.connect(service).anchorRoot(otherTree.root, 2n, KIND);
      expect(await anchors.verify(otherTree.root, tree.leafHash(values[3]), tree.getProof(3))).to.equal(false);
    });

    it("rejects a root anchored by anchor() rather than anchorRoot(), by either role", async () => {
      const { anchors, service, verifier, tree, values } = await loadFixture(fixture);
      await anchors.connect(service).anchor(tree.root, KIND);
      await anchors.connect(verifier).anchor(tree.root, KIND);
      expect(await anchors.verify(tree.root, tree.leafHash(values[0]), tree.getProof(0))).to.equal(false);
    });

    it("accepts proofs under a root anchored by a verifier only", async () => {
      const { anchors, verifier, tree, values } = await loadFixture(fixture);
      await anchors.connect(verifier).anchorRoot(tree.root, 5n, KIND);
      expect(await anchors.verify(tree.root, tree.leafHash(values[4]), tree.getProof(4))).to.equal(true);
    });
  });
});
