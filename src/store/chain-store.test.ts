import { expect } from "chai";
import type { Hex } from "viem";
import { createMigratedTestDb, TEST_STORES, type TestDb } from "../test-helpers/db";
import { createChainStore, type ChainStore, type ChainEvent } from "./chain-store";

// Every table the chain store writes (migration 002): each test starts from none of their rows.
const CHAIN_STATE = [
  "indexer_checkpoints",
  "indexer_blocks",
  "chain_proof_records",
  "chain_anchors",
  "chain_settlements",
  "chain_score_adjustments",
  "chain_identity_transfers",
  "network_scores",
  "network_score_mismatches",
  "self_reported_records",
  "derived_dirty",
  "derived_scores",
];
const CHAIN = 31337;
const REGISTRY = "0x00000000000000000000000000000000000000aa";
const executorOf = (agentId: bigint) => `did:erc8004:${CHAIN}:0xidentity:${agentId}`;
const hash = (n: number): Hex => `0x${n.toString(16).padStart(64, "0")}`;
const at = (blockNumber: number, logIndex = 0) => ({ blockNumber, logIndex, txHash: hash(1_000 + blockNumber * 10 + logIndex) });

for (const { name, create } of TEST_STORES) {
  describe(`chain store on ${name}`, () => {
    let testDb: TestDb;
    let store: ChainStore;

    before(async () => {
      testDb = await createMigratedTestDb(create);
      store = createChainStore(testDb.db);
    });
    after(() => testDb.drop());
    beforeEach(async () => {
      await testDb.db.query(`TRUNCATE ${CHAIN_STATE.join(", ")}, owners CASCADE`);
      await store.initCheckpoint({ chainId: CHAIN, registry: REGISTRY, blockNumber: 0, blockHash: hash(0) }, 1);
    });

    /** Writes `events` as the one-block range after the checkpoint, at block `number`, in a transaction of its own. */
    function writeBlock(number: number, events: ChainEvent[]): Promise<string[]> {
      const block = { number, hash: hash(number), parentHash: hash(number - 1), timestamp: 1_700_000_000 + number };
      return store.transaction((tx) =>
        tx.writeRange({ chainId: CHAIN, registry: REGISTRY, executorOf, events, from: number, headers: [block], to: block }, 2),
      );
    }
    const settle = (
      blockNumber: number,
      logIndex: number,
      executorId: bigint,
      requesterId: bigint,
      verdict: "FULFILLED" | "VIOLATED",
    ): ChainEvent => ({
      ...at(blockNumber, logIndex),
      type: "settlement",
      orderId: hash(blockNumber * 10 + logIndex),
      executorId,
      requesterId,
      verdict,
    });

    const proof = (blockNumber: number, agentId: bigint, traceRoot: Hex): ChainEvent => ({
      ...at(blockNumber),
      type: "proof",
      agentId,
      submitter: "0xSubmitter",
      traceRoot,
      success: true,
      riskLevel: "high",
      policyViolations: 0,
    });
    const anchor = (blockNumber: number, digest: Hex, role: "anchorer" | "verifier"): ChainEvent => ({
      ...at(blockNumber, 1),
      type: "anchor",
      digest,
      kind: "0xKind",
      isRoot: false,
      leafCount: null,
      role,
    });

    it("reads a record as anchored only when an account with the verifier role anchored its traceRoot", async () => {
      await writeBlock(
        1,
        [proof(1, 7n, "0xROOT-A"), proof(1, 7n, "0xroot-b")].map((e, i) => ({ ...e, logIndex: i })),
      );
      await writeBlock(
        2,
        [anchor(2, "0xroot-a", "verifier"), anchor(2, "0xroot-b", "anchorer")].map((e, i) => ({ ...e, logIndex: i })),
      );
      const rows = await store.onchainRecords([executorOf(7n)]);
      expect(rows.map((r) => [r.traceRoot, r.blockNumber, r.logIndex, r.verifierAnchored])).to.deep.equal([
        ["0xroot-a", 1, 0, true],
        ["0xroot-b", 1, 1, false],
      ]);
    });

    it("marks the executors of a range's records, and of records a verifier anchor covers, dirty; takeDirty clears them", async () => {
      await writeBlock(1, [proof(1, 7n, "0xr7"), { ...proof(1, 8n, "0xr8"), logIndex: 1 }]);
      const taken = await store.transaction((tx) => tx.takeDirty(10));
      expect(taken).to.deep.equal([executorOf(7n), executorOf(8n)]);
      await writeBlock(2, [anchor(2, "0xr8", "verifier")]);
      expect(await store.transaction((tx) => tx.takeDirty(10))).to.deep.equal([executorOf(8n)]);
      expect(await store.transaction((tx) => tx.takeDirty(10))).to.deep.equal([]);
    });

    it("refuses a range that does not start right after the checkpoint", async () => {
      const error = await writeBlock(5, []).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.include({ code: "checkpoint_moved", retryable: true });
      expect(await store.getCheckpoint(CHAIN)).to.include({ blockNumber: 0 });
    });

    it("returns the executors a range's settlements name, and reads settlements back by either party in chain order", async () => {
      expect(
        await writeBlock(1, [settle(1, 0, 1n, 2n, "VIOLATED"), settle(1, 1, 1n, 2n, "FULFILLED"), settle(1, 2, 3n, 1n, "FULFILLED")]),
      ).to.deep.equal([executorOf(1n), executorOf(2n), executorOf(3n)]);
      expect(await writeBlock(2, [proof(2, 4n, "0xr4")])).to.deep.equal([]);
      const settlements = await store.transaction((tx) => tx.settlementsOf(CHAIN, [executorOf(2n), executorOf(3n)]));
      expect(settlements).to.deep.equal([
        { executor: executorOf(1n), requester: executorOf(2n), verdict: "VIOLATED", settledAt: 1_700_000_001 },
        { executor: executorOf(1n), requester: executorOf(2n), verdict: "FULFILLED", settledAt: 1_700_000_001 },
        { executor: executorOf(3n), requester: executorOf(1n), verdict: "FULFILLED", settledAt: 1_700_000_001 },
      ]);
      expect(await store.transaction((tx) => tx.settlementsOf(CHAIN + 1, [executorOf(2n)]))).to.deep.equal([]);
    });

    it("replaces the network score mirror of the executors named, leaving the others", async () => {
      const row = (n: bigint, score: number) => ({ executor: executorOf(n), score, settlements: 1, lastSettledAt: 9 });
      await store.transaction((tx) => tx.replaceNetworkScores(CHAIN, [executorOf(1n), executorOf(2n)], [row(1n, 30), row(2n, 15)]));
      await store.transaction((tx) => tx.replaceNetworkScores(CHAIN, [executorOf(1n), executorOf(3n)], [row(3n, 5)]));
      expect(await store.getNetworkScore(executorOf(1n))).to.equal(null);
      expect(await store.getNetworkScore(executorOf(2n))).to.deep.equal(row(2n, 15));
      expect(await store.getNetworkScore(executorOf(3n))).to.deep.equal(row(3n, 5));
    });

    it("rolls back to an ancestor: rows above it go, their executors are marked dirty, the parties of the settlements that went returned", async () => {
      await writeBlock(1, [proof(1, 7n, "0xr1")]);
      await store.transaction((tx) => tx.takeDirty(10));
      await writeBlock(2, [settle(2, 0, 7n, 8n, "FULFILLED"), { ...proof(2, 7n, "0xr2"), logIndex: 1 }]);
      await store.recordComparison(CHAIN, 2, [{ executor: executorOf(7n), mirrored: 30, onchain: 20 }], 3);
      await store.transaction((tx) => tx.takeDirty(10));

      expect(await store.transaction((tx) => tx.rollbackTo(CHAIN, REGISTRY, { number: 1, hash: hash(1) }, 4))).to.deep.equal([
        executorOf(7n),
        executorOf(8n),
      ]);
      expect(await store.getCheckpoint(CHAIN)).to.deep.equal({ chainId: CHAIN, registry: REGISTRY, blockNumber: 1, blockHash: hash(1) });
      expect((await store.onchainRecords([executorOf(7n)])).map((r) => r.traceRoot)).to.deep.equal(["0xr1"]);
      expect(await store.transaction((tx) => tx.settlementsOf(CHAIN, [executorOf(7n)]))).to.deep.equal([]);
      expect(await store.listMismatches()).to.deep.equal([]);
      expect(await store.recentBlocks(CHAIN, 10)).to.deep.equal([{ number: 1, hash: hash(1) }]);
      expect(await store.transaction((tx) => tx.takeDirty(10))).to.deep.equal([executorOf(7n)]);
    });

    it("keeps a mirror's disagreement with the chain until the next agreement", async () => {
      await store.recordComparison(
        CHAIN,
        3,
        [
          { executor: "did:x:1", mirrored: 30, onchain: 20 },
          { executor: "did:x:2", mirrored: 5, onchain: 5 },
        ],
        9,
      );
      const kept = { executor: "did:x:1", blockNumber: 3, mirrored: 30, onchain: 20, detectedAt: 9 };
      expect(await store.listMismatches()).to.deep.equal([kept]);
      expect(await store.getMismatch("did:x:1")).to.deep.equal(kept);
      expect(await store.getMismatch("did:x:2")).to.equal(null);
      await store.recordComparison(CHAIN, 4, [{ executor: "did:x:1", mirrored: 20, onchain: 20 }], 10);
      expect(await store.getMismatch("did:x:1")).to.equal(null);
    });

    it("stores a transfer under the executor of its own identity registry", async () => {
      const [deployed, other] = ["0x00000000000000000000000000000000000000cc", "0x00000000000000000000000000000000000000Dd"] as const;
      const transfer = (logIndex: number, registry: `0x${string}`): ChainEvent => ({
        ...at(1, logIndex),
        type: "transfer",
        registry,
        from: "0xFrom",
        to: "0xTo",
        agentId: 3n,
      });
      await writeBlock(1, [transfer(0, deployed), transfer(1, other)]);
      const { rows } = await testDb.db.query<{ executor: string }>("SELECT executor FROM chain_identity_transfers ORDER BY log_index");
      expect(rows.map((r) => r.executor)).to.deep.equal([
        `did:erc8004:${CHAIN}:${deployed}:3`,
        `did:erc8004:${CHAIN}:${other.toLowerCase()}:3`,
      ]);
    });

    it("lists the distinct heads of active proofs' subjects of a kind and prefix, each once (V6: the registries whose transfers are followed)", async () => {
      await testDb.db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('ow_1', 'h', 0)");
      const proofRow = async (id: string, kind: string, binding: string, removedAt: number | null) =>
        testDb.db.query(
          `INSERT INTO proofs (id, kind, owner_id, subject, binding, evidence, verified_at, last_checked_at, removed_at)
           VALUES ($1, $2, 'ow_1', $3, $4, '{}'::jsonb, 0, 0, $5)`,
          [id, kind, binding.slice(binding.indexOf(":") + 1), binding, removedAt],
        );
      await proofRow("p1", "erc8004", `erc8004:${CHAIN}:0x00000000000000000000000000000000000000bb:1`, null);
      await proofRow("p2", "erc8004", `erc8004:${CHAIN}:0x00000000000000000000000000000000000000bb:2`, null);
      await proofRow("p3", "erc8004", `erc8004:${CHAIN}:0x00000000000000000000000000000000000000aa:1`, null);
      await proofRow("p4", "erc8004", `erc8004:${CHAIN}:0x00000000000000000000000000000000000000cc:1`, 5);
      await proofRow("p5", "erc8004", `erc8004:${CHAIN + 1}:0x00000000000000000000000000000000000000dd:1`, null);
      await proofRow("p6", "domain", "domain:example.com", null);
      const heads = (chainId: number) => store.activeSubjectHeads("erc8004", `${chainId}:`, `${chainId}:`.length + 42);
      expect(await heads(CHAIN)).to.deep.equal([
        `${CHAIN}:0x00000000000000000000000000000000000000aa`,
        `${CHAIN}:0x00000000000000000000000000000000000000bb`,
      ]);
      expect(await heads(CHAIN + 2)).to.deep.equal([]);
      expect(await store.activeSubjectHeads("domain", "", 100)).to.deep.equal(["example.com"]);
    });

    it("writes nothing of a transaction that throws", async () => {
      const summary = {
        executor: "did:x:1",
        txHash: "0xa",
        success: true,
        riskLevel: "low" as const,
        policyViolations: 0,
        traceRoot: "0xr",
      };
      await testDb.db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('ow_1', 'h', 0)");
      await testDb.db.query(
        "INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at) VALUES ('ag_1', 'ow_1', 1, 0, 'h', 0)",
      );
      const failed = await store
        .transaction(async (tx) => {
          await tx.insertSelfReported("ag_1", [summary], 5);
          throw new Error("after the insert");
        })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(failed).to.be.an("error");
      expect(await store.selfReportedRecords(["did:x:1"])).to.deep.equal([]);
      await store.transaction((tx) => tx.insertSelfReported("ag_1", [summary, { ...summary, txHash: "0xb" }], 5));
      expect((await store.selfReportedRecords(["did:x:1"])).map((r) => r.txHash)).to.deep.equal(["0xa", "0xb"]);
    });
  });
}
