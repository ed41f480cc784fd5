import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import pino from "pino";
import { systemClock } from "../service/clock";
import { createDerivedScores } from "../service/derived-scores";
import { createNetworkScores } from "../service/network-scores";
import { createChainStore } from "../store/chain-store";
import { createMigratedTestDb, type TestDb } from "../test-helpers/db";
import { eventually } from "../test-helpers/eventually";
import { deployToNode, startHardhatNode, traceRoot, type HardhatNode, type NodeDriver, type Tx } from "../test-helpers/node";
import { readFollowedDeployment } from "../chain/deployment";
import { createIndexer } from "../indexer/indexer";
import { createChainRpc } from "../indexer/rpc";
import { dumpIndexedState } from "../indexer/test-support";
import { parseIndexerConfig } from "./config";

const ROOT = path.join(__dirname, "..", "..");

type IndexerProcess = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

describe("the indexer process (vrai indexer)", function () {
  this.timeout(120_000);
  let node: HardhatNode;
  let chain: NodeDriver;
  let dir: string;
  const dbs: TestDb[] = [];
  const children: ChildProcess[] = [];

  before(async () => {
    node = await startHardhatNode();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-indexer-main-"));
    chain = await deployToNode(node.url, dir);
    const [, , owner] = chain.accounts;
    const agents = await chain.register(owner, 4);
    await chain.setAutomine(false);
    for (let block = 0; block < 60; block++) {
      const txs: Tx[] = [];
      for (let i = 0; i < 12; i++) {
        const n = block * 12 + i;
        txs.push(
          chain.proofTx(owner, agents[n % 4], {
            success: n % 5 !== 0,
            riskLevel: (n % 4) as 0 | 1 | 2 | 3,
            policyViolations: n % 9 === 0 ? 2 : 0,
            traceRoot: traceRoot(`m${n % 50}`),
          }),
        );
      }
      if (block % 10 === 0) txs.push(chain.anchorTx(chain.accounts[1], traceRoot(`m${block / 10}`)));
      await chain.send(txs);
      await chain.mine();
    }
    await chain.setAutomine(true);
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await Promise.all(dbs.map((d) => d.drop()));
    await node?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function freshDb(): Promise<TestDb> {
    const d = await createMigratedTestDb();
    dbs.push(d);
    return d;
  }

  function startIndexer(d: TestDb, env: Record<string, string> = {}): IndexerProcess {
    const child = spawn(process.execPath, [path.join("bin", "vrai.js"), "indexer"], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: d.url as string,
        RPC_URL: node.url,
        DEPLOYMENT: chain.file,
        CONFIRMATIONS: "0",
        POLL_INTERVAL_MS: "100",
        LOG_LEVEL: "info",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let output = "";
    child.stdout?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    child.stderr?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    return { child, output: () => output, exited };
  }

  async function checkpointOf(d: TestDb): Promise<number> {
    const { rows } = await d.db
      .query<{ block_number: number }>("SELECT block_number FROM indexer_checkpoints")
      .catch(() => ({ rows: [] as Array<{ block_number: number }> }));
    return rows[0]?.block_number ?? -1;
  }

  /** How long a wait on an indexer of these tests may take: seconds to backfill or take over on a loaded machine. */
  const INDEXER_WAIT_MS = 60_000;

  async function synced(d: TestDb): Promise<boolean> {
    const head = await chain.blockNumber();
    if ((await checkpointOf(d)) !== head) return false;
    const { rows } = await d.db.query<{ n: number }>("SELECT count(*)::int AS n FROM derived_dirty");
    const { rows: scored } = await d.db.query<{ n: number }>("SELECT count(*)::int AS n FROM derived_scores");
    return rows[0].n === 0 && scored[0].n > 0;
  }

  async function uninterruptedDump() {
    const d = await freshDb();
    const store = createChainStore(d.db);
    await createIndexer({
      store,
      derivedScores: createDerivedScores({ store }),
      networkScores: createNetworkScores(),
      rpc: createChainRpc({ url: node.url }),
      deployment: readFollowedDeployment(chain.file),
      confirmations: 0,
      clock: systemClock,
      logger: pino({ level: "silent" }),
    }).syncToHead();
    return dumpIndexedState(d.db);
  }

  it("stops with a message naming the variable when the configuration is invalid", () => {
    expect(() =>
      parseIndexerConfig({ DATABASE_URL: "postgresql://x/y", RPC_URL: "http://127.0.0.1:1", DEPLOYMENT: "d.json", CONFIRMATIONS: "-1" }),
    ).to.throw(/^invalid configuration: CONFIRMATIONS:/);
    expect(() => parseIndexerConfig({ RPC_URL: "http://127.0.0.1:1", DEPLOYMENT: "d.json" })).to.throw(
      /^invalid configuration: DATABASE_URL:/,
    );
  });

  it(
    "killed with SIGKILL in the middle of a backfill, resumes after a restart to the same rows as an " +
      "uninterrupted run (interrupted and uninterrupted indexer runs over a long backfill: 5-16 s)",
    async () => {
      const d = await freshDb();
      const start = readFollowedDeployment(chain.file).startBlock;
      const head = await chain.blockNumber();
      const first = startIndexer(d, { INDEXER_MAX_RANGE: "1" });
      await eventually(async () => (await checkpointOf(d)) > start + 20, "the backfill to be under way", INDEXER_WAIT_MS);
      first.child.kill("SIGKILL");
      await first.exited;
      const killedAt = await checkpointOf(d);
      expect(killedAt).to.be.below(head);

      const second = startIndexer(d, { INDEXER_MAX_RANGE: "7" });
      await eventually(() => synced(d), "the restarted indexer to reach the head", INDEXER_WAIT_MS);
      second.child.kill("SIGTERM");
      expect(await second.exited).to.equal(0);
      expect(await dumpIndexedState(d.db)).to.deep.equal(await uninterruptedDump());
    },
  );

  it("keeps a second instance on standby until the first dies, then the second takes over (two vrai indexer processes and a Hardhat node: ~10 s)", async () => {
    const d = await freshDb();
    const active = startIndexer(d);
    await eventually(() => synced(d), "the first instance to reach the head", INDEXER_WAIT_MS);
    const standby = startIndexer(d);
    await eventually(async () => standby.output().includes("standing by"), "the second instance to stand by", INDEXER_WAIT_MS);
    const [, , owner] = chain.accounts;
    const [agent] = await chain.register(owner);

    active.child.kill("SIGKILL");
    await active.exited;
    await chain.send([chain.proofTx(owner, agent, { success: true, riskLevel: 3, policyViolations: 0, traceRoot: traceRoot("takeover") })]);
    await eventually(() => synced(d), "the standby to take over and index the new block", INDEXER_WAIT_MS);
    expect(standby.output()).to.match(/indexer lock acquired/);
    standby.child.kill("SIGTERM");
    await standby.exited;
    expect(await dumpIndexedState(d.db)).to.deep.equal(await uninterruptedDump());
  });
});
