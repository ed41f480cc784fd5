import { expect } from "chai";
import pino from "pino";
import { keccak256, parseEventLogs, type Address, type Hex } from "viem";
import { startApiServer, type ApiServer } from "../app/server";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import type { AnchorWriter } from "../chain/anchor-writer";
import { createTxSigner } from "../chain/signer";
import {
  processScoreProof,
  SCORE_DAY_KIND,
  SCORE_DAY_V2_KIND,
  scoreLeafFromJson,
  scoreLeafHash,
  scoreLeafToJson,
  scoreLeafV2,
} from "../chain/score-tree";
import { createAnchorRepository } from "../store/anchors";
import { startTestChain, type TestChain } from "../test-helpers/chain";
import { createTestPgDb, type TestDb } from "../test-helpers/db";
import { capturedLogger } from "../test-helpers/logs";
import { createAnchoring, type AnchorOutcome } from "./anchoring";
import { createManualClock } from "./clock";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const DAY2 = "2026-11-03";
const OPERATOR = "op-token-anchoring-test-0000";
const silent = pino({ level: "silent" });
/** `IAnchorRegistry.AnchorRole.ANCHORER`: the writer's account holds the anchorer role only. */
const ANCHORER = 0;

describe("daily anchoring (real PostgreSQL, in-process Hardhat chain)", () => {
  let testDb: TestDb;
  let chain: TestChain;
  let registry: Address;
  let writer: AnchorWriter;
  let server: ApiServer;
  let clock: ReturnType<typeof createManualClock>;
  let agentIds: string[];

  before(async () => {
    [testDb, chain] = await Promise.all([createTestPgDb(), startTestChain()]);
    registry = await chain.deployAnchorRegistry(1);
    const signer = createTxSigner({ walletClient: chain.walletClients[1], publicClient: chain.publicClient });
    writer = { publicClient: chain.publicClient, signer, contract: registry };
    clock = createManualClock(T0);
    server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR, clock, logger: silent, anchorWriter: writer });
    const post = (path: string, token: string | undefined, body: unknown) =>
      fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<any>);
    const owner = await post("/v1/owners", undefined, {});
    agentIds = [];
    for (let a = 0; a < 5; a++) agentIds.push((await post("/v1/agents", owner.token, {})).agentId);
    await server.scheduler.catchUpDaily();
    clock.set(T0 + 86400);
    await server.scheduler.catchUpDaily();
  });
  after(async () => {
    await server?.close();
    await Promise.all([testDb?.drop(), chain?.close()]);
  });

  const dailyScoreIds = async () =>
    (await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY id", [DAY2])).rows.map(
      (r) => Number(r.id),
    );

  it("anchors the day's root in one anchorRoot transaction covering every daily score, and stores it mined", async () => {
    const { rows } = await testDb.db.query<{ root: Hex; leaf_count: number; status: string; tx_hash: Hex; block_number: number }>(
      "SELECT * FROM score_anchors WHERE day = $1",
      [DAY2],
    );
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ leaf_count: 5, status: "mined" });
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: rows[0].tx_hash });
    expect(receipt.status).to.equal("success");
    expect(Number(receipt.blockNumber)).to.equal(Number(rows[0].block_number));
    const events = parseEventLogs({ abi: anchorRegistryAbi, logs: receipt.logs, eventName: "RootAnchored" });
    expect(events).to.have.length(1);
    expect(events[0].args).to.deep.include({ root: rows[0].root, kind: SCORE_DAY_V2_KIND, leafCount: 5n });
    const anchor = await chain.publicClient.readContract({
      address: registry,
      abi: anchorRegistryAbi,
      functionName: "anchorOf",
      args: [rows[0].root, ANCHORER],
    });
    expect(anchor.submitter).to.equal(chain.accounts[1].address);
    expect(anchor.isRoot).to.equal(true);
    // The block's time is recorded: what a contract compares (AnchorRegistry.rootAnchoredAt).
    const block = await chain.publicClient.getBlock({ blockNumber: receipt.blockNumber });
    expect((await createAnchorRepository(testDb.db).getDay(DAY2))?.anchoredAt).to.equal(Number(block.timestamp));
    expect(
      await chain.publicClient.readContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "rootAnchoredAt",
        args: [rows[0].root, SCORE_DAY_V2_KIND],
      }),
    ).to.equal(Number(block.timestamp));
  });

  it("serves each daily score's leaf, proof, root and anchor at GET /v1/scores/:id/proof, accepted by AnchorRegistry.verify", async () => {
    const ids = await dailyScoreIds();
    expect(ids).to.have.length(5);
    for (const id of ids) {
      const response = await fetch(`${server.url}/v1/scores/${id}/proof`);
      expect(response.status).to.equal(200);
      const body = (await response.json()) as any;
      const score = (await (await fetch(`${server.url}/v1/scores/${id}`)).json()) as any;
      const { identity, reliability, integrity } = score.result.components;
      const expected = scoreLeafV2({
        agentId: score.agentId,
        day: DAY2,
        method: score.method,
        sha256: score.sha256,
        total: score.total,
        identity: identity.value,
        reliability: reliability.value,
        integrity: integrity.value,
        established: score.result.state === "established",
        erc8004Subject: null,
      });
      expect(body).to.deep.include({
        leafVersion: 2,
        kindName: "vrai-score-day-v2",
        kind: SCORE_DAY_V2_KIND,
        leafValues: scoreLeafToJson(expected),
      });
      expect(body.leafFields).to.deep.include({
        agent: score.agentId,
        total: score.total,
        identity: identity.value,
        state: 0,
        erc8004ChainId: "0",
      });
      expect(body.leaf).to.equal(scoreLeafHash(scoreLeafFromJson(body.leafValues)));
      expect(processScoreProof(body.leaf, body.proof)).to.equal(body.root);
      expect(body.anchor).to.include({ chainId: 31337, contract: registry });
      expect(Date.parse(body.anchor.anchoredAt) / 1000).to.equal(
        Number((await chain.publicClient.getBlock({ blockNumber: BigInt(body.anchor.blockNumber) })).timestamp),
      );
      expect(
        await chain.publicClient.readContract({
          address: registry,
          abi: anchorRegistryAbi,
          functionName: "verify",
          args: [body.root, body.leaf, body.proof],
        }),
      ).to.equal(true);
    }
  });

  it("answers 404 score_not_daily for a change score and score_not_found for an unknown id", async () => {
    const { rows } = await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'change' ORDER BY id LIMIT 1");
    const notDaily = await fetch(`${server.url}/v1/scores/${rows[0].id}/proof`);
    expect(notDaily.status).to.equal(404);
    expect(((await notDaily.json()) as any).error.code).to.equal("score_not_daily");
    const unknown = await fetch(`${server.url}/v1/scores/999999/proof`);
    expect(unknown.status).to.equal(404);
    expect(((await unknown.json()) as any).error.code).to.equal("score_not_found");
  });

  it("counts a root already anchored on chain as mined, with that transaction, and sends none", async () => {
    clock.set(T0 + 2 * 86400);
    await server.service.scoring.recomputeDay("2026-11-04");
    const anchoring = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent, writer });
    const built = await anchoring.buildDay("2026-11-04");
    const verifierRole = await chain.publicClient.readContract({
      address: registry,
      abi: anchorRegistryAbi,
      functionName: "VERIFIER_ROLE",
    });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "grantRole",
        args: [verifierRole, chain.accounts[2].address],
      }),
    });
    const hash = await chain.walletClients[2].writeContract({
      address: registry,
      abi: anchorRegistryAbi,
      functionName: "anchorRoot",
      args: [built!.root, 5n, SCORE_DAY_V2_KIND],
    });
    const elsewhere = await chain.publicClient.waitForTransactionReceipt({ hash });
    const nonce = await chain.publicClient.getTransactionCount({ address: chain.accounts[1].address });
    const outcomes = await anchoring.anchorDue();
    expect(outcomes).to.deep.equal([{ type: "mined", day: "2026-11-04", txHash: hash, blockNumber: Number(elsewhere.blockNumber) }]);
    expect(await chain.publicClient.getTransactionCount({ address: chain.accounts[1].address })).to.equal(nonce);
    await anchoring.stop();
  });

  it("stores the signed transaction before broadcasting it and, after a restart, resumes it until mined", async () => {
    clock.set(T0 + 3 * 86400);
    await server.service.scoring.recomputeDay("2026-11-05");
    await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      const first = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent, writer, receiptTimeoutMs: 300 });
      await first.buildDay("2026-11-05");
      const [waiting] = await first.anchorDue();
      await first.stop();
      expect(waiting.type).to.equal("waiting");
      const { rows } = await testDb.db.query<{ status: string; tx_hash: Hex; raw_tx: Hex }>(
        "SELECT * FROM score_anchors WHERE day = '2026-11-05'",
      );
      expect(rows[0].status).to.equal("pending");
      expect(keccak256(rows[0].raw_tx)).to.equal(rows[0].tx_hash);
      expect((waiting as { txHash: Hex }).txHash).to.equal(rows[0].tx_hash);

      await chain.mine(1);
      const restarted = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent, writer });
      const outcomes = await restarted.anchorDue();
      await restarted.stop();
      expect(outcomes).to.have.length(1);
      expect(outcomes[0]).to.include({ type: "mined", day: "2026-11-05", txHash: rows[0].tx_hash });
    } finally {
      await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
  });

  it("sends a new transaction when the stored one lost its nonce to another transaction, and anchors the day once", async () => {
    clock.set(T0 + 4 * 86400);
    await server.service.scoring.recomputeDay("2026-11-06");
    const anchorer = chain.accounts[1].address;
    await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [false] as never });
    let lost: Hex;
    try {
      const first = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent, writer, receiptTimeoutMs: 300 });
      await first.buildDay("2026-11-06");
      const [waiting] = await first.anchorDue();
      await first.stop();
      lost = (waiting as { txHash: Hex }).txHash;
      // The pending transaction is dropped and its nonce used by another transaction of the same account.
      await chain.publicClient.request({ method: "hardhat_dropTransaction" as never, params: [lost] as never });
      await chain.walletClients[1].sendTransaction({ to: anchorer, value: 0n });
      await chain.mine(1);
    } finally {
      await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
    const restarted = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent, writer });
    const [outcome] = await restarted.anchorDue();
    await restarted.stop();
    expect(outcome.type).to.equal("mined");
    expect((outcome as { txHash: Hex }).txHash).not.to.equal(lost);
    const { rows } = await testDb.db.query<{ root: Hex; status: string }>(
      "SELECT root, status FROM score_anchors WHERE day = '2026-11-06'",
    );
    expect(rows[0].status).to.equal("mined");
    const logs = await chain.publicClient.getContractEvents({
      address: registry,
      abi: anchorRegistryAbi,
      eventName: "RootAnchored",
      args: { root: rows[0].root },
      fromBlock: 0n,
    });
    expect(logs).to.have.length(1);
  });

  /** Recomputes `day` (the `n`th after T0), builds its tree and has account 2, a verifier, anchor its root first with `send`. */
  async function dayAnchoredFirstByVerifier(n: number, day: string, send: (root: Hex) => Promise<Hex>) {
    clock.set(T0 + n * 86400);
    await server.service.scoring.recomputeDay(day);
    const anchoring = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent, writer });
    const built = await anchoring.buildDay(day);
    const verifierRole = await chain.publicClient.readContract({
      address: registry,
      abi: anchorRegistryAbi,
      functionName: "VERIFIER_ROLE",
    });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "grantRole",
        args: [verifierRole, chain.accounts[2].address],
      }),
    });
    const first = await send(built!.root);
    await chain.publicClient.waitForTransactionReceipt({ hash: first });
    const outcomes = await anchoring.anchorDue();
    await anchoring.stop();
    return { root: built!.root, first, outcomes };
  }

  it("sends the day's anchorRoot when another account anchored the root only as a single digest (one anchor per role, A6)", async () => {
    const { root, first, outcomes } = await dayAnchoredFirstByVerifier(5, "2026-11-07", (root) =>
      chain.walletClients[2].writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "anchor",
        args: [root, SCORE_DAY_V2_KIND],
      }),
    );
    expect(outcomes).to.have.length(1);
    expect(outcomes[0]).to.include({ type: "mined", day: "2026-11-07" });
    const sent = (outcomes[0] as { txHash: Hex }).txHash;
    expect(sent).not.to.equal(first);
    const events = parseEventLogs({
      abi: anchorRegistryAbi,
      logs: (await chain.publicClient.getTransactionReceipt({ hash: sent })).logs,
      eventName: "RootAnchored",
    });
    expect(events.map((e) => e.args)).to.deep.equal([{ root, kind: SCORE_DAY_V2_KIND, leafCount: 5n, role: ANCHORER }]);
    const anchor = await chain.publicClient.readContract({
      address: registry,
      abi: anchorRegistryAbi,
      functionName: "anchorOf",
      args: [root, ANCHORER],
    });
    expect(anchor).to.include({ submitter: chain.accounts[1].address, isRoot: true });
    const [id] = (
      await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'daily' AND day = '2026-11-07' ORDER BY id LIMIT 1")
    ).rows.map((r) => Number(r.id));
    const proof = (await (await fetch(`${server.url}/v1/scores/${id}/proof`)).json()) as {
      leaf: Hex;
      proof: Hex[];
      anchor: { txHash: Hex };
    };
    expect(proof.anchor.txHash).to.equal(sent);
    expect(
      await chain.publicClient.readContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "verify",
        args: [root, proof.leaf, proof.proof],
      }),
    ).to.equal(true);
  });

  it("does not count a RootAnchored of the root with another leaf count as the day's anchor, and sends its own", async () => {
    const { root, first, outcomes } = await dayAnchoredFirstByVerifier(6, "2026-11-08", (root) =>
      chain.walletClients[2].writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "anchorRoot",
        args: [root, 4n, SCORE_DAY_V2_KIND],
      }),
    );
    expect(outcomes).to.have.length(1);
    expect(outcomes[0]).to.include({ type: "mined", day: "2026-11-08" });
    expect((outcomes[0] as { txHash: Hex }).txHash).not.to.equal(first);
    const logs = await chain.publicClient.getContractEvents({
      address: registry,
      abi: anchorRegistryAbi,
      eventName: "RootAnchored",
      args: { root },
      fromBlock: 0n,
    });
    expect(logs.map((l) => [l.transactionHash, l.args.leafCount])).to.deep.equal([
      [first, 4n],
      [(outcomes[0] as { txHash: Hex }).txHash, 5n],
    ]);
  });

  it(
    "does not count a RootAnchored of the root with the kind of version-1 leaves as the day's anchor (the day is of version 2), " +
      "and sends its own",
    async () => {
      const { root, first, outcomes } = await dayAnchoredFirstByVerifier(7, "2026-11-09", (root) =>
        chain.walletClients[2].writeContract({
          address: registry,
          abi: anchorRegistryAbi,
          functionName: "anchorRoot",
          args: [root, 5n, SCORE_DAY_KIND],
        }),
      );
      expect(outcomes).to.have.length(1);
      const sent = (outcomes[0] as { txHash: Hex }).txHash;
      expect(sent).not.to.equal(first);
      const logs = await chain.publicClient.getContractEvents({
        address: registry,
        abi: anchorRegistryAbi,
        eventName: "RootAnchored",
        args: { root },
        fromBlock: 0n,
      });
      expect(logs.map((l) => [l.transactionHash, l.args.kind])).to.deep.equal([
        [first, SCORE_DAY_KIND],
        [sent, SCORE_DAY_V2_KIND],
      ]);
    },
  );

  it("serves no proof before the day's root is mined: 404 proof_not_ready, from GET /v1/scores/{id}/proof and GET /v1/agents/{id}/score/proof", async () => {
    clock.set(T0 + 9 * 86400);
    await server.service.scoring.recomputeDay("2026-11-11");
    // Built and stored, never sent: no writer.
    await createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger: silent }).buildDay("2026-11-11");
    const [id] = (
      await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'daily' AND day = '2026-11-11' ORDER BY id LIMIT 1")
    ).rows.map((r) => Number(r.id));
    const response = await fetch(`${server.url}/v1/scores/${id}/proof`);
    expect(response.status).to.equal(404);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).to.equal("proof_not_ready");
    // This service anchors: it says when the root is expected.
    expect(error.message).to.match(
      new RegExp(
        `^score ${id}'s day \\(2026-11-11\\) is not anchored yet: its root 0x[0-9a-f]{64} is not mined; ` +
          "it is expected on chain right after that day's daily recompute \\(from 2026-11-11T00:00:00Z\\), " +
          "its transaction retried until mined$",
      ),
    );
    // The agent's latest proof is of its latest mined day, not of this one.
    const agent = (await testDb.db.query<{ agent_id: string }>("SELECT agent_id FROM scores WHERE id = $1", [id])).rows[0].agent_id;
    const latest = (await (await fetch(`${server.url}/v1/agents/${agent}/score/proof`)).json()) as any;
    expect(latest.day).to.equal("2026-11-09");
  });
  /** The anchoring's outcome for `day` alone (days left pending by the tests before are anchored in the same pass). */
  const outcomeOf = async (anchoring: ReturnType<typeof createAnchoring>, day: string) =>
    (await anchoring.anchorDue()).find((o) => o.day === day) as Extract<AnchorOutcome, { blockNumber: number }>;

  it("with 3 confirmations, records the anchor mined (its proofs served) and final, told to what follows, once 3 blocks are on it", async () => {
    const day = "2026-11-12";
    clock.set(T0 + 10 * 86400);
    await server.service.scoring.recomputeDay(day);
    const told: string[] = [];
    const anchoring = createAnchoring({
      anchors: createAnchorRepository(testDb.db),
      clock,
      logger: silent,
      writer,
      confirmations: 3,
      onMined: (d) => told.push(d),
    });
    const built = await anchoring.buildDay(day);
    const lag = await anchoring.status();
    expect(lag).to.deep.include({ writing: true, oldestUnanchoredDay: "2026-11-11", failingSince: null });
    expect(lag.unanchoredDays).to.equal(2);

    const first = await outcomeOf(anchoring, day);
    expect(first).to.include({ type: "confirming", confirmations: 1 });
    expect(await anchoring.status()).to.deep.include({ unanchoredDays: 0, oldestUnanchoredDay: null });
    expect(await createAnchorRepository(testDb.db).getDay(day)).to.include({ status: "mined", finalAt: null, txHash: first.txHash });
    expect(told).not.to.include(day);
    const [id] = (await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'daily' AND day = $1 LIMIT 1", [day])).rows;
    expect((await fetch(`${server.url}/v1/scores/${id.id}/proof`)).status, "served while confirming").to.equal(200);

    await chain.mine(2);
    expect(await outcomeOf(anchoring, day)).to.deep.equal({ type: "mined", day, txHash: first.txHash, blockNumber: first.blockNumber });
    expect(await createAnchorRepository(testDb.db).getDay(day)).to.include({ finalAt: clock.now(), rawTx: null });
    expect(told).to.include(day);
    expect(await chain.rootAnchoredLogs(registry, built!.root)).to.have.length(1);
    await anchoring.stop();
  });

  it("sends the same transaction again when a reorganisation drops the anchor's block within its confirmations, and records its new block", async () => {
    const day = "2026-11-13";
    clock.set(T0 + 11 * 86400);
    await server.service.scoring.recomputeDay(day);
    const { logger, entries } = capturedLogger("warn");
    const anchoring = createAnchoring({ anchors: createAnchorRepository(testDb.db), clock, logger, writer, confirmations: 3 });
    const built = await anchoring.buildDay(day);
    const beforeAnchor = await chain.snapshot();
    const first = await outcomeOf(anchoring, day);
    expect(first.type).to.equal("confirming");

    await chain.revert(beforeAnchor);
    // A node that never saw it: the transaction is neither in a block nor in the pool (should Hardhat have put it back).
    await chain.publicClient.request({ method: "hardhat_dropTransaction" as never, params: [first.txHash] as never });
    await chain.mine(1);
    const again = await outcomeOf(anchoring, day);
    expect(again).to.deep.equal({ type: "confirming", day, txHash: first.txHash, blockNumber: first.blockNumber + 1, confirmations: 1 });
    expect(entries().map((e) => e.msg)).to.deep.equal([
      "score root no longer anchored: its block left the chain (a reorganisation); sending its transaction again",
    ]);
    expect(await createAnchorRepository(testDb.db).getDay(day)).to.include({
      status: "mined",
      blockNumber: again.blockNumber,
      finalAt: null,
    });

    await chain.mine(2);
    expect(await outcomeOf(anchoring, day)).to.include({ type: "mined", txHash: first.txHash, blockNumber: again.blockNumber });
    expect(await chain.rootAnchoredLogs(registry, built!.root)).to.have.length(1);
    await anchoring.stop();
  });
  it("stops at once while its transaction waits to be mined, the transaction kept, and the next start records it mined, anchored once", async () => {
    const day = "2026-11-14";
    clock.set(T0 + 12 * 86400);
    await server.service.scoring.recomputeDay(day);
    const anchors = createAnchorRepository(testDb.db);
    await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      // A receipt wait far longer than the test's own timeout: stop() must not wait for it.
      const first = createAnchoring({ anchors, clock, logger: silent, writer, receiptTimeoutMs: 3_600_000 });
      const built = await first.buildDay(day);
      const pass = first.anchorDue();
      // The transaction is stored, then sent: in the node's pool, not mined.
      let txHash: Hex | null = null;
      while (txHash === null || (await chain.publicClient.getTransaction({ hash: txHash }).catch(() => null)) === null) {
        txHash = (await anchors.getDay(day))?.txHash ?? null;
        await new Promise((resolve) => setImmediate(resolve));
      }
      await first.stop();
      expect((await pass).find((o) => o.day === day)).to.deep.equal({ type: "waiting", day, txHash });
      expect(await anchors.getDay(day)).to.include({ status: "pending", txHash });

      await chain.mine(1);
      const restarted = createAnchoring({ anchors, clock, logger: silent, writer });
      expect(await outcomeOf(restarted, day)).to.include({ type: "mined", day, txHash });
      await restarted.stop();
      expect(await chain.rootAnchoredLogs(registry, built!.root)).to.have.length(1);
    } finally {
      await chain.publicClient.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
  });
});
