import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pino from "pino";
import { getAddress, keccak256, toHex, type Address, type Hex } from "viem";
import { deriveScores, executorId } from "../method";
import { systemClock } from "../service/clock";
import { migrate } from "../store/migrate";
import { createTestPgDb, type TestDb } from "../test-helpers/db";
import { deployToNode, startHardhatNode, traceRoot, type HardhatNode, type NodeDriver, type Tx } from "../test-helpers/node";
import { readDeployment } from "./deployment";
import { createIndexer, type RangePolicy } from "./indexer";
import { createChainRpc } from "./rpc";
import { createIndexerStore } from "./store";
import { dumpIndexedState } from "./test-support";

const silent = pino({ level: "silent" });

describe("chain indexer against a Hardhat node and PostgreSQL", function () {
  this.timeout(120_000);
  let node: HardhatNode;
  let chain: NodeDriver;
  let dir: string;
  const dbs: TestDb[] = [];

  before(async () => {
    node = await startHardhatNode();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-indexer-"));
    chain = await deployToNode(node.url, dir);
  });
  after(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
    await node?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function freshDb(): Promise<TestDb> {
    const d = await createTestPgDb();
    dbs.push(d);
    await migrate(d.db);
    return d;
  }

  function indexerFor(d: TestDb, options: { url?: string; range?: RangePolicy; onIdentityTransfer?: (chainId: number, registry: Address, agentId: bigint) => Promise<unknown> } = {}) {
    const store = createIndexerStore(d.db);
    const rpcClient = createChainRpc({ url: options.url ?? node.url, retry: { tries: 3, baseMs: 10, maxMs: 50 } });
    return { store, indexer: createIndexer({ store, rpc: rpcClient, deployment: readDeployment(chain.file), confirmations: 0, clock: systemClock, logger: silent, range: options.range, onIdentityTransfer: options.onIdentityTransfer }) };
  }

  async function freshIndex(range?: RangePolicy) {
    const d = await freshDb();
    await indexerFor(d, { range }).indexer.syncToHead();
    return dumpIndexedState(d.db);
  }

  /** Sends `txs` with automine off, `perBlock` to a block. */
  async function mineInBlocks(txs: readonly Tx[], perBlock: number): Promise<void> {
    await chain.setAutomine(false);
    try {
      for (let i = 0; i < txs.length; i += perBlock) {
        await chain.send(txs.slice(i, i + perBlock));
        await chain.mine();
      }
    } finally {
      await chain.setAutomine(true);
    }
  }

  const executorOf = (agentId: bigint) => executorId(chain.deployment.chainId, chain.deployment.contracts.IdentityRegistry.address, agentId);
  const record = (i: number) => ({ success: i % 3 !== 0, riskLevel: (i % 4) as 0 | 1 | 2 | 3, policyViolations: i % 7 === 0 ? 1 : 0, traceRoot: traceRoot(`r${i}`) });

  it("backfills 2,400 events over 120 blocks, every range written with its checkpoint, and recomputes derived scores with the method engine", async () => {
    const [, , owner1, owner2] = chain.accounts;
    const agents = [...(await chain.register(owner1, 3)), ...(await chain.register(owner2, 3))];
    const txs: Tx[] = [];
    for (let i = 0; i < 2_400; i++) {
      const agent = agents[i % agents.length];
      txs.push(chain.proofTx(i % agents.length < 3 ? owner1 : owner2, agent, record(i)));
    }
    const before = await chain.blockNumber();
    await mineInBlocks(txs, 20);
    expect((await chain.blockNumber()) - before).to.equal(120);

    const d = await freshDb();
    const { indexer, store } = indexerFor(d, { range: { initial: 16, max: 64 } });
    const result = await indexer.syncToHead();
    expect(result).to.include({ type: "synced", checkpoint: await chain.blockNumber() });
    if (result.type !== "synced") throw new Error("unreachable");
    expect(result.ranges).to.be.greaterThan(3);

    const { rows } = await d.db.query<{ executor: string; n: number }>("SELECT executor, count(*)::int AS n FROM chain_proof_records GROUP BY executor ORDER BY executor");
    expect(rows.map((r) => r.n)).to.deep.equal(agents.map(() => 400));
    for (const agent of agents) {
      const stored = await store.getDerived(executorOf(agent));
      const { records } = await store.listRecords(executorOf(agent), { limit: 1_000, offset: 0 });
      expect(records).to.have.length(400);
      expect(stored?.result).to.deep.equal(deriveScores(records.map(({ duplicate: _d, ...r }) => r))[executorOf(agent)]);
      expect(stored?.result).to.include({ scoreType: "sdk-derived", total: 400, verifiedCount: 0 });
    }
    expect(await dumpIndexedState(d.db)).to.deep.equal(await freshIndex({ initial: 5_000, max: 5_000 }));
  });

  it("halves its range when the node refuses wide log queries, and indexes the same rows", async () => {
    let refused = 0;
    const proxy = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString()) as unknown;
      const calls = (Array.isArray(body) ? body : [body]) as Array<{ id: number; method: string; params: Array<{ fromBlock: Hex; toBlock: Hex }> }>;
      const tooWide = (c: (typeof calls)[number]) => c.method === "eth_getLogs" && Number(c.params[0].toBlock) - Number(c.params[0].fromBlock) + 1 > 8;
      const answers = await Promise.all(
        calls.map(async (c) => {
          if (tooWide(c)) {
            refused++;
            return { jsonrpc: "2.0", id: c.id, error: { code: -32005, message: "query returned more than 10000 results" } };
          }
          const forwarded = await fetch(node.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(c) });
          return forwarded.json();
        }),
      );
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const d = await freshDb();
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const result = await indexerFor(d, { url, range: { initial: 1_000, max: 1_000 } }).indexer.syncToHead();
      expect(result.type).to.equal("synced");
      expect(refused).to.be.greaterThan(0);
      expect(await dumpIndexedState(d.db)).to.deep.equal(await freshIndex());
    } finally {
      proxy.close();
    }
  });

  it("rolls back a reorg made with evm_snapshot/evm_revert to the common ancestor, ending equal to a fresh index", async () => {
    const [, , owner] = chain.accounts;
    const [agent] = await chain.register(owner);
    const [requester] = await chain.register(owner);
    await mineInBlocks([chain.proofTx(owner, agent, record(1))], 1);
    const d = await freshDb();
    const { indexer } = indexerFor(d, { range: { initial: 4, max: 16 } });
    await indexer.syncToHead();

    const snapshot = await chain.snapshot();
    const order = (n: number) => keccak256(toHex(`order-${n}-${snapshot}`));
    await mineInBlocks(
      [
        chain.proofTx(owner, agent, record(2)), chain.proofTx(owner, agent, record(3)), chain.settleTx(order(1), agent, requester, 1),
        chain.anchorTx(chain.accounts[1], traceRoot("r1")), chain.settleTx(order(2), agent, requester, 3),
      ],
      1,
    );
    await chain.mine(3);
    await indexer.syncToHead();
    const forkA = await dumpIndexedState(d.db);
    expect(forkA.chain_settlements).to.have.length.greaterThan(0);

    await chain.revert(snapshot);
    await mineInBlocks([chain.proofTx(owner, agent, record(4)), chain.settleTx(order(3), agent, requester, 2)], 1);
    expect(await indexer.syncToHead()).to.include({ type: "reorg" });
    await indexer.syncToHead();
    const after = await dumpIndexedState(d.db);
    expect(after).to.deep.equal(await freshIndex());
    expect(after).not.to.deep.equal(forkA);
    const { rows } = await d.db.query<{ score: number }>("SELECT score FROM network_scores WHERE executor = $1", [executorOf(agent)]);
    const onchain = await createChainRpc({ url: node.url }).networkScores(chain.deployment.contracts.Registry.address, [agent], await chain.blockNumber());
    expect(rows[0].score).to.equal(onchain.get(agent));
  });

  it("counts records of one transaction once (A2 dedup by txHash)", async () => {
    const [, , owner] = chain.accounts;
    const [agent] = await chain.register(owner);
    const batcher = await chain.deploy("test/ProofBatcher");
    const identity = chain.deployment.contracts.IdentityRegistry.address;
    await chain.send([chain.callTx(identity, [{ type: "function", name: "setApprovalForAll", stateMutability: "nonpayable", inputs: [{ name: "o", type: "address" }, { name: "a", type: "bool" }], outputs: [] }], "setApprovalForAll", [batcher, true], owner)]);
    const submitMany = [{
      type: "function", name: "submitMany", stateMutability: "nonpayable", outputs: [],
      inputs: ["address", "uint256", "bool", "uint8", "uint32", "bytes32", "uint256"].map((type, i) => ({ name: `a${i}`, type })),
    }] as const;
    await chain.send([
      chain.callTx(batcher, submitMany as never, "submitMany", [chain.deployment.contracts.Registry.address, agent, true, 2, 0, traceRoot("dup"), 3n], owner),
      chain.proofTx(owner, agent, { success: false, riskLevel: 0, policyViolations: 0, traceRoot: traceRoot("single") }),
    ]);
    const d = await freshDb();
    const { indexer, store } = indexerFor(d);
    await indexer.syncToHead();
    const { records, count } = await store.listRecords(executorOf(agent), { limit: 10, offset: 0 });
    expect(count).to.equal(4);
    expect(records.map((r) => r.duplicate)).to.deep.equal([false, true, true, false]);
    expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 2, verifiedCount: 0 });
  });

  it("marks a record verified when its traceRoot is anchored by a verifier after it (A6), not by an anchorer", async () => {
    const [admin, verifier, owner] = chain.accounts;
    const [agent] = await chain.register(owner);
    const roots = [traceRoot(`late-${agent}`), traceRoot(`anchorer-${agent}`)];
    await chain.send(roots.map((root) => chain.proofTx(owner, agent, { success: true, riskLevel: 2, policyViolations: 0, traceRoot: root })));
    const d = await freshDb();
    const { indexer, store } = indexerFor(d);
    await indexer.syncToHead();
    expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 2, verifiedCount: 0 });

    await chain.send([chain.anchorTx(verifier, roots[0]), chain.anchorTx(admin, roots[1])]);
    await indexer.syncToHead();
    const { records } = await store.listRecords(executorOf(agent), { limit: 10, offset: 0 });
    expect(records.map((r) => r.verified)).to.deep.equal([true, false]);
    expect((await store.getDerived(executorOf(agent)))?.result).to.deep.equal(deriveScores(records.map(({ duplicate: _d, ...r }) => r))[executorOf(agent)]);
    expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 2, verifiedCount: 1 });
  });

  it("reports an identity token transfer at once, and not its mint", async () => {
    const [, , owner, buyer] = chain.accounts;
    const d = await freshDb();
    const seen: string[] = [];
    const { indexer } = indexerFor(d, { onIdentityTransfer: async (chainId, registry, agentId) => void seen.push(`${chainId}:${registry}:${agentId}`) });
    await indexer.syncToHead();
    seen.length = 0;
    const [agent] = await chain.register(owner);
    await chain.send([chain.transferTx(owner, buyer, agent)]);
    await indexer.syncToHead();
    expect(seen).to.deep.equal([`${chain.deployment.chainId}:${getAddress(chain.deployment.contracts.IdentityRegistry.address)}:${agent}`]);
  });
});
