import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { expect } from "chai";
import crypto from "node:crypto";
import pino from "pino";
import { keccak256, parseEventLogs, type Address, type Hex } from "viem";
import { startApiServer, type ApiServer } from "../api/server";
import { anchorRegistryAbi } from "../chain/abi/anchorRegistry";
import { startTestChain, type TestChain } from "../test-helpers/chain";
import { createTestPgDb, type TestDb } from "../test-helpers/db";
import {
  buildScoreTree, buildScoreTreeParallel, createAnchoring, proofElements, processScoreProof, SCORE_DAY_KIND, SCORE_LEAF_TYPES, scoreLeafHash,
  type AnchorWriter, type ScoreLeafValues,
} from "./anchoring";
import { createManualClock } from "./clock";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const DAY2 = "2026-11-03";
const OPERATOR = "op-token-anchoring-test-0000";
const silent = pino({ level: "silent" });

const randomValues = (n: number): ScoreLeafValues[] =>
  Array.from({ length: n }, (_, i) => [`agt_${crypto.randomBytes(4).toString("hex")}${i}`, "2026-11-29", i % 3 === 0 ? "0.1" : "0.2", `0x${crypto.randomBytes(32).toString("hex")}`]);

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

  it("orders leaves whose hashes share their first 4 bytes by the whole hash", () => {
    // agt_6564 and agt_113787 (found by a birthday search) have leaf hashes starting 0x84bde626.
    const sha = `0x${"ab".repeat(32)}` as Hex;
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
    registry = (await chain.deployContract("AnchorRegistry", [chain.accounts[0].address])).address;
    const anchorer = chain.accounts[1].address;
    const role = await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "ANCHORER_ROLE" });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({ address: registry, abi: anchorRegistryAbi, functionName: "grantRole", args: [role, anchorer] }),
    });
    writer = { publicClient: chain.publicClient, walletClient: chain.walletClients[1], contract: registry } as unknown as AnchorWriter;
    clock = createManualClock(T0);
    server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR, clock, logger: silent, anchorWriter: writer });
    const post = (path: string, token: string | undefined, body: unknown) =>
      fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
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
    (await testDb.db.query<{ id: number }>("SELECT id FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY id", [DAY2])).rows.map((r) => Number(r.id));

  it("anchors the day's root in one anchorRoot transaction covering every daily score, and stores it mined", async () => {
    const { rows } = await testDb.db.query<{ root: Hex; leaf_count: number; status: string; tx_hash: Hex; block_number: number }>("SELECT * FROM score_anchors WHERE day = $1", [DAY2]);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ leaf_count: 5, status: "mined" });
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: rows[0].tx_hash });
    expect(receipt.status).to.equal("success");
    expect(Number(receipt.blockNumber)).to.equal(Number(rows[0].block_number));
    const events = parseEventLogs({ abi: anchorRegistryAbi, logs: receipt.logs, eventName: "RootAnchored" });
    expect(events).to.have.length(1);
    expect(events[0].args).to.deep.include({ root: rows[0].root, kind: SCORE_DAY_KIND, leafCount: 5n });
    const anchor = await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "anchorOf", args: [rows[0].root] });
    expect(anchor.submitter).to.equal(chain.accounts[1].address);
    expect(anchor.isRoot).to.equal(true);
  });

  it("serves each daily score's leaf, proof, root and anchor at GET /v1/scores/:id/proof, accepted by AnchorRegistry.verify", async () => {
    const ids = await dailyScoreIds();
    expect(ids).to.have.length(5);
    for (const id of ids) {
      const response = await fetch(`${server.url}/v1/scores/${id}/proof`);
      expect(response.status).to.equal(200);
      const body = (await response.json()) as any;
      const score = (await (await fetch(`${server.url}/v1/scores/${id}`)).json()) as any;
      expect(body.leafValues).to.deep.equal([score.agentId, DAY2, score.method, `0x${score.sha256}`]);
      expect(body.leaf).to.equal(scoreLeafHash(body.leafValues));
      expect(processScoreProof(body.leaf, body.proof)).to.equal(body.root);
      expect(body.anchor).to.include({ chainId: 31337, contract: registry });
      expect(await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "verify", args: [body.root, body.leaf, body.proof] })).to.equal(true);
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
    const anchoring = createAnchoring({ db: testDb.db, clock, logger: silent, writer });
    const built = await anchoring.buildDay("2026-11-04");
    const verifierRole = await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "VERIFIER_ROLE" });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({ address: registry, abi: anchorRegistryAbi, functionName: "grantRole", args: [verifierRole, chain.accounts[2].address] }),
    });
    const hash = await chain.walletClients[2].writeContract({ address: registry, abi: anchorRegistryAbi, functionName: "anchorRoot", args: [built!.root, 5n, SCORE_DAY_KIND] });
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
      const first = createAnchoring({ db: testDb.db, clock, logger: silent, writer, receiptTimeoutMs: 300 });
      await first.buildDay("2026-11-05");
      const [waiting] = await first.anchorDue();
      await first.stop();
      expect(waiting.type).to.equal("waiting");
      const { rows } = await testDb.db.query<{ status: string; tx_hash: Hex; raw_tx: Hex }>("SELECT * FROM score_anchors WHERE day = '2026-11-05'");
      expect(rows[0].status).to.equal("pending");
      expect(keccak256(rows[0].raw_tx)).to.equal(rows[0].tx_hash);
      expect((waiting as { txHash: Hex }).txHash).to.equal(rows[0].tx_hash);

      await chain.mine(1);
      const restarted = createAnchoring({ db: testDb.db, clock, logger: silent, writer });
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
      const first = createAnchoring({ db: testDb.db, clock, logger: silent, writer, receiptTimeoutMs: 300 });
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
    const restarted = createAnchoring({ db: testDb.db, clock, logger: silent, writer });
    const [outcome] = await restarted.anchorDue();
    await restarted.stop();
    expect(outcome.type).to.equal("mined");
    expect((outcome as { txHash: Hex }).txHash).not.to.equal(lost);
    const { rows } = await testDb.db.query<{ root: Hex; status: string }>("SELECT root, status FROM score_anchors WHERE day = '2026-11-06'");
    expect(rows[0].status).to.equal("mined");
    const logs = await chain.publicClient.getContractEvents({ address: registry, abi: anchorRegistryAbi, eventName: "RootAnchored", args: { root: rows[0].root }, fromBlock: 0n });
    expect(logs).to.have.length(1);
  });
});
