import { expect } from "chai";
import type { Hex } from "viem";
import { countRecords, deriveScores, scoreCounts, type ProofRecord } from "../method";
import { createChainStore, type ChainStore, type ChainEvent } from "../store/chain-store";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { createDerivedScores, type DerivedScores } from "./derived-scores";

const CHAIN = 1;
const REGISTRY = "0xregistry";
const didOf = (agentId: bigint) => `did:erc8004:${CHAIN}:0xidentity:${agentId}`;
const AT = 1_750_000_000;

for (const { name, create } of TEST_STORES) {
  describe(`SDK Derived Scores (METHOD part A) over the chain store on ${name}`, () => {
    let testDb: TestDb;
    let store: ChainStore;
    let derived: DerivedScores;
    let block = 0;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      store = createChainStore(testDb.db);
      derived = createDerivedScores({ store });
      await store.initCheckpoint({ chainId: CHAIN, registry: REGISTRY, blockNumber: 0, blockHash: "0x0" }, AT);
      await testDb.db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('ow_1', 'h', 0)");
      await testDb.db.query(
        "INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at) VALUES ('ag_1', 'ow_1', 1, 0, 'h', 0)",
      );
    });
    after(() => testDb.drop());

    type ProofEvent = ChainEvent & { type: "proof" };
    /** Indexes one block after the last with `events`, their positions set there (log indexes in the order given). */
    async function index(events: readonly ChainEvent[]): Promise<void> {
      block++;
      const header = { number: block, hash: `0xb${block}`, parentHash: `0xb${block - 1}`, timestamp: AT + block };
      const positioned = events.map((e, logIndex) => ({ ...e, blockNumber: block, logIndex }));
      await store.transaction((tx) =>
        tx.writeRange(
          { chainId: CHAIN, registry: REGISTRY, executorOf: didOf, events: positioned, from: block, headers: [header], to: header },
          AT,
        ),
      );
    }
    const proof = (agentId: bigint, n: number, overrides: { success?: boolean; traceRoot?: Hex; txHash?: Hex } = {}): ProofEvent => ({
      type: "proof",
      blockNumber: 0,
      logIndex: 0,
      txHash: overrides.txHash ?? `0xtx${agentId}-${n}`,
      agentId,
      submitter: "0xs",
      traceRoot: overrides.traceRoot ?? `0xroot${agentId}-${n}`,
      success: overrides.success ?? n % 3 !== 0,
      riskLevel: (["low", "medium", "high", "critical"] as const)[n % 4],
      policyViolations: n % 5 === 0 ? 1 : 0,
    });
    /** The A1 record of `event` once indexed at `blockNumber`/`logIndex`. */
    const recordOf = (event: ProofEvent, at: { blockNumber: number; logIndex: number; verified: boolean }): ProofRecord => ({
      txHash: event.txHash,
      executor: didOf(event.agentId),
      success: event.success,
      riskLevel: event.riskLevel,
      policyViolations: event.policyViolations,
      verified: at.verified,
      traceRoot: event.traceRoot,
      source: "onchain",
      blockNumber: at.blockNumber,
      logIndex: at.logIndex,
    });
    const summary = (executor: string, n: number): ProofRecord => ({
      txHash: `0xself${n}`,
      executor,
      success: true,
      riskLevel: "critical",
      policyViolations: 0,
      verified: false,
      traceRoot: `0xs${n}`,
      source: "self-reported",
    });
    const selfReport = (records: ProofRecord[]) => store.transaction((tx) => tx.insertSelfReported("ag_1", records, AT));
    const drain = async () => {
      while ((await derived.recomputeDirty(AT + 100)) > 0);
    };

    it("scores an executor's on-chain records with deriveScores (F1), verified when a verifier anchored their traceRoot (A6)", async () => {
      await index([proof(1n, 1), proof(1n, 2), proof(2n, 1)]);
      await index([
        {
          type: "anchor",
          blockNumber: 0,
          logIndex: 0,
          txHash: "0xa",
          digest: "0xroot1-2",
          kind: "0xk",
          isRoot: false,
          leafCount: null,
          role: "verifier",
        },
        proof(1n, 3),
      ]);
      await drain();
      const expected = deriveScores([
        recordOf(proof(1n, 1), { blockNumber: 1, logIndex: 0, verified: false }),
        recordOf(proof(1n, 2), { blockNumber: 1, logIndex: 1, verified: true }),
        recordOf(proof(1n, 3), { blockNumber: 2, logIndex: 1, verified: false }),
      ]);
      expect(await derived.current(didOf(1n))).to.deep.equal({ source: "onchain", result: expected[didOf(1n)], computedAt: AT + 100 });
      expect((await derived.current(didOf(1n))).result).to.include({ total: 3, verifiedCount: 1 });
      expect((await derived.current(didOf(2n))).result).to.include({ total: 1, verifiedCount: 0 });
    });

    it("uses self-reported records only while the executor has no on-chain record (A2.1)", async () => {
      const executor = didOf(3n);
      await selfReport([summary(executor, 1), summary(executor, 2)]);
      await store.transaction((tx) => derived.recompute(tx, [executor], AT + 1));
      expect(await derived.current(executor)).to.deep.include({ source: "self-reported", computedAt: AT + 1 });
      expect((await derived.current(executor)).result).to.include({ total: 2, verifiedCount: 0 });

      await index([proof(3n, 1, { success: false })]);
      await drain();
      expect(await derived.current(executor)).to.deep.include({ source: "onchain" });
      expect((await derived.current(executor)).result)
        .to.include({ total: 1, verifiedCount: 0 })
        .and.to.have.property("flags")
        .that.includes("LOW_SUCCESS_RATE");
      expect((await derived.listRecords(executor, { limit: 10, offset: 0 })).records.map((r) => r.source)).to.deep.equal(["onchain"]);
    });

    it("gives an executor without records the score of no records (A2.4), from source none, never computed", async () => {
      const none = { source: "none", result: scoreCounts(countRecords([], 0)), computedAt: null };
      expect(await derived.current(didOf(99n))).to.deep.equal(none);
      expect(none.result).to.include({ score: 0, total: 0 });
      expect(none.result.flags).to.deep.equal([]);
    });

    it("lists the records in A2 order, a page at a time, marking later records of a counted txHash duplicates (A2.3)", async () => {
      await index([proof(4n, 1, { txHash: "0xSAME" }), proof(4n, 2), proof(4n, 3, { txHash: "0xsame" })]);
      await index([proof(4n, 4)]);
      const all = await derived.listRecords(didOf(4n), { limit: 10, offset: 0 });
      expect(all.count).to.equal(4);
      expect(all.records.map((r) => [r.blockNumber, r.logIndex, r.duplicate])).to.deep.equal([
        [block - 1, 0, false],
        [block - 1, 1, false],
        [block - 1, 2, true],
        [block, 0, false],
      ]);
      const page = await derived.listRecords(didOf(4n), { limit: 2, offset: 1 });
      expect(page).to.deep.equal({ records: all.records.slice(1, 3), count: 4 });
    });

    it("recomputes dirty executors a batch at a time until none is left", async () => {
      await drain();
      await index([proof(5n, 1), proof(6n, 1), proof(7n, 1)]);
      expect(await derived.recomputeDirty(AT, 2)).to.equal(2);
      expect(await derived.recomputeDirty(AT, 2)).to.equal(1);
      expect(await derived.recomputeDirty(AT, 2)).to.equal(0);
      for (const id of [5n, 6n, 7n]) expect((await derived.current(didOf(id))).result).to.include({ total: 1 });
    });
  });
}
