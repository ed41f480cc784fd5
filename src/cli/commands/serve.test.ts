import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { expect } from "chai";
import fs from "node:fs";
import os from "node:os";
import { executorId } from "../../method";
import { createTestPgDb, type TestDb } from "../../test-helpers/db";
import { deployToNode, startHardhatNode, traceRoot, type HardhatNode } from "../../test-helpers/node";

const BIN = path.resolve(__dirname, "../../../bin/vrai.js");
const OPERATOR_TOKEN = "operator-token-for-the-serve-test";

/** Starts `vrai serve` as a user would and resolves with the process and its API URL once it is ready. */
function startServe(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "serve"], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const match = /api (http:\/\/[^\s]+)\/v1/.exec(out);
      if (match) resolve({ child, url: match[1] });
    });
    child.stderr!.on("data", (chunk) => (err += chunk));
    child.once("exit", (code) => reject(new Error(`vrai serve exited with ${code}: ${err}`)));
  });
}

describe("vrai serve", () => {
  let testDb: TestDb;
  before(async () => {
    testDb = await createTestPgDb();
  });
  after(() => testDb.drop());

  it("stops with a message naming a missing or invalid variable (exit 2)", async () => {
    const result = await new Promise<{ code: number | null; err: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, "serve"], {
        env: { ...process.env, OPERATOR_TOKEN: "short", PORT: "99999" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let err = "";
      child.stderr!.on("data", (c) => (err += c));
      child.once("exit", (code) => resolve({ code, err }));
    });
    expect(result.code).to.equal(2);
    expect(result.err.trim().split("\n")).to.have.length(1);
    expect(result.err).to.contain("OPERATOR_TOKEN");
    expect(result.err).to.contain("PORT");
  });

  /** `vrai <command>` on a PGlite store in `dataDir`, logging at debug with a scheduler every second, until it exits (killed after 40 s). */
  const runToExit = (command: string, dataDir: string, env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [BIN, command], {
        env: {
          ...process.env,
          DATABASE_URL: "",
          DATA_DIR: dataDir,
          OPERATOR_TOKEN,
          LOG_LEVEL: "debug",
          SCHEDULE_INTERVAL_MS: "1000",
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout!.on("data", (c) => (out += c));
      child.stderr!.on("data", (c) => (err += c));
      // One that does not exit would go on running work in the background: stopped, and failed by its exit code (null).
      const stop = setTimeout(() => child.kill("SIGKILL"), 60_000);
      child.once("exit", (code) => {
        clearTimeout(stop);
        resolve({ code, out, err });
      });
    });
  /** What any background work, or a listener, logs: none of it may show in a start that fails. */
  const BACKGROUND_WORK =
    /daily recompute|partitions|score tree|score root|owner recompute|score cache|expired challenges|chain started|api listening|vrai ready/;

  it(
    "exits 2 at once on a taken port, naming the port and the variable to set, before any background " +
      "work starts (issue #33) (three CLI starts on PGlite: 5-15 s)",
    async () => {
      const taken = net.createServer().listen(0, "127.0.0.1");
      await new Promise((resolve) => taken.once("listening", resolve));
      const port = String((taken.address() as net.AddressInfo).port);
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-serve-port-"));
      try {
        for (const [command, env, variable] of [
          ["serve", { PORT: port }, "PORT"],
          ["serve", { PORT: "0", METRICS_PORT: port }, "METRICS_PORT"],
          ["dev", { PORT: port, CHAIN_PORT: String(Number(port) + 1), DEPLOYMENTS_DIR: path.join(dataDir, "deployments") }, "PORT"],
        ] as const) {
          const result = await runToExit(command, dataDir, env);
          expect(result.code, result.err).to.equal(2);
          expect(result.err.trim().split("\n"), result.err).to.have.length(1);
          expect(result.err).to.match(
            new RegExp(`^vrai ${command}: cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use: set ${variable} to a free port`),
          );
          // Nothing ran: no recompute, partitions, tree, anchoring or chain; nothing listened.
          expect(result.out, `${command}: ${result.out}`).to.not.match(BACKGROUND_WORK);
        }
      } finally {
        taken.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it(
    "exits 2 with one line naming DEPLOYMENT or RPC_URL, before any background work starts, for a deployment file that cannot be read, " +
      "is not one, or is of another chain than RPC_URL's, and a chain that does not answer (issue #33) (a Hardhat node, then a CLI start per case: 10-25 s)",
    async function () {
      this.timeout(120_000);
      const node = await startHardhatNode();
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-serve-deployment-"));
      try {
        const contract = (n: number) => ({ address: `0x${String(n).repeat(40)}`, blockNumber: 0 });
        const otherChain = path.join(dataDir, "mainnet.json");
        fs.writeFileSync(
          otherChain,
          JSON.stringify({
            network: "mainnet",
            chainId: 1,
            contracts: { IdentityRegistry: contract(1), AnchorRegistry: contract(2), Registry: contract(3) },
          }),
        );
        const notOne = path.join(dataDir, "not-one.json");
        fs.writeFileSync(notOne, "{ not json");
        const missing = path.join(dataDir, "missing.json");
        for (const [file, problem] of [
          [missing, `${missing}: ENOENT: no such file or directory`],
          [notOne, `${notOne}: `],
          [
            otherChain,
            `${otherChain} is for chain 1, the RPC at RPC_URL serves chain 31337: ` +
              "set DEPLOYMENT to that chain's file, or RPC_URL to chain 1",
          ],
        ] as const) {
          const result = await runToExit("serve", path.join(dataDir, "data"), { PORT: "0", RPC_URL: node.url, DEPLOYMENT: file });
          expect(result.code, result.err).to.equal(2);
          expect(result.err.trim().split("\n"), result.err).to.have.length(1);
          expect(result.err.startsWith(`vrai serve: invalid configuration: DEPLOYMENT: ${problem}`), result.err).to.equal(true);
          expect(result.out, `${file}: ${result.out}`).to.not.match(BACKGROUND_WORK);
        }
        // A chain that does not answer: one line naming RPC_URL, not an internal error.
        const closed = await runToExit("serve", path.join(dataDir, "data"), {
          PORT: "0",
          RPC_URL: "http://127.0.0.1:1",
          DEPLOYMENT: otherChain,
        });
        expect([closed.code, closed.err.trim().split("\n").length], closed.err).to.deep.equal([2, 1]);
        expect(closed.err).to.match(
          /^vrai serve: cannot reach RPC_URL http:\/\/127\.0\.0\.1:1: .*: set RPC_URL to a running chain's JSON-RPC\n$/,
        );
        expect(closed.out).to.not.match(BACKGROUND_WORK);
      } finally {
        await node.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it(
    "exits 2 with one line naming REPUTATION_*, no background work started, for a registry it cannot " +
      "read (issue #27) (a Hardhat node and a CLI start per case: 5-16 s)",
    async function () {
      this.timeout(120_000);
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-serve-reputation-"));
      try {
        const contract = (n: number) => ({ address: `0x${String(n).repeat(40)}`, blockNumber: 0 });
        const before = path.join(dataDir, "before.json");
        fs.writeFileSync(
          before,
          JSON.stringify({
            network: "old",
            chainId: 1,
            contracts: { IdentityRegistry: contract(1), AnchorRegistry: contract(2), Registry: contract(3) },
          }),
        );
        const none = await runToExit("serve", path.join(dataDir, "data"), {
          PORT: "0",
          REPUTATION_DEPLOYMENT: before,
          REPUTATION_RPC_URL: "http://127.0.0.1:1",
        });
        expect([none.code, none.err], none.out).to.deep.equal([
          2,
          `vrai serve: invalid configuration: REPUTATION_DEPLOYMENT: ${before} names no ReputationRegistry\n`,
        ]);
        const registry = `0x${"4".repeat(40)}`;
        const unreachable = await runToExit("serve", path.join(dataDir, "data"), {
          PORT: "0",
          REPUTATION_REGISTRY: registry,
          REPUTATION_RPC_URL: "http://127.0.0.1:1",
        });
        expect([unreachable.code, unreachable.err.trim().split("\n").length], unreachable.err).to.deep.equal([2, 1]);
        expect(unreachable.err).to.match(
          new RegExp(
            `^vrai serve: cannot read the reputation registry ${registry} at http://127\\.0\\.0\\.1:1 \\(.+\\): set REPUTATION_REGISTRY`,
          ),
        );
        for (const result of [none, unreachable]) expect(result.out).to.not.match(BACKGROUND_WORK);
        // A key with no registry, or no public URL to name the files under: the configuration's own check.
        const keyAlone = await runToExit("serve", path.join(dataDir, "data"), {
          PORT: "0",
          REPUTATION_PRIVATE_KEY: `0x${"ab".repeat(32)}`,
        });
        expect(keyAlone.code).to.equal(2);
        expect(keyAlone.err).to.match(
          /^vrai serve: invalid configuration: (?=.*REPUTATION_REGISTRY: REPUTATION_PRIVATE_KEY needs)(?=.*PUBLIC_URL: required)/,
        );
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it("loses no acknowledged check-in when killed with SIGKILL in the middle of a load (two vrai serve starts and a load: 6-20 s)", async () => {
    const env = { DATABASE_URL: testDb.url!, PORT: "0", OPERATOR_TOKEN, LOG_LEVEL: "silent", RATE_LIMIT_PER_MINUTE: "100000" };
    let { child, url } = await startServe(env);
    const post = (base: string, p: string, token: string | undefined, headers: Record<string, string> = {}) =>
      fetch(base + p, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
        body: "{}",
      });
    const owner = (await (await post(url, "/v1/owners", undefined)).json()) as { token: string };
    const agents: Array<{ agentId: string; agentKey: string }> = [];
    for (let i = 0; i < 150; i++)
      agents.push((await (await post(url, "/v1/agents", owner.token)).json()) as { agentId: string; agentKey: string });

    const acknowledged: Array<{ agentId: string; key: string; body: unknown }> = [];
    let next = 0;
    let killed = false;
    const worker = async () => {
      while (next < agents.length) {
        const agent = agents[next++];
        const key = `load-${agent.agentId}`;
        try {
          const res = await post(url, `/v1/agents/${agent.agentId}/checkins`, agent.agentKey, { "idempotency-key": key });
          if (res.status === 201) acknowledged.push({ agentId: agent.agentId, key, body: await res.json() });
        } catch {
          // The connection died with the process: not acknowledged, so nothing is owed.
        }
        if (!killed && acknowledged.length >= 40) {
          killed = true;
          child.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(killed).to.equal(true);
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once("exit", resolve)));

    ({ child, url } = await startServe(env));
    try {
      const { rows } = await testDb.db.query<{ agent_id: string; idempotency_key: string }>(
        "SELECT agent_id, idempotency_key FROM checkins",
      );
      const stored = new Set(rows.map((r) => `${r.agent_id}/${r.idempotency_key}`));
      for (const a of acknowledged) expect(stored.has(`${a.agentId}/${a.key}`), `${a.agentId} acknowledged but lost`).to.equal(true);
      // The same request after the restart gets its original response (V3.1).
      const first = acknowledged[0];
      const agent = agents.find((x) => x.agentId === first.agentId)!;
      const again = await post(url, `/v1/agents/${first.agentId}/checkins`, agent.agentKey, { "idempotency-key": first.key });
      expect(again.status).to.equal(201);
      expect(await again.json()).to.deep.equal(first.body);
      // The development clock is vrai dev's alone (issue #31): vrai serve has no such route, and vrai dev-clock says so.
      const clock = await fetch(`${url}/v1/dev/clock`);
      expect(clock.status).to.equal(404);
      const advance = await fetch(`${url}/v1/dev/clock/advance`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${OPERATOR_TOKEN}` },
        body: JSON.stringify({ days: 1 }),
      });
      expect([advance.status, ((await advance.json()) as { error: { code: string } }).error.code]).to.deep.equal([404, "not_found"]);
      const devClock = spawnSync(process.execPath, [BIN, "dev-clock", "advance", "--days", "1", "--api", url], {
        env: { ...process.env, OPERATOR_TOKEN },
        encoding: "utf8",
      });
      expect(devClock.status, devClock.stderr).to.equal(2);
      expect(devClock.stderr).to.equal(`vrai dev-clock: ${url} has no development clock: it is vrai dev's alone, never vrai serve's\n`);
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  });

  it(
    "runs the chain indexer beside the API with DEPLOYMENT and RPC_URL: one instance indexes, a second " +
      "stands by and takes over (a Hardhat node and two vrai serve: 6-20 s)",
    async function () {
      this.timeout(180_000);
      const node: HardhatNode = await startHardhatNode();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-serve-"));
      const indexDb = await createTestPgDb();
      try {
        const chain = await deployToNode(node.url, dir);
        const [agentId] = await chain.register(chain.accounts[2]);
        await chain.send([
          chain.proofTx(chain.accounts[2], agentId, { success: true, riskLevel: 2, policyViolations: 0, traceRoot: traceRoot("serve-1") }),
        ]);
        const env = {
          DATABASE_URL: indexDb.url!,
          PORT: "0",
          OPERATOR_TOKEN,
          LOG_LEVEL: "silent",
          RPC_URL: node.url,
          DEPLOYMENT: chain.file,
          CONFIRMATIONS: "0",
        };
        const did = executorId(chain.deployment.chainId, chain.deployment.contracts.IdentityRegistry.address, agentId);
        const recordsSeen = async (url: string, n: number) => {
          for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
            const res = await fetch(`${url}/v1/executors/${encodeURIComponent(did)}/derived-score`);
            if (res.status === 200 && ((await res.json()) as { recordCount: number }).recordCount === n) return true;
          }
          return false;
        };
        const first = await startServe(env);
        const second = await startServe(env);
        try {
          expect(await recordsSeen(first.url, 1)).to.equal(true);
          // The active instance dies; the standby takes the chain's lock and indexes what comes next.
          first.child.kill("SIGKILL");
          await chain.send([
            chain.proofTx(chain.accounts[2], agentId, {
              success: false,
              riskLevel: 0,
              policyViolations: 1,
              traceRoot: traceRoot("serve-2"),
            }),
          ]);
          expect(await recordsSeen(second.url, 2)).to.equal(true);
        } finally {
          for (const s of [first, second]) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill("SIGTERM");
        }
      } finally {
        await node.close();
        await indexDb.drop();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
