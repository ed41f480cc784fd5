import { expect } from "chai";
import { createChainStore, type ChainStore, type ChainEvent } from "../store/chain-store";
import { createSqlStore } from "../store/sql-store";
import { createMigratedTestDb, createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { createChainScores, type ChainScores } from "./chain-scores";
import { createDerivedScores } from "./derived-scores";
import { createNetworkScores } from "./network-scores";
import type { AgentRow } from "./ports";

const AT = 1_750_000_000;
const LINKED = "did:erc8004:1:0x00000000000000000000000000000000000000ee:7";
const page = { limit: 100, offset: 0 };

describe("chain scores: the use-cases of the SDK Derived and Platform Network Scores", () => {
  let testDb: TestDb;
  let store: ChainStore;
  let scores: ChainScores;
  let linked: AgentRow;

  before(async () => {
    testDb = await createMigratedTestDb(createTestPgliteDb);
    store = createChainStore(testDb.db);
    const agents = createSqlStore(testDb.db).read;
    scores = createChainScores({ store, derivedScores: createDerivedScores({ store }), agents, clock: { now: () => AT } });
    await testDb.db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('ow_1', 'h', 0)");
    for (const id of ["ag_linked", "ag_unlinked"]) {
      await testDb.db.query(
        "INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at) VALUES ($1, 'ow_1', 1, 0, 'h', 0)",
        [id],
      );
    }
    // The agent's ERC-8004 identity, as an active erc8004 proof binds it (V6).
    await testDb.db.query(
      `INSERT INTO proofs (id, kind, owner_id, agent_id, subject, binding, evidence, verified_at, last_checked_at)
       VALUES ('prf_1', 'erc8004', 'ow_1', 'ag_linked', $1, $2, '{}', 0, 0)`,
      [LINKED.slice("did:erc8004:".length), LINKED.slice("did:".length)],
    );
    const found = await agents.getAgent("ag_linked");
    if (!found) throw new Error("the agent was not stored");
    linked = found;
  });
  after(() => testDb.drop());

  const summary = (n: number) => ({ txHash: `0xself${n}`, success: true, riskLevel: "high", policyViolations: 0, traceRoot: `0xroot${n}` });

  it("refuses an unknown agent (agent_not_found) and an agent with no ERC-8004 identity (agent_not_linked)", async () => {
    for (const read of [(id: string) => scores.agentDerivedScore(id, page), (id: string) => scores.agentNetworkScore(id)]) {
      expect(
        await read("ag_nobody").then(
          () => null,
          (e: unknown) => e,
        ),
      ).to.include({ code: "agent_not_found", status: 404 });
      expect(
        await read("ag_unlinked").then(
          () => null,
          (e: unknown) => e,
        ),
      ).to.include({
        code: "agent_not_linked",
        status: 404,
        message: "agent ag_unlinked has no ERC-8004 identity: prove one (kind erc8004) to link its on-chain records",
      });
    }
    expect(
      await scores.postSummaries({ ...linked, id: "ag_unlinked" }, [summary(1)]).then(
        () => null,
        (e: unknown) => e,
      ),
    ).to.include({ code: "agent_not_linked" });
  });

  it("gives an executor never scored the score of no records, in the fields and order the API answers with", async () => {
    const view = await scores.agentDerivedScore("ag_linked", page);
    expect(Object.keys(view)).to.deep.equal([
      "scoreType",
      "executor",
      "agentId",
      "source",
      "result",
      "computedAt",
      "recordCount",
      "records",
    ]);
    expect(view).to.deep.include({
      scoreType: "sdk-derived",
      executor: LINKED,
      agentId: "ag_linked",
      source: "none",
      computedAt: null,
      recordCount: 0,
      records: [],
    });
    expect(view.result).to.include({ score: 0, total: 0 });
    expect(Object.keys(await scores.executorDerivedScore(LINKED, page))).to.deep.equal([
      "scoreType",
      "executor",
      "source",
      "result",
      "computedAt",
      "recordCount",
      "records",
    ]);
  });

  it("checks every summary (A1) and stores none of a request with a bad one", async () => {
    const error = await scores.postSummaries(linked, [summary(1), { ...summary(2), riskLevel: "extreme" }]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).to.include({ code: "invalid_record" });
    expect(String(error)).to.match(/records\[1\]\.riskLevel: expected low\|medium\|high\|critical/);
    expect(await store.selfReportedRecords([LINKED])).to.deep.equal([]);
  });

  it("stores self-reported summaries and recomputes the derived score with them, deduplicated by txHash (A2.3)", async () => {
    const posted = await scores.postSummaries(linked, [summary(1), summary(2), summary(2)]);
    expect(Object.keys(posted)).to.deep.equal(["scoreType", "executor", "agentId", "accepted", "source", "result", "computedAt"]);
    expect(posted).to.deep.include({
      scoreType: "sdk-derived",
      executor: LINKED,
      agentId: "ag_linked",
      accepted: 3,
      source: "self-reported",
      computedAt: AT,
    });
    expect(posted.result).to.include({ total: 2, verifiedCount: 0 });
    const view = await scores.executorDerivedScore(LINKED, { limit: 2, offset: 1 });
    expect(view).to.deep.include({ source: "self-reported", recordCount: 3 });
    expect(view.records.map((r) => [r.txHash, r.source, r.verified, r.duplicate])).to.deep.equal([
      ["0xself2", "self-reported", false, false],
      ["0xself2", "self-reported", false, true],
    ]);
  });

  it("gives the mirrored network score in tenths and on 0-100, with its kept disagreement with the chain", async () => {
    const none = await scores.agentNetworkScore("ag_linked");
    expect(Object.keys(none)).to.deep.equal([
      "scoreType",
      "executor",
      "agentId",
      "tenths",
      "score",
      "settlements",
      "lastSettledAt",
      "mismatch",
    ]);
    expect(none).to.deep.include({
      scoreType: "platform-network",
      tenths: 0,
      score: 0,
      settlements: 0,
      lastSettledAt: null,
      mismatch: null,
    });

    await store.initCheckpoint({ chainId: 1, registry: "0xregistry", blockNumber: 0, blockHash: "0x0" }, AT);
    const header = { number: 1, hash: "0xb1", parentHash: "0x0", timestamp: AT - 60 };
    const settlement: ChainEvent = {
      type: "settlement",
      blockNumber: 1,
      logIndex: 0,
      txHash: "0xt",
      orderId: "0xo",
      executorId: 7n,
      requesterId: 8n,
      verdict: "FULFILLED",
    };
    const executorOf = (agentId: bigint) => `did:erc8004:1:0x00000000000000000000000000000000000000ee:${agentId}`;
    await store.transaction(async (tx) =>
      createNetworkScores().mirror(
        tx,
        1,
        await tx.writeRange(
          { chainId: 1, registry: "0xregistry", executorOf, events: [settlement], from: 1, headers: [header], to: header },
          AT,
        ),
      ),
    );
    await store.recordComparison(1, 1, [{ executor: LINKED, mirrored: 30, onchain: 25 }], AT);
    expect(await scores.executorNetworkScore(LINKED)).to.deep.equal({
      scoreType: "platform-network",
      executor: LINKED,
      tenths: 30,
      score: 3,
      settlements: 1,
      lastSettledAt: AT - 60,
      mismatch: { executor: LINKED, blockNumber: 1, mirrored: 30, onchain: 25, detectedAt: AT },
    });

    expect(await scores.indexerHealth()).to.deep.equal({
      status: "mismatch",
      checkpoints: [{ chainId: 1, registry: "0xregistry", blockNumber: 1, updatedAt: AT }],
      mismatches: [{ executor: LINKED, blockNumber: 1, mirrored: 30, onchain: 25, detectedAt: AT }],
    });
    await store.recordComparison(1, 1, [{ executor: LINKED, mirrored: 30, onchain: 30 }], AT);
    expect(await scores.indexerHealth())
      .to.include({ status: "ok" })
      .and.to.have.property("mismatches")
      .that.deep.equals([]);
  });

  it("gives the agent page's panels of a linked agent, and none of an unlinked one", async () => {
    expect(await scores.agentPanels("ag_unlinked")).to.equal(null);
    const panels = await scores.agentPanels("ag_linked");
    expect(panels).to.deep.include({ executor: LINKED, network: { tenths: 30, settlements: 1 } });
    expect(panels?.derived).to.deep.include({ source: "self-reported", computedAt: AT });
    expect(panels?.derived.result).to.include({ total: 2 });
  });
});
