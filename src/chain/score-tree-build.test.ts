import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { expect } from "chai";
import type { Hex } from "viem";
import { buildScoreTree, processScoreProof, proofIndices, scoreLeafHash, scoreTreeLayout, type AnyScoreLeafValues } from "./score-tree";
import { buildChunkedScoreTree, createLeafHasher, PARALLEL_MIN_LEAVES } from "./score-tree-build";
import { randomV2Values, randomValues, typesOf } from "../test-helpers/score-leaves";

describe("a day's score tree built at scale", () => {
  it(
    "hash leaves on worker threads (a page one above the threshold, then a small one on the calling thread) " +
      "as scoreLeafHash does, for either version",
    async () => {
      const hasher = createLeafHasher(2);
      try {
        for (const values of [
          randomValues(PARALLEL_MIN_LEAVES + 1),
          randomValues(5),
          randomV2Values(PARALLEL_MIN_LEAVES + 1),
          randomV2Values(5),
        ]) {
          const leaves = await hasher.hash(values);
          expect(leaves.length).to.equal(32 * values.length);
          for (let i = 0; i < values.length; i += values.length > 100 ? 997 : 1) {
            expect(`0x${leaves.subarray(32 * i, 32 * i + 32).toString("hex")}`, `leaf ${i}`).to.equal(scoreLeafHash(values[i]));
          }
          const last = values.length - 1;
          expect(`0x${leaves.subarray(32 * last).toString("hex")}`).to.equal(scoreLeafHash(values[last]));
        }
      } finally {
        await hasher.close();
      }
    },
  );

  describe("built in chunks (bounded memory)", () => {
    /** Builds `values`' tree into a map of chunks, leaves handed over in ascending pages of `pageLeaves`. */
    async function buildInChunks(values: readonly AnyScoreLeafValues[], chunkNodes: number, pageLeaves: number) {
      const sorted = values.map((v) => Buffer.from(scoreLeafHash(v).slice(2), "hex")).sort(Buffer.compare);
      const chunks = new Map<number, { nodes: Buffer; minLeaf: Buffer | null }>();
      const reads: number[][] = [];
      async function* pages() {
        for (let i = 0; i < sorted.length; i += pageLeaves) yield Buffer.concat(sorted.slice(i, i + pageLeaves));
      }
      const built = await buildChunkedScoreTree(values.length, pages(), chunkNodes, {
        async write(chunk, nodes, minLeaf) {
          expect(chunks.has(chunk), `chunk ${chunk} written twice`).to.equal(false);
          chunks.set(chunk, { nodes: Buffer.from(nodes), minLeaf: minLeaf && Buffer.from(minLeaf) });
        },
        async read(wanted) {
          reads.push([...wanted]);
          return new Map(wanted.map((c) => [c, chunks.get(c)!.nodes]));
        },
      });
      return { built, chunks, reads };
    }

    /** The proof of `values[i]` as the repository derives it: fence, search of one chunk, sibling nodes. */
    function derivedProof(
      chunks: Map<number, { nodes: Buffer; minLeaf: Buffer | null }>,
      leafCount: number,
      chunkNodes: number,
      value: AnyScoreLeafValues,
    ): Hex[] {
      const layout = scoreTreeLayout(leafCount, chunkNodes);
      const leaf = Buffer.from(scoreLeafHash(value).slice(2), "hex");
      const fenced = [...chunks.entries()].filter(([, c]) => c.minLeaf && Buffer.compare(c.minLeaf, leaf) <= 0).map(([c]) => c);
      const chunk = Math.min(...fenced);
      // The repository searches the chunk in the database (migration 011); here, one node after the other.
      const { from, to } = layout.leavesIn(chunk)!;
      const nodes = chunks.get(chunk)!.nodes;
      const index = Array.from({ length: to - from + 1 }, (_, k) => from + k).find((j) =>
        nodes.subarray(32 * (j - chunk * chunkNodes), 32 * (j - chunk * chunkNodes) + 32).equals(leaf),
      );
      expect(index, `leaf of ${value[0]} in chunk ${chunk}`).to.not.equal(undefined);
      return proofIndices(index!).map((j) => {
        const { chunk: at, offset } = layout.locate(j);
        return `0x${chunks
          .get(at)!
          .nodes.subarray(32 * offset, 32 * offset + 32)
          .toString("hex")}` as Hex;
      });
    }

    it(
      "are StandardMerkleTree.of's tree for 1, 2, 3, 5, 1000 and 1025 leaves in chunks of 1 to 2048 nodes: " +
        "same root, every proof derived from the chunks leads to it (six trees, each built at up to five chunk sizes, every proof checked: 2-30 s)",
      async () => {
        for (const n of [1, 2, 3, 5, 1000, 1025]) {
          const values: AnyScoreLeafValues[] = n % 2 === 0 ? randomValues(n) : randomV2Values(n);
          const oz = StandardMerkleTree.of(values, typesOf(values));
          for (const chunkNodes of [1, 2, 7, 64, 2048]) {
            if (n > 1000 && chunkNodes < 7) continue;
            const { built, chunks } = await buildInChunks(values, chunkNodes, 3);
            expect(built.root, `root of ${n} in chunks of ${chunkNodes}`).to.equal(oz.root);
            const layout = scoreTreeLayout(n, chunkNodes);
            expect([...chunks.keys()].sort((a, b) => a - b)).to.deep.equal(
              Array.from({ length: layout.locate(2 * n - 2).chunk + 1 }, (_, c) => c),
            );
            expect(
              [...chunks.values()].reduce((sum, c) => sum + c.nodes.length, 0),
              "64 bytes a leaf, less one node",
            ).to.equal(32 * (2 * n - 1));
            // The package's own proofs (about 1 ms each) for one value in 97; every derived proof reaches the root.
            values.forEach((v, i) => {
              const proof = derivedProof(chunks, n, chunkNodes, v);
              if (i % 97 === 0 || n < 100) expect(proof, `proof ${i} of ${n}`).to.deep.equal(oz.getProof(i));
              expect(processScoreProof(scoreLeafHash(v), proof), `proof ${i} of ${n} leads to the root`).to.equal(oz.root);
            });
          }
        }
      },
    );

    it(
      "hold a few chunks and one page whatever the leaf count (chunks of 8 nodes, pages of 16 leaves, 100 " +
        "to 20,000 leaves) (trees of up to 20,000 leaves: 1-11 s)",
      async () => {
        const peaks: number[] = [];
        for (const n of [100, 2_000, 20_000]) {
          const values = randomValues(n);
          const { built, reads } = await buildInChunks(values, 8, 16);
          expect(built.root).to.equal(buildScoreTree(values).root);
          peaks.push(built.peakNodesHeld);
          // Chunk c ≥ 1 reads back its children's chunks 2c to 2c+2, never more.
          expect(Math.max(...reads.map((r) => r.length))).to.be.at.most(3);
        }
        // The chunk made, the one being written, three read back (8 nodes each), or one chunk and a page of 16.
        for (const peak of peaks) expect(peak).to.be.at.most(5 * 8);
        expect(peaks[2], "the same at 20,000 leaves as at 100").to.equal(peaks[0]);
      },
    );

    it("refuse leaves that do not match the count announced", async () => {
      const leaves = Buffer.alloc(32 * 3);
      const store = { write: async () => undefined, read: async () => new Map() };
      async function* once() {
        yield leaves;
      }
      await buildChunkedScoreTree(2, once(), 4, store).then(
        () => expect.fail("built"),
        (error: unknown) => expect((error as { code: string }).code).to.equal("tree_leaf_count"),
      );
      await buildChunkedScoreTree(4, once(), 4, store).then(
        () => expect.fail("built"),
        (error: unknown) => expect((error as { code: string }).code).to.equal("tree_leaf_count"),
      );
    });
  });
});
