import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { expect } from "chai";
import { decodeAbiParameters, encodeAbiParameters, getAddress, parseAbiParameters, type Hex } from "viem";
import {
  buildScoreTree,
  componentLeafValue,
  describeScoreLeafV2,
  NOT_ACTIVE_COMPONENT,
  proofElements,
  processScoreProof,
  SCORE_DAY_KIND,
  SCORE_DAY_V2_KIND,
  SCORE_LEAF_TYPES,
  SCORE_LEAF_V2_FIELDS,
  SCORE_LEAF_V2_TYPES,
  SCORE_LEAF_VERSIONS,
  scoreLeafFromJson,
  scoreLeafHash,
  scoreLeafToJson,
  scoreLeafV2,
  scoreLeafV2Fields,
  type AnyScoreLeafValues,
  type ScoreLeafV2Values,
  type ScoreLeafValues,
  type ScoreTree,
} from "./score-tree";
import { randomV2Values, randomValues, typesOf } from "../test-helpers/score-leaves";

/**
 * Checks `ours` against the package's tree of `values`: the root, every leaf hash (from the package's dump),
 * the proof of every `proofStride`-th value, and every proof of ours leading to the root.
 */
function expectStandardTree(ours: ScoreTree, values: AnyScoreLeafValues[], proofStride = 1): void {
  const oz = StandardMerkleTree.of(values, typesOf(values));
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
  for (const [version, make] of [
    [1, randomValues],
    [2, randomV2Values],
  ] as const) {
    it(
      `have the root, leaf hashes and proofs of StandardMerkleTree.of for 1 to 33 and 257 leaves (version ` +
        `${version}: 34 trees, every proof checked, 1-13 s)`,
      () => {
        for (const n of [...Array.from({ length: 33 }, (_, i) => i + 1), 257]) {
          const values: AnyScoreLeafValues[] = make(n);
          const ours = buildScoreTree(values);
          const oz = StandardMerkleTree.of(values, typesOf(values));
          expect(ours.root, `root of ${n}`).to.equal(oz.root);
          for (let i = 0; i < n; i++) {
            expect(`0x${ours.leaf(i).toString("hex")}`).to.equal(oz.leafHash(values[i]));
            expect(scoreLeafHash(values[i])).to.equal(oz.leafHash(values[i]));
            expect(proofElements(ours.proof(i))).to.deep.equal(oz.getProof(values[i]));
          }
        }
      },
    );
  }

  it("are StandardMerkleTree.of's tree for 1, 2, 3, 7 and 100 leaves of either version, and every proof leads to the root", () => {
    for (const n of [1, 2, 3, 7, 100]) {
      for (const values of [randomValues(n), randomV2Values(n)]) expectStandardTree(buildScoreTree(values), values);
    }
  });

  it("encode a version-2 leaf as abi.encode of its ABI types, value for value (viem decodes it back)", () => {
    for (const values of randomV2Values(30)) {
      const encoded = encodeAbiParameters(parseAbiParameters(SCORE_LEAF_V2_TYPES.join(",")), values);
      const leaf = StandardMerkleTree.of([values], [...SCORE_LEAF_V2_TYPES]).leafHash(values);
      expect(scoreLeafHash(values)).to.equal(leaf);
      expect(decodeAbiParameters(parseAbiParameters(SCORE_LEAF_V2_TYPES.join(",")), encoded)).to.deep.equal(values);
    }
  });

  it("refuse a version-2 value out of its type's range, naming it", () => {
    const [valid] = randomV2Values(1);
    const cases: Array<[number, unknown, RegExp]> = [
      [1, 2 ** 32, /day must be an uint32/],
      [4, 65_536, /total must be an uint16/],
      [5, -32_769, /identity must be an int16/],
      [7, 1.5, /integrity must be an int16/],
      [8, 256, /state must be an uint8/],
      [9, 2n ** 256n, /erc8004ChainId must be a uint256/],
      [11, -1n, /erc8004TokenId must be a uint256/],
      [10, "0x1234", /erc8004Registry must be an address/],
      [2, "0.2", /method must be 32 bytes/],
    ];
    for (const [i, value, message] of cases) {
      const values = [...valid] as unknown as unknown[];
      values[i] = value;
      expect(() => scoreLeafHash(values as ScoreLeafV2Values), `value ${i}`).to.throw(message);
    }
  });

  it(
    "make a stored daily score's version-2 leaf: day since 1970-01-01, method as bytes32, " +
      "the ERC-8004 subject's chain, registry and token, zeros without one",
    () => {
      const facts = {
        agentId: "agt_1",
        day: "2026-11-29",
        method: "0.2",
        sha256: "ab".repeat(32),
        total: 330,
        identity: 180,
        reliability: 50,
        integrity: 100,
        established: true,
      };
      const registry = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432";
      const bound = scoreLeafV2({ ...facts, erc8004Subject: `8453:${registry}:7` });
      expect(bound).to.deep.equal([
        "agt_1",
        Date.UTC(2026, 10, 29) / 86_400_000,
        `0x${Buffer.from("0.2").toString("hex").padEnd(64, "0")}`,
        `0x${"ab".repeat(32)}`,
        330,
        180,
        50,
        100,
        1,
        8453n,
        getAddress(registry),
        7n,
      ]);
      expect(scoreLeafV2({ ...facts, established: false, erc8004Subject: null }).slice(8)).to.deep.equal([
        0,
        0n,
        "0x0000000000000000000000000000000000000000",
        0n,
      ]);
      expect(describeScoreLeafV2(bound)).to.deep.equal({ day: "2026-11-29", method: "0.2", state: "established" });
      expect(scoreLeafV2Fields(bound)).to.deep.equal(Object.fromEntries(SCORE_LEAF_V2_FIELDS.map((name, i) => [name, bound[i]])));
      expect(() => scoreLeafV2({ ...facts, erc8004Subject: "github:alice" })).to.throw(/not an ERC-8004 subject/);
    },
  );

  it("encode a component that is not active as -1, an active one as its value", () => {
    expect(componentLeafValue({ active: false }))
      .to.equal(NOT_ACTIVE_COMPONENT)
      .and.to.equal(-1);
    expect(componentLeafValue({ value: 0 })).to.equal(0);
    expect(componentLeafValue({ value: 150 })).to.equal(150);
  });

  it("read a leaf's values back from their JSON, either version, and refuse a value of the wrong type", () => {
    for (const values of [...randomValues(5), ...randomV2Values(5)])
      expect(scoreLeafFromJson(JSON.parse(JSON.stringify(scoreLeafToJson(values))))).to.deep.equal(values);
    const json = scoreLeafToJson(randomV2Values(1)[0]);
    expect(() => scoreLeafFromJson([...json.slice(0, 9), 7, ...json.slice(10)])).to.throw(/leaf value 9: expected a string/);
    expect(() => scoreLeafFromJson([...json.slice(0, 4), "330", ...json.slice(5)])).to.throw(/leaf value 4: expected an integer/);
    expect(() => scoreLeafFromJson(json.slice(0, 5))).to.throw(/4 or 12 values/);
  });

  it("orders leaves whose hashes share their first 4 bytes by the whole hash", () => {
    // agt_6564 and agt_113787 (found by a birthday search) have leaf hashes starting 0x84bde626.
    const sha: Hex = `0x${"ab".repeat(32)}`;
    const twins: ScoreLeafValues[] = [
      ["agt_6564", "2026-11-29", "0.2", sha],
      ["agt_113787", "2026-11-29", "0.2", sha],
    ];
    expect(scoreLeafHash(twins[0]).slice(0, 10)).to.equal(scoreLeafHash(twins[1]).slice(0, 10));
    for (const values of [
      [...twins, ...randomValues(5)],
      [twins[1], ...randomValues(6), twins[0]],
    ]) {
      const ours = buildScoreTree(values);
      const oz = StandardMerkleTree.of(values, [...SCORE_LEAF_TYPES]);
      expect(ours.root).to.equal(oz.root);
      for (const [i, v] of values.entries()) expect(proofElements(ours.proof(i))).to.deep.equal(oz.getProof(v));
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

  it('use bytes32("vrai-score-day") as the anchor kind of version 1, bytes32("vrai-score-day-v2") of version 2', () => {
    expect(SCORE_DAY_KIND).to.equal(`0x${Buffer.from("vrai-score-day").toString("hex").padEnd(64, "0")}`);
    expect(SCORE_DAY_V2_KIND).to.equal(`0x${Buffer.from("vrai-score-day-v2").toString("hex").padEnd(64, "0")}`);
    expect(SCORE_LEAF_VERSIONS[1]).to.deep.include({ kind: SCORE_DAY_KIND, kindName: "vrai-score-day" });
    expect(SCORE_LEAF_VERSIONS[2]).to.deep.include({ kind: SCORE_DAY_V2_KIND, kindName: "vrai-score-day-v2" });
  });
});
