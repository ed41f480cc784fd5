import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pino from "pino";
import { getAddress, keccak256, toHex, type Abi, type Address, type Hex } from "viem";
import { identityRegistryAbi } from "../chain/abi/identityRegistry";
import { deriveScores, executorId } from "../method";
import { systemClock } from "../service/clock";
import { createDerivedScores } from "../service/derived-scores";
import { createNetworkScores } from "../service/network-scores";
import { createChainStore } from "../store/chain-store";
import { createMigratedTestDb, type TestDb } from "../test-helpers/db";
import { capturedLogger } from "../test-helpers/logs";
import { deployToNode, startHardhatNode, traceRoot, type HardhatNode, type NodeDriver, type Tx } from "../test-helpers/node";
import { readFollowedDeployment } from "../chain/deployment";
import { createIndexer, type RangePolicy } from "./indexer";
import { RpcTransportError } from "./errors";
import { createChainRpc } from "./rpc";
import { startApiServer } from "../app/server";
import { createPublicClient, http as viemHttp, type PublicClient } from "viem";
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
  });
  // Each test deploys its own contracts, so each index starts at its own deployment block and reads only its events.
  let deployments = 0;
  beforeEach(async () => {
    chain = await deployToNode(node.url, dir, `test-${++deployments}`);
  });
  after(async () => {
    await Promise.all(dbs.map((d) => d.drop()));
    await node?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function freshDb(): Promise<TestDb> {
    const d = await createMigratedTestDb();
    dbs.push(d);
    return d;
  }

  function indexerFor(
    d: TestDb,
    options: {
      url?: string;
      range?: RangePolicy;
      onIdentityTransfer?: (chainId: number, registry: Address, agentId: bigint) => Promise<unknown>;
      onIdentityUriUpdated?: (chainId: number, registry: Address, agentId: bigint) => Promise<unknown>;
    } = {},
  ) {
    const store = createChainStore(d.db);
    const derivedScores = createDerivedScores({ store });
    const rpcClient = createChainRpc({ url: options.url ?? node.url, retry: { tries: 3, baseMs: 10, maxMs: 50 } });
    return {
      store,
      derivedScores,
      indexer: createIndexer({
        store,
        derivedScores,
        networkScores: createNetworkScores(),
        rpc: rpcClient,
        deployment: readFollowedDeployment(chain.file),
        confirmations: 0,
        clock: systemClock,
        logger: silent,
        range: options.range,
        onIdentityTransfer: options.onIdentityTransfer,
        onIdentityUriUpdated: options.onIdentityUriUpdated,
      }),
    };
  }

  it("keeps following the chain through retryable failures, waiting longer after each, and stops when asked", async () => {
    const d = await freshDb();
    const store = createChainStore(d.db);
    const rpc = createChainRpc({ url: node.url });
    let failing = 2;
    const flaky = { ...rpc, blockNumber: () => (failing-- > 0 ? Promise.reject(new RpcTransportError("node away")) : rpc.blockNumber()) };
    const { logger, entries } = capturedLogger("warn");
    const indexer = createIndexer({
      store,
      derivedScores: createDerivedScores({ store }),
      networkScores: createNetworkScores(),
      rpc: flaky,
      deployment: readFollowedDeployment(chain.file),
      confirmations: 0,
      clock: systemClock,
      logger,
      pollIntervalMs: 10,
    });
    const controller = new AbortController();
    const running = indexer.run(controller.signal);
    const head = await chain.blockNumber();
    for (
      const until = Date.now() + 30_000;
      (await store.getCheckpoint(chain.deployment.chainId))?.blockNumber !== head && Date.now() < until;
    )
      await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    await running;
    expect((await store.getCheckpoint(chain.deployment.chainId))?.blockNumber).to.equal(head);
    const retries = entries("indexer pass failed, retrying");
    expect(retries.map((e) => [e.failures, e.waitMs, e.code])).to.deep.equal([
      [1, 500, "rpc_unavailable"],
      [2, 1000, "rpc_unavailable"],
    ]);
  });

  async function freshIndex(range?: RangePolicy) {
    const d = await freshDb();
    await indexerFor(d, { range }).indexer.syncToHead();
    return dumpIndexedState(d.db);
  }

  /** Sends `txs` one after the other (a JSON-RPC batch may be run in any order), each mined in its own block. */
  async function sendInOrder(txs: readonly Tx[]): Promise<void> {
    for (const tx of txs) await chain.send([tx]);
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

  const executorOf = (agentId: bigint) =>
    executorId(chain.deployment.chainId, chain.deployment.contracts.IdentityRegistry.address, agentId);
  const record = (i: number) => ({
    success: i % 3 !== 0,
    riskLevel: (i % 4) as 0 | 1 | 2 | 3,
    policyViolations: i % 7 === 0 ? 1 : 0,
    traceRoot: traceRoot(`r${i}`),
  });

  it(
    "backfills 2,400 events over 120 blocks, every range written with its checkpoint, and recomputes derived scores " +
      "with the method engine (2,400 transactions on a Hardhat node: ~10 s)",
    async () => {
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
      const { store, derivedScores } = indexerFor(d, { range: { initial: 16, max: 64 } });
      const { logger, entries } = capturedLogger();
      const indexer = createIndexer({
        store,
        derivedScores,
        networkScores: createNetworkScores(),
        rpc: createChainRpc({ url: node.url }),
        deployment: readFollowedDeployment(chain.file),
        confirmations: 0,
        clock: systemClock,
        logger,
        range: { initial: 16, max: 64 },
        progressEveryMs: 0,
      });
      const result = await indexer.syncToHead();
      // The operator sees the backfill move: blocks done and to do, and events/s.
      const progress = entries("backfill progress");
      expect(progress.length).to.be.greaterThan(3);
      expect(progress[progress.length - 1]).to.include({ blocksToDo: 0 });
      expect(progress[0].blocksDone).to.be.greaterThan(0);
      expect(progress[0].eventsPerSecond).to.be.a("number");
      expect(result).to.include({ type: "synced", checkpoint: await chain.blockNumber() });
      if (result.type !== "synced") throw new Error("unreachable");
      expect(result.ranges).to.be.greaterThan(3);

      const { rows } = await d.db.query<{ executor: string; n: number }>(
        "SELECT executor, count(*)::int AS n FROM chain_proof_records GROUP BY executor ORDER BY executor",
      );
      expect(rows.map((r) => r.n)).to.deep.equal(agents.map(() => 400));
      for (const agent of agents) {
        const stored = await store.getDerived(executorOf(agent));
        const { records } = await derivedScores.listRecords(executorOf(agent), { limit: 1_000, offset: 0 });
        expect(records).to.have.length(400);
        expect(stored?.result).to.deep.equal(deriveScores(records.map(({ duplicate: _d, ...r }) => r))[executorOf(agent)]);
        expect(stored?.result).to.include({ scoreType: "sdk-derived", total: 400, verifiedCount: 0 });
      }
      expect(await dumpIndexedState(d.db)).to.deep.equal(await freshIndex({ initial: 5_000, max: 5_000 }));
    },
  );

  it("halves its range when the node refuses wide log queries, retries transport failures with backoff, and indexes the same rows", async () => {
    let refused = 0;
    let failuresLeft = 2;
    const proxy = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (failuresLeft > 0) {
        failuresLeft--;
        res.statusCode = 502;
        return void res.end("bad gateway");
      }
      const body = JSON.parse(Buffer.concat(chunks).toString()) as unknown;
      const calls = (Array.isArray(body) ? body : [body]) as Array<{
        id: number;
        method: string;
        params: Array<{ fromBlock: Hex; toBlock: Hex }>;
      }>;
      const tooWide = (c: (typeof calls)[number]) =>
        c.method === "eth_getLogs" && Number(c.params[0].toBlock) - Number(c.params[0].fromBlock) + 1 > 8;
      const answers = await Promise.all(
        calls.map(async (c) => {
          if (tooWide(c)) {
            refused++;
            return { jsonrpc: "2.0", id: c.id, error: { code: -32005, message: "query returned more than 10000 results" } };
          }
          const forwarded = await fetch(node.url, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(c),
          });
          return forwarded.json();
        }),
      );
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]));
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const [, , owner] = chain.accounts;
    const agents = await chain.register(owner, 2);
    await sendInOrder(agents.flatMap((agent, i) => [chain.proofTx(owner, agent, record(i)), chain.proofTx(owner, agent, record(i + 2))]));
    await chain.mine(30);
    try {
      const d = await freshDb();
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const result = await indexerFor(d, { url, range: { initial: 1_000, max: 1_000 } }).indexer.syncToHead();
      expect(result.type).to.equal("synced");
      expect(refused).to.be.greaterThan(0);
      expect(failuresLeft).to.equal(0);
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
        chain.proofTx(owner, agent, record(2)),
        chain.proofTx(owner, agent, record(3)),
        chain.settleTx(order(1), agent, requester, 1),
        chain.anchorTx(chain.accounts[1], traceRoot("r1")),
        chain.settleTx(order(2), agent, requester, 3),
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
    const onchain = await createChainRpc({ url: node.url }).networkScores(
      chain.deployment.contracts.Registry.address,
      [agent],
      await chain.blockNumber(),
    );
    expect(rows[0].score).to.equal(onchain.get(agent));
  });

  it("stays the configured number of confirmations behind the head", async () => {
    const [, , owner] = chain.accounts;
    const [agent] = await chain.register(owner);
    await sendInOrder([0, 1, 2].map((i) => chain.proofTx(owner, agent, record(i))));
    const d = await freshDb();
    const store = createChainStore(d.db);
    const derivedScores = createDerivedScores({ store });
    const indexer = createIndexer({
      store,
      derivedScores,
      networkScores: createNetworkScores(),
      rpc: createChainRpc({ url: node.url }),
      deployment: readFollowedDeployment(chain.file),
      confirmations: 2,
      clock: systemClock,
      logger: silent,
    });
    await indexer.syncToHead();
    expect((await store.getCheckpoint(chain.deployment.chainId))?.blockNumber).to.equal((await chain.blockNumber()) - 2);
    expect((await derivedScores.listRecords(executorOf(agent), { limit: 10, offset: 0 })).count).to.equal(1);
  });

  it("refuses to write a range that does not start right after the checkpoint, leaving the state as it was", async () => {
    const d = await freshDb();
    const { indexer, store } = indexerFor(d);
    await indexer.syncToHead();
    const before = await dumpIndexedState(d.db);
    const cp = await store.getCheckpoint(chain.deployment.chainId);
    if (!cp) throw new Error("no checkpoint");
    const again = { number: cp.blockNumber, hash: cp.blockHash as Hex, parentHash: cp.blockHash as Hex, timestamp: 0 };
    const error = await store
      .transaction((tx) =>
        tx.writeRange(
          {
            chainId: cp.chainId,
            registry: cp.registry,
            executorOf: () => "did:x",
            events: [],
            from: cp.blockNumber,
            headers: [again],
            to: again,
          },
          0,
        ),
      )
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(error).to.include({ code: "checkpoint_moved", retryable: true });
    expect(await dumpIndexedState(d.db)).to.deep.equal(before);
  });

  it("counts records of one transaction once (A2 dedup by txHash)", async () => {
    const [, , owner] = chain.accounts;
    const [agent] = await chain.register(owner);
    const batcher = await chain.deploy("test/ProofBatcher");
    const identity = chain.deployment.contracts.IdentityRegistry.address;
    await chain.send([
      chain.callTx(
        identity,
        [
          {
            type: "function",
            name: "setApprovalForAll",
            stateMutability: "nonpayable",
            inputs: [
              { name: "o", type: "address" },
              { name: "a", type: "bool" },
            ],
            outputs: [],
          },
        ],
        "setApprovalForAll",
        [batcher, true],
        owner,
      ),
    ]);
    const submitMany = [
      {
        type: "function",
        name: "submitMany",
        stateMutability: "nonpayable",
        outputs: [],
        inputs: ["address", "uint256", "bool", "uint8", "uint32", "bytes32", "uint256"].map((type, i) => ({ name: `a${i}`, type })),
      },
    ] as const;
    await sendInOrder([
      chain.callTx(
        batcher,
        submitMany as never,
        "submitMany",
        [chain.deployment.contracts.Registry.address, agent, true, 2, 0, traceRoot("dup"), 3n],
        owner,
      ),
      chain.proofTx(owner, agent, { success: false, riskLevel: 0, policyViolations: 0, traceRoot: traceRoot("single") }),
    ]);
    const d = await freshDb();
    const { indexer, store, derivedScores } = indexerFor(d);
    await indexer.syncToHead();
    const { records, count } = await derivedScores.listRecords(executorOf(agent), { limit: 10, offset: 0 });
    expect(count).to.equal(4);
    expect(records.map((r) => r.duplicate)).to.deep.equal([false, true, true, false]);
    expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 2, verifiedCount: 0 });
  });

  it("marks a record verified when its traceRoot is anchored by a verifier after it (A6), not by an anchorer", async () => {
    const [admin, verifier, owner] = chain.accounts;
    const [agent] = await chain.register(owner);
    const roots = [traceRoot(`late-${agent}`), traceRoot(`anchorer-${agent}`)];
    for (const root of roots)
      await chain.send([chain.proofTx(owner, agent, { success: true, riskLevel: 2, policyViolations: 0, traceRoot: root })]);
    const d = await freshDb();
    const { indexer, store, derivedScores } = indexerFor(d);
    await indexer.syncToHead();
    expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 2, verifiedCount: 0 });

    await chain.send([chain.anchorTx(verifier, roots[0]), chain.anchorTx(admin, roots[1])]);
    await indexer.syncToHead();
    const { records } = await derivedScores.listRecords(executorOf(agent), { limit: 10, offset: 0 });
    expect(records.map((r) => r.verified)).to.deep.equal([true, false]);
    expect((await store.getDerived(executorOf(agent)))?.result).to.deep.equal(
      deriveScores(records.map(({ duplicate: _d, ...r }) => r))[executorOf(agent)],
    );
    expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 2, verifiedCount: 1 });
  });

  it(
    "marks a record verified when a verifier attests its traceRoot after an anchorer anchored it first, " +
      "or before, or before the record (A6, any order)",
    async () => {
      const [admin, verifier, owner] = chain.accounts;
      const [agent] = await chain.register(owner);
      const [anchorerFirst, verifierFirst, beforeRecord] = ["anchorer-first", "verifier-first", "before-record"].map((label) =>
        traceRoot(`${label}-${agent}`),
      );
      const proof = (root: Hex) => chain.proofTx(owner, agent, { success: true, riskLevel: 1, policyViolations: 0, traceRoot: root });
      await sendInOrder([
        proof(anchorerFirst),
        proof(verifierFirst),
        chain.anchorTx(verifier, beforeRecord),
        chain.anchorTx(admin, anchorerFirst),
        chain.anchorTx(verifier, verifierFirst),
      ]);
      const d = await freshDb();
      const { indexer, store, derivedScores } = indexerFor(d);
      await indexer.syncToHead();
      const verifiedOf = async () =>
        (await derivedScores.listRecords(executorOf(agent), { limit: 10, offset: 0 })).records.map((r) => [r.traceRoot, r.verified]);
      expect(await verifiedOf()).to.deep.equal([
        [anchorerFirst, false],
        [verifierFirst, true],
      ]);

      // The race the other way for each root: the verifier after the anchorer, the anchorer after the verifier.
      await sendInOrder([chain.anchorTx(verifier, anchorerFirst), chain.anchorTx(admin, verifierFirst), proof(beforeRecord)]);
      await indexer.syncToHead();
      expect(await verifiedOf()).to.deep.equal([
        [anchorerFirst, true],
        [verifierFirst, true],
        [beforeRecord, true],
      ]);
      expect((await store.getDerived(executorOf(agent)))?.result).to.include({ total: 3, verifiedCount: 3 });
      const { rows } = await d.db.query<{ digest: string; role: string }>(
        "SELECT digest, role FROM chain_anchors WHERE digest = ANY($1::text[]) ORDER BY block_number, log_index",
        [[anchorerFirst, verifierFirst]],
      );
      expect(rows.map((r) => [r.digest, r.role])).to.deep.equal([
        [anchorerFirst, "anchorer"],
        [verifierFirst, "verifier"],
        [anchorerFirst, "verifier"],
        [verifierFirst, "anchorer"],
      ]);
    },
  );

  for (const identity of ["AgentIdentity", "reference"] as const) {
    it(`reports an identity token transfer at once, and not its mint (identity registry: ${identity})`, async () => {
      if (identity === "reference") chain = await deployToNode(node.url, dir, `test-${++deployments}`, { identity });
      const [, , owner, buyer] = chain.accounts;
      const d = await freshDb();
      const seen: string[] = [];
      const { indexer } = indexerFor(d, {
        onIdentityTransfer: async (chainId, registry, agentId) => void seen.push(`${chainId}:${registry}:${agentId}`),
      });
      await indexer.syncToHead();
      seen.length = 0;
      const [agent] = await chain.register(owner);
      await chain.send([chain.transferTx(owner, buyer, agent)]);
      await indexer.syncToHead();
      expect(seen).to.deep.equal([
        `${chain.deployment.chainId}:${getAddress(chain.deployment.contracts.IdentityRegistry.address)}:${agent}`,
      ]);
    });
  }

  for (const identity of ["AgentIdentity", "reference"] as const) {
    it(`reports an agentURI change (URIUpdated) at once, so the registration file is read again (issue #27; identity registry: ${identity})`, async () => {
      if (identity === "reference") chain = await deployToNode(node.url, dir, `test-${++deployments}`, { identity });
      const [, , owner] = chain.accounts;
      const d = await freshDb();
      const seen: string[] = [];
      const { indexer } = indexerFor(d, {
        onIdentityUriUpdated: async (chainId, registry, agentId) => void seen.push(`${chainId}:${registry}:${agentId}`),
      });
      const [agent] = await chain.register(owner);
      await indexer.syncToHead();
      seen.length = 0;
      const registry = chain.deployment.contracts.IdentityRegistry.address;
      await chain.send([
        chain.callTx(registry, identityRegistryAbi as Abi, "setAgentURI", [agent, "https://agent.example.org/a.json"], owner),
      ]);
      await indexer.syncToHead();
      expect(seen).to.deep.equal([`${chain.deployment.chainId}:${getAddress(registry)}:${agent}`]);
      // Reported, not stored: an index of the chain holds its transfers only.
      const { rows } = await d.db.query<{ n: number }>("SELECT count(*)::int AS n FROM chain_identity_transfers WHERE block_number > $1", [
        chain.deployment.contracts.Registry.blockNumber,
      ]);
      expect(rows[0].n).to.equal(1);
    });
  }

  it("reads a reused identity registry's transfers from its own deployment block, before Vrai's contracts", async () => {
    const [, , owner, buyer] = chain.accounts;
    const reference = await chain.deployReferenceIdentity();
    const [agent] = await chain.register(owner, 1, reference.address);
    await chain.send([chain.transferTx(owner, buyer, agent, reference.address)]);
    chain = await deployToNode(node.url, dir, `test-${++deployments}`, {
      identity: { reuse: reference.address, blockNumber: reference.blockNumber },
    });
    const d = await freshDb();
    const { indexer } = indexerFor(d);
    await indexer.syncToHead();
    const { rows } = await d.db.query<{ block_number: number; from_address: string; to_address: string; executor: string }>(
      "SELECT block_number, from_address, to_address, executor FROM chain_identity_transfers ORDER BY block_number, log_index",
    );
    expect(rows.map((r) => [r.from_address, r.to_address, r.executor])).to.deep.equal([
      [`0x${"0".repeat(40)}`, owner.toLowerCase(), executorOf(agent)],
      [owner.toLowerCase(), buyer.toLowerCase(), executorOf(agent)],
    ]);
    expect(Number(rows[1].block_number)).to.be.lessThan(chain.deployment.contracts.Registry.blockNumber);
  });

  it(
    "follows every identity registry that backs an active ERC-8004 proof: " +
      "a transfer in either of two reference registries on one chain removes its proof at once",
    async () => {
      chain = await deployToNode(node.url, dir, `test-${++deployments}`, { identity: "reference" });
      const second = (await chain.deployReferenceIdentity()).address;
      const unproven = (await chain.deployReferenceIdentity()).address;
      const [, , owner, buyer] = chain.accounts;
      const deployed = chain.deployment.contracts.IdentityRegistry.address;
      const [first] = await chain.register(owner, 1);
      const [secondToken] = await chain.register(owner, 1, second);
      const [unprovenToken] = await chain.register(owner, 1, unproven);
      const d = await freshDb();
      const publicClient = createPublicClient({ transport: viemHttp(node.url) }) as PublicClient;
      const server = await startApiServer({
        db: d.db,
        operatorToken: "op-token",
        logger: silent,
        proofSources: { publicClientFor: (id) => (id === chain.deployment.chainId ? publicClient : undefined) },
      });
      try {
        const seen: string[] = [];
        const { indexer } = indexerFor(d, {
          onIdentityTransfer: async (chainId, registry, agentId) => {
            seen.push(`${registry}:${agentId}`);
            await server.proofs.recheckErc8004(chainId, registry, agentId);
          },
        });
        await indexer.syncToHead();
        const { ownerId } = await server.service.accounts.createOwner();
        const proofs: Record<string, string> = {};
        for (const [registry, token] of [
          [deployed, first],
          [second, secondToken],
        ] as const) {
          const { agentId } = await server.service.accounts.claimNewAgent(ownerId);
          const subject = `${chain.deployment.chainId}:${registry.toLowerCase()}:${token}`;
          proofs[registry] = `prf_${agentId}`;
          await server.service.identity.recordProof({
            id: proofs[registry],
            kind: "erc8004",
            ownerId,
            agentId,
            subject,
            binding: `erc8004:${subject}`,
            evidence: {
              kind: "erc8004",
              subject,
              chainId: chain.deployment.chainId,
              registry: registry.toLowerCase(),
              agentId: token.toString(),
              owner: owner.toLowerCase(),
            },
          });
        }
        const removal = async (registry: Address) =>
          (await d.db.query<{ removed_reason: string | null }>("SELECT removed_reason FROM proofs WHERE id = $1", [proofs[registry]]))
            .rows[0].removed_reason;

        await chain.send([chain.transferTx(owner, buyer, secondToken, second), chain.transferTx(owner, buyer, unprovenToken, unproven)]);
        await indexer.syncToHead();
        expect(seen).to.deep.equal([`${getAddress(second)}:${secondToken}`]);
        expect(await removal(second)).to.equal("the identity token moved to another wallet");
        expect(await removal(deployed)).to.equal(null);
        const { rows } = await d.db.query<{ executor: string }>("SELECT executor FROM chain_identity_transfers WHERE to_address = $1", [
          buyer.toLowerCase(),
        ]);
        expect(rows.map((r) => r.executor)).to.deep.equal([executorId(chain.deployment.chainId, second, secondToken)]);

        await chain.send([chain.transferTx(owner, buyer, first)]);
        await indexer.syncToHead();
        expect(await removal(deployed)).to.equal("the identity token moved to another wallet");
        // Its last proof gone, the second registry is no longer followed.
        await chain.send([chain.transferTx(buyer, owner, secondToken, second)]);
        await indexer.syncToHead();
        expect(seen).to.deep.equal([`${getAddress(second)}:${secondToken}`, `${getAddress(deployed)}:${first}`]);
      } finally {
        await server.close();
      }
    },
  );

  for (const identity of ["AgentIdentity", "reference"] as const) {
    it(
      "serves an ERC-8004-linked agent's derived and network scores apart, takes self-reported summaries, reports a mirror mismatch, " +
        `and a token transfer removes the proof at once (identity registry: ${identity})`,
      async () => {
        if (identity === "reference") chain = await deployToNode(node.url, dir, `test-${++deployments}`, { identity });
        const d = await freshDb();
        const publicClient = createPublicClient({ transport: viemHttp(node.url) }) as PublicClient;
        const server = await startApiServer({
          db: d.db,
          operatorToken: "op-token",
          logger: silent,
          proofSources: { publicClientFor: (id) => (id === chain.deployment.chainId ? publicClient : undefined) },
        });
        try {
          const { indexer } = indexerFor(d, {
            onIdentityTransfer: (chainId, registry, agentId) => server.proofs.recheckErc8004(chainId, registry, agentId),
          });
          const [, , owner, buyer] = chain.accounts;
          const [token, quietToken, other] = await chain.register(owner, 3);
          const registry = chain.deployment.contracts.IdentityRegistry.address.toLowerCase();
          const { ownerId } = await server.service.accounts.createOwner();
          const linked = await server.service.accounts.claimNewAgent(ownerId);
          const quiet = await server.service.accounts.claimNewAgent(ownerId);
          const unlinked = await server.service.accounts.claimNewAgent(ownerId);
          for (const [agent, id] of [
            [linked.agentId, token],
            [quiet.agentId, quietToken],
          ] as const) {
            const subject = `${chain.deployment.chainId}:${registry}:${id}`;
            await server.service.identity.recordProof({
              id: `prf_${agent}`,
              kind: "erc8004",
              ownerId,
              agentId: agent,
              subject,
              binding: `erc8004:${subject}`,
              evidence: {
                kind: "erc8004",
                subject,
                chainId: chain.deployment.chainId,
                registry,
                agentId: id.toString(),
                owner: owner.toLowerCase(),
              },
            });
          }
          await sendInOrder([
            chain.proofTx(owner, token, { success: true, riskLevel: 2, policyViolations: 0, traceRoot: traceRoot("api-1") }),
            chain.proofTx(owner, token, { success: false, riskLevel: 0, policyViolations: 1, traceRoot: traceRoot("api-2") }),
            chain.settleTx(keccak256(toHex(`api-order-1-${token}`)), token, other, 1),
          ]);
          await indexer.syncToHead();
          const get = async (p: string) => {
            const r = await fetch(`${server.url}${p}`);
            return {
              status: r.status,
              body: (r.headers.get("content-type") ?? "").includes("json") ? ((await r.json()) as Record<string, any>) : await r.text(),
            };
          };

          const derived = await get(`/v1/agents/${linked.agentId}/derived-score`);
          expect(derived.status).to.equal(200);
          expect(derived.body).to.deep.include({
            scoreType: "sdk-derived",
            executor: executorOf(token),
            source: "onchain",
            recordCount: 2,
          });
          expect((derived.body as any).result).to.include({ scoreType: "sdk-derived", total: 2 });
          expect((derived.body as any).records.map((r: any) => r.success)).to.deep.equal([true, false]);
          const network = await get(`/v1/agents/${linked.agentId}/network-score`);
          expect(network.body).to.deep.include({
            scoreType: "platform-network",
            executor: executorOf(token),
            tenths: 30,
            score: 3,
            settlements: 1,
            mismatch: null,
          });
          expect((await get(`/v1/executors/${executorOf(token)}/derived-score`)).body).to.deep.include({
            executor: executorOf(token),
            recordCount: 2,
          });
          expect((await get(`/v1/agents/${unlinked.agentId}/derived-score`)).body).to.deep.equal({
            error: {
              code: "agent_not_linked",
              message: `agent ${unlinked.agentId} has no ERC-8004 identity: prove one (kind erc8004) to link its on-chain records`,
            },
          });
          const page = (await get(`/agents/${linked.agentId}`)).body as string;
          expect(page).to.include('data-score-type="sdk-derived"').and.include('data-score-type="platform-network"');

          const post = (agentId: string, key: string, records: unknown[]) =>
            fetch(`${server.url}/v1/agents/${agentId}/summaries`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
              body: JSON.stringify({ records }),
            });
          const summary = (i: number) => ({
            txHash: `0xself${i}`,
            success: true,
            riskLevel: "high",
            policyViolations: 0,
            traceRoot: `0xroot${i}`,
          });
          const bad = await post(quiet.agentId, quiet.agentKey, [summary(1), { ...summary(2), riskLevel: "extreme" }]);
          expect(bad.status).to.equal(400);
          expect(((await bad.json()) as any).error.message).to.match(/^records\[1\]\.riskLevel: expected low\|medium\|high\|critical/);
          expect((await post(quiet.agentId, linked.agentKey, [summary(1)])).status).to.equal(401);
          const stored = await post(quiet.agentId, quiet.agentKey, [summary(1), summary(2), summary(2)]);
          expect(stored.status).to.equal(201);
          expect(await stored.json()).to.deep.include({ scoreType: "sdk-derived", source: "self-reported", accepted: 3 });
          expect(((await get(`/v1/agents/${quiet.agentId}/derived-score`)).body as any).result).to.include({ total: 2, verifiedCount: 0 });
          expect((await post(linked.agentId, linked.agentKey, [summary(3)])).status).to.equal(201);
          expect((await get(`/v1/agents/${linked.agentId}/derived-score`)).body as any).to.deep.include({
            source: "onchain",
            recordCount: 2,
          });

          expect((await get("/v1/indexer/health")).status).to.equal(200);
          await d.db.query("UPDATE chain_settlements SET verdict = 'VIOLATED' WHERE executor = $1", [executorOf(token)]);
          await chain.send([chain.settleTx(keccak256(toHex(`api-order-2-${token}`)), token, other, 2)]);
          await indexer.syncToHead();
          const health = await get("/v1/indexer/health");
          expect(health.status).to.equal(503);
          expect((health.body as any).mismatches.map((m: any) => m.executor)).to.include(executorOf(token));

          await chain.send([chain.transferTx(owner, buyer, token)]);
          await indexer.syncToHead();
          const { rows } = await d.db.query<{ removed_at: number | null; removed_reason: string | null }>(
            "SELECT removed_at, removed_reason FROM proofs WHERE id = $1",
            [`prf_${linked.agentId}`],
          );
          expect(rows[0].removed_at).to.be.a("number");
          expect(rows[0].removed_reason).to.equal("the identity token moved to another wallet");
          expect((await get(`/v1/agents/${linked.agentId}/derived-score`)).status).to.equal(404);
        } finally {
          await server.close();
        }
      },
    );
  }
});
