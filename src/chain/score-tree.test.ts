import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { expect } from "chai";
import crypto from "node:crypto";
import type { Hex } from "viem";
import {
  buildScoreTree, buildScoreTreeParallel, PARALLEL_MIN_LEAVES, proofElements, processScoreProof, SCORE_DAY_KIND, SCORE_LEAF_TYPES, scoreLeafHash, type ScoreLeafValues, type ScoreTree,
} from "./score-tree";

const randomValues = (n: number): ScoreLeafValues[] =>
  Array.from({ length: n }, (_, i) => [`agt_${crypto.randomBytes(4).toString("hex")}${i}`, "2026-11-29", i % 3 === 0 ? "0.1" : "0.2", `0x${crypto.randomBytes(32).toString("hex")}`]);

/**
 * Checks `ours` against the package's tree of `values`: the root, every leaf hash (from the package's dump),
 * the proof of every `proofStride`-th value, and every proof of ours leading to the root.
 */
function expectStandardTree(ours: ScoreTree, values: ScoreLeafValues[], proofStride = 1): void {
  const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_TYPES]);
  const dump = oz.dump();
  expect(ours.root, `root of ${values.length}`).to.equal(oz.root);
  expect(ours.leafCount).to.equal(values.length);
  for (let i = 0; i < values.length; i++) {
    const leaf: Hex = `0x${ours.leaf(i).toString("hex")}`;
    const proof = proofElements(ours.proof(i));
    expect(leaf, `leaf ${i} of ${values.length}`).to.equal(dump.tree[dump.values[i].treeIndex]);
    // By index: the package's lookup by value hashes the value again. Its getProof also checks the proof
    // it makes, about 1 ms a proof: a large tree's proofs are compared one in `proofStride`.
    if (i % proofStride === 0) expect(proof, `proof ${i} of ${values.length}`).to.deep.equal(oz.getProof(i));
    expect(processScoreProof(leaf, proof), `proof ${i} of ${values.length} leads to the root`).to.equal(ours.root);
  }
}

describe("score trees", () => {
  it("have the root, leaf hashes and proofs (one by one and in batches) of StandardMerkleTree.of for 1 to 33 and 257 leaves", () => {
    for (const n of [...Array.from({ length: 33 }, (_, i) => i + 1), 257]) {
      const values = randomValues(n);
      const ours = buildScoreTree(values);
      const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_TYPES]);
      expect(ours.root, `root of ${n}`).to.equal(oz.root);
      for (let i = 0; i < n; i++) {
        expect(`0x${ours.leaf(i).toString("hex")}`).to.equal(oz.leafHash(values[i]));
        expect(scoreLeafHash(values[i])).to.equal(oz.leafHash(values[i]));
        expect(proofElements(ours.proof(i))).to.deep.equal(oz.getProof(values[i]));
      }
      const from = Math.floor(n / 3);
      const batch = ours.proofBatch(from, n);
      for (let i = from; i < n; i++) {
        expect(batch.leaves.subarray(32 * (i - from), 32 * (i - from + 1)).equals(ours.leaf(i))).to.equal(true);
        expect(batch.proofs.subarray(batch.offsets[i - from], batch.offsets[i - from] + batch.lengths[i - from]).equals(ours.proof(i))).to.equal(true);
      }
    }
  });

  it("are StandardMerkleTree.of's tree for 1, 2, 3, 7 and 100 leaves, and every proof leads to the root", () => {
    for (const n of [1, 2, 3, 7, 100]) {
      const values = randomValues(n);
      expectStandardTree(buildScoreTree(values), values);
    }
  });

  it("are StandardMerkleTree.of's tree when their leaves are hashed on worker threads (one leaf above the threshold), and every proof leads to the root", async () => {
    const values = randomValues(PARALLEL_MIN_LEAVES + 1);
    expectStandardTree(await buildScoreTreeParallel(values, 2), values, 97);
  });

  it("orders leaves whose hashes share their first 4 bytes by the whole hash", () => {
    // agt_6564 and agt_113787 (found by a birthday search) have leaf hashes starting 0x84bde626.
    const sha: Hex = `0x${"ab".repeat(32)}`;
    const twins: ScoreLeafValues[] = [["agt_6564", "2026-11-29", "0.2", sha], ["agt_113787", "2026-11-29", "0.2", sha]];
    expect(scoreLeafHash(twins[0]).slice(0, 10)).to.equal(scoreLeafHash(twins[1]).slice(0, 10));
    for (const values of [[...twins, ...randomValues(5)], [twins[1], ...randomValues(6), twins[0]]]) {
      const ours = buildScoreTree(values);
      const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_TYPES]);
      expect(ours.root).to.equal(oz.root);
      values.forEach((v, i) => expect(proofElements(ours.proof(i))).to.deep.equal(oz.getProof(v)));
    }
  });

  it("are the same when their leaves are hashed on worker threads (25,000 leaves)", async () => {
    const values = randomValues(25_000);
    const parallel = await buildScoreTreeParallel(values, 2);
    const single = buildScoreTree(values);
    expect(parallel.root).to.equal(single.root);
    for (let i = 0; i < values.length; i += 499) {
      expect(parallel.leaf(i).equals(single.leaf(i))).to.equal(true);
      expect(parallel.proof(i).equals(single.proof(i))).to.equal(true);
    }
  });

  it("lead from each leaf to the root through its proof, and not with one element changed", () => {
    const values = randomValues(9);
    const tree = buildScoreTree(values);
    const proof = proofElements(tree.proof(4));
    expect(processScoreProof(scoreLeafHash(values[4]), proof)).to.equal(tree.root);
    const altered = [...proof];
    altered[1] = `0x${"11".repeat(32)}`;
    expect(processScoreProof(scoreLeafHash(values[4]), altered)).not.to.equal(tree.root);
  });

  it("use bytes32(\"vrai-score-day\") as the anchor kind", () => {
    expect(SCORE_DAY_KIND).to.equal(`0x${Buffer.from("vrai-score-day").toString("hex").padEnd(64, "0")}`);
  });
});
