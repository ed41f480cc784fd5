import { expect } from "chai";
import type { Hex } from "viem";
import type { Verdict } from "../method";
import { createChainStore, type ChainEvent, type ChainStore } from "../store/chain-store";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { createNetworkScores, type NetworkScores } from "./network-scores";

const CHAIN = 31337;
const REGISTRY = "0x00000000000000000000000000000000000000aa";
const executorOf = (agentId: bigint) => `did:erc8004:${CHAIN}:0xidentity:${agentId}`;
const hash = (n: number): Hex => `0x${n.toString(16).padStart(64, "0")}`;
const timestampOf = (blockNumber: number) => 1_700_000_000 + blockNumber;

for (const { name, create } of TEST_STORES) {
  describe(`Platform Network Score mirror (METHOD part N) over the chain store on ${name}`, () => {
    let testDb: TestDb;
    let store: ChainStore;
    let networkScores: NetworkScores;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      store = createChainStore(testDb.db);
      networkScores = createNetworkScores();
    });
    after(() => testDb.drop());
    beforeEach(async () => {
      await testDb.db.query("TRUNCATE indexer_checkpoints, indexer_blocks, chain_settlements, network_scores");
      await store.initCheckpoint({ chainId: CHAIN, registry: REGISTRY, blockNumber: 0, blockHash: hash(0) }, 1);
    });

    /** Writes `events` as the one-block range at block `number` with the mirror of the executors it settled, as the indexer does. */
    function writeBlock(number: number, events: ChainEvent[]): Promise<string[]> {
      const block = { number, hash: hash(number), parentHash: hash(number - 1), timestamp: timestampOf(number) };
      return store.transaction(async (tx) => {
        const settled = await tx.writeRange(
          { chainId: CHAIN, registry: REGISTRY, executorOf, events, from: number, headers: [block], to: block },
          2,
        );
        await networkScores.mirror(tx, CHAIN, settled);
        return settled;
      });
    }
    /** Rolls back to block `number` and re-mirrors the executors of the settlements that went, as the indexer does. */
    const rollBackTo = (number: number) =>
      store.transaction(async (tx) =>
        networkScores.mirror(tx, CHAIN, await tx.rollbackTo(CHAIN, REGISTRY, { number, hash: hash(number) }, 3)),
      );
    const settle = (blockNumber: number, logIndex: number, executorId: bigint, requesterId: bigint, verdict: Verdict): ChainEvent => ({
      blockNumber,
      logIndex,
      txHash: hash(1_000 + blockNumber * 10 + logIndex),
      type: "settlement",
      orderId: hash(blockNumber * 10 + logIndex),
      executorId,
      requesterId,
      verdict,
    });

    it("mirrors the network score from the settlements in chain order, clamped at 0 after each (part N)", async () => {
      expect(await writeBlock(1, [settle(1, 0, 1n, 2n, "VIOLATED"), settle(1, 1, 1n, 2n, "FULFILLED")])).to.deep.equal([
        executorOf(1n),
        executorOf(2n),
      ]);
      // Executor: max(0, 0 - 50) = 0, then +30; requester: max(0, 0 - 10) = 0, then +15.
      expect(await store.getNetworkScore(executorOf(1n))).to.deep.equal({
        executor: executorOf(1n),
        score: 30,
        settlements: 2,
        lastSettledAt: 1_700_000_001,
      });
      expect(await store.getNetworkScore(executorOf(2n))).to.include({ score: 15, settlements: 2 });
    });

    it("replays a settled executor's whole history, each side of each order as it was (LEGACY +20 / +10, PARTIAL +5 / +5)", async () => {
      await writeBlock(1, [settle(1, 0, 3n, 4n, "LEGACY")]);
      await writeBlock(2, [settle(2, 0, 5n, 3n, "PARTIAL"), settle(2, 1, 3n, 6n, "FULFILLED")]);
      expect(await store.getNetworkScore(executorOf(3n))).to.deep.equal({
        executor: executorOf(3n),
        score: 20 + 5 + 30,
        settlements: 3,
        lastSettledAt: timestampOf(2),
      });
      expect(await store.getNetworkScore(executorOf(4n))).to.deep.equal({
        executor: executorOf(4n),
        score: 10,
        settlements: 1,
        lastSettledAt: timestampOf(1),
      });
      expect(await store.getNetworkScore(executorOf(5n))).to.include({ score: 5, settlements: 1 });
      expect(await store.getNetworkScore(executorOf(6n))).to.include({ score: 15, settlements: 1 });
    });

    it("re-mirrors after a rollback: an executor keeps the settlements left, one left with none has no score", async () => {
      await writeBlock(1, [settle(1, 0, 7n, 8n, "FULFILLED")]);
      await writeBlock(2, [settle(2, 0, 7n, 9n, "VIOLATED")]);
      expect(await store.getNetworkScore(executorOf(7n))).to.include({ score: 0, settlements: 2 });

      await rollBackTo(1);
      expect(await store.getNetworkScore(executorOf(7n))).to.deep.equal({
        executor: executorOf(7n),
        score: 30,
        settlements: 1,
        lastSettledAt: timestampOf(1),
      });
      expect(await store.getNetworkScore(executorOf(8n))).to.include({ score: 15, settlements: 1 });
      expect(await store.getNetworkScore(executorOf(9n))).to.equal(null);
    });

    it("writes neither the range nor its mirror when the transaction fails", async () => {
      await writeBlock(1, [settle(1, 0, 10n, 11n, "FULFILLED")]);
      const block = { number: 2, hash: hash(2), parentHash: hash(1), timestamp: timestampOf(2) };
      const failed = await store
        .transaction(async (tx) => {
          await networkScores.mirror(
            tx,
            CHAIN,
            await tx.writeRange(
              {
                chainId: CHAIN,
                registry: REGISTRY,
                executorOf,
                events: [settle(2, 0, 10n, 11n, "VIOLATED")],
                from: 2,
                headers: [block],
                to: block,
              },
              2,
            ),
          );
          throw new Error("after the mirror");
        })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(failed).to.be.an("error");
      expect(await store.getCheckpoint(CHAIN)).to.include({ blockNumber: 1 });
      expect(await store.getNetworkScore(executorOf(10n))).to.include({ score: 30, settlements: 1 });
    });
  });
}
