import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { createPublicClient, createWalletClient, getAddress, http } from "viem";
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { identityRegistryAbi } from "../../chain/abi/identityRegistry";
import { reputationRegistryAbi } from "../../chain/abi/reputationRegistry";
import { executorId } from "../../method";
import { createVraiAgent, readDeployment, readNetworkScore, registryAddressOf, submitProof } from "../../sdk";
import { launchBrowser } from "../../test-helpers/browser";

const BIN = path.resolve(__dirname, "../../../bin/vrai.js");

type Running = { child: ChildProcess; api: string; chain: string; out: () => string; exited: Promise<number | null> };

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `vrai dev` started as `npm start` does, in `cwd`: its output so far, its exit code once it exits, and its ready line once out. */
type Launched = { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null>; ready: Promise<Running> };

function launchDev(cwd: string, chainPort: number): Launched {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0", CHAIN_PORT: String(chainPort), LOG_LEVEL: "warn" };
  for (const name of ["DATABASE_URL", "OPERATOR_TOKEN", "RPC_URL", "DATA_DIR", "DEPLOYMENTS_DIR", "HARDHAT_NETWORK", "HARDHAT_CONFIG"])
    delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith("ANCHOR_")) delete env[name];
  const child = spawn(process.execPath, [BIN, "dev"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const ready = new Promise<Running>((resolve, reject) => {
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const line = /vrai ready: api (\S+)\/v1 .* chain (\S+) \(/.exec(out);
      if (line) resolve({ child, api: line[1], chain: line[2], out: () => out, exited });
    });
    void exited.then((code) => reject(new Error(`vrai dev exited with ${code} before ready: ${out}${err}`)));
  });
  child.stderr!.on("data", (chunk) => (err += chunk));
  return { child, out: () => out, err: () => err, exited, ready };
}

/** Runs `vrai dev` as `npm start` does, in `cwd`, and resolves once its ready line is out. */
const startDev = (cwd: string, chainPort: number): Promise<Running> => launchDev(cwd, chainPort).ready;

/** Polls `read` until it returns a value, for at most `ms`. */
async function eventually<T>(read: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The indexer's view of an executor, once it holds `records` on-chain records. */
async function indexedDerived(
  api: string,
  did: string,
  records: number,
): Promise<{ recordCount: number; result: { total: number }; source: string }> {
  return eventually(async () => {
    const body = (await (await fetch(`${api}/v1/executors/${encodeURIComponent(did)}/derived-score`)).json()) as {
      recordCount: number;
      result: { total: number };
      source: string;
    };
    return body.recordCount === records && body.result.total === records ? body : undefined;
  });
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}

describe("vrai dev (npm start)", function () {
  this.timeout(180_000);
  let dir: string;
  let running: Running | undefined;
  const started: Running[] = [];

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-dev-"));
  });
  afterEach(async () => {
    for (const leftover of started.splice(0)) {
      if (leftover.child.exitCode === null && leftover.child.signalCode === null) {
        leftover.child.kill("SIGKILL");
        await leftover.exited;
      }
    }
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(
    "end to end: chain, contracts and service from one command; owner, claim, SDK check-in, wallet proof, on-chain record indexed, " +
      "Vrai score, agent page in Chromium; SIGTERM and restart keep everything (vrai dev started twice, contracts deployed, Chromium: 30-60 s)",
    async () => {
      const chainPort = await freePort();
      running = await startDev(dir, chainPort);
      started.push(running);
      expect(running.out()).to.contain("chain started: contracts deployed (deployments/localhost.json)");
      expect(running.chain).to.equal(`http://127.0.0.1:${chainPort}`);
      expect(running.out()).to.match(/agent pages http:\/\/127\.0\.0\.1:\d+\/agents\/\{id\}/);

      // The chain answers, and the deployment file describes contracts that exist on it.
      expect(await rpc(running.chain, "eth_chainId")).to.equal("0x7a69");
      const deployment = readDeployment(path.join(dir, "deployments", "localhost.json"));
      expect(deployment).to.include({ network: "localhost", chainId: 31337 });
      const registry = registryAddressOf(deployment);
      expect(await rpc(running.chain, "eth_getCode", [registry, "latest"])).to.not.equal("0x");
      const publicClient = createPublicClient({ chain: hardhat, transport: http(running.chain) });
      expect(await readNetworkScore(publicClient, registry, 0n)).to.include({ scoreType: "platform-network", score: 0, settlements: 0 });

      // An ERC-8004 identity and a proof record, signed locally (eth_sendRawTransaction) by Hardhat's second account.
      const wallet = createWalletClient({
        chain: hardhat,
        transport: http(running.chain),
        account: mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 1 }),
      });
      const identity = deployment.contracts.IdentityRegistry.address as `0x${string}`;
      await publicClient.waitForTransactionReceipt({
        hash: await wallet.writeContract({
          address: identity,
          abi: identityRegistryAbi,
          functionName: "register",
          args: ["ipfs://dev-agent"],
        }),
      });
      const proof = await submitProof(
        { wallet, publicClient },
        { registry, agentId: 0n, success: true, riskLevel: "low", policyViolations: 0, traceRoot: `0x${"ab".repeat(32)}` },
      );
      const proofBlock = await publicClient.getBlock({ blockNumber: BigInt(proof.blockNumber) });
      // The indexer, beside the API on the same store, picks the record up.
      const did = executorId(31337, identity, 0n);
      expect(await indexedDerived(running.api, did, 1)).to.include({ source: "onchain" });

      // The API answers; an owner, an agent and a check-in through the SDK.
      const owner = (await (
        await fetch(`${running.api}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      ).json()) as { ownerId: string; token: string };
      const claim = (await (
        await fetch(`${running.api}/v1/agents`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` },
          body: "{}",
        })
      ).json()) as { agentId: string; agentKey: string };
      const checkIn = await createVraiAgent({ baseUrl: running.api, agentId: claim.agentId, agentKey: claim.agentKey }).checkIn();
      expect(checkIn).to.include({ result: "counted", next_heartbeat_s: 3600 });
      // A wallet proof (V6): the owner signs the server's challenge with its wallet.
      const ownerAuth = { "content-type": "application/json", authorization: `Bearer ${owner.token}` };
      const challenge = (await (
        await fetch(`${running.api}/v1/proofs/challenges`, {
          method: "POST",
          headers: ownerAuth,
          body: JSON.stringify({ kind: "wallet", subject: wallet.account.address }),
        })
      ).json()) as { id: string; message: string };
      const signature = await wallet.account.signMessage({ message: challenge.message });
      const proved = await fetch(`${running.api}/v1/proofs`, {
        method: "POST",
        headers: ownerAuth,
        body: JSON.stringify({
          challengeId: challenge.id,
          evidence: { address: wallet.account.address, signature, signatureType: "eip191" },
        }),
      });
      expect(proved.status).to.equal(201);
      // The Vrai score (claim 100 + wallet 30 + integrity 100), apart from the derived score read above. A wallet
      // proof counts for every agent of the owner: they are recomputed in the background, so it is asked again until then.
      let score = { scoreType: "", total: 0 };
      for (let i = 0; i < 50 && score.total !== 230; i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 200));
        score = (await (await fetch(`${running.api}/v1/agents/${claim.agentId}/score`)).json()) as { scoreType: string; total: number };
      }
      expect(score).to.include({ scoreType: "vrai", total: 230 });
      // The agent page, as a person sees it in a browser.
      const browser = await launchBrowser();
      try {
        const tab = await browser.newPage();
        const response = await tab.goto(`${running.api}/agents/${claim.agentId}`);
        expect(response?.status()).to.equal(200);
        const text = await tab.locator("body").innerText();
        expect(text).to.contain("230");
        expect(text).to.contain("200–399");
        await tab.screenshot({ path: path.join(dir, "agent-page.png") });
      } finally {
        await browser.close();
      }
      // vrai dev-identity (issue #31): an ERC-8004 identity for a new wallet, given to it and funded, its token id and proof subject
      // printed.
      const newAccount = privateKeyToAccount(generatePrivateKey());
      const newWallet = newAccount.address;
      const { PORT: _p, CHAIN_PORT: _c, DATA_DIR: _d, RPC_URL: _r, DEPLOYMENTS_DIR: _dd, ...plainEnv } = process.env;
      const minted = spawnSync(process.execPath, [BIN, "dev-identity", newWallet, "--rpc", running.chain], {
        cwd: dir,
        env: plainEnv,
        encoding: "utf8",
      });
      expect(minted.status, minted.stderr).to.equal(0);
      const tokenId = BigInt(/^token id: (\d+)$/m.exec(minted.stdout)![1]);
      expect(minted.stdout).to.contain(
        `ERC-8004 identity ${tokenId} minted for ${newWallet} (IdentityRegistry ${getAddress(identity)}, chain 31337, tx 0x`,
      );
      expect(minted.stdout).to.contain("; the wallet was given 1 ETH");
      expect(
        await publicClient.readContract({ address: identity, abi: identityRegistryAbi, functionName: "ownerOf", args: [tokenId] }),
      ).to.equal(newWallet);
      expect(await publicClient.getBalance({ address: newWallet })).to.equal(10n ** 18n);
      const subject = /^erc8004 proof subject: (\S+)$/m.exec(minted.stdout)![1];
      expect(subject).to.equal(`31337:${identity.toLowerCase()}:${tokenId}`);
      const erc8004Challenge = await fetch(`${running.api}/v1/proofs/challenges`, {
        method: "POST",
        headers: ownerAuth,
        body: JSON.stringify({ kind: "erc8004", subject, agentId: claim.agentId }),
      });
      expect(erc8004Challenge.status).to.equal(201);
      // Done as the challenge says: its message signed by the token's owner (the minted wallet), the evidence shown with the signature
      // filled in.
      const { id: erc8004ChallengeId, instructions } = (await erc8004Challenge.json()) as {
        id: string;
        instructions: { sign: { message: string; by: string }; evidence: Record<string, string | number> };
      };
      expect(instructions.sign.by).to.equal(`the owner of token ${tokenId} of ${identity.toLowerCase()} on chain 31337`);
      expect(Object.keys(instructions.evidence).filter((k) => /^<.+>$/.test(String(instructions.evidence[k])))).to.deep.equal([
        "signature",
      ]);
      const erc8004Proof = await fetch(`${running.api}/v1/proofs`, {
        method: "POST",
        headers: ownerAuth,
        body: JSON.stringify({
          challengeId: erc8004ChallengeId,
          evidence: { ...instructions.evidence, signature: await newAccount.signMessage({ message: instructions.sign.message }) },
        }),
      });
      expect(erc8004Proof.status, await erc8004Proof.clone().text()).to.equal(201);
      expect(await erc8004Proof.json()).to.include({ kind: "erc8004", subject });
      // Checked on vrai dev's chain (its ownerOf), and counted: claim 100 + wallet 30 + ERC-8004 50 + integrity 100.
      const withIdentity = (await (await fetch(`${running.api}/v1/agents/${claim.agentId}/score`)).json()) as { total: number };
      expect(withIdentity.total).to.equal(280);
      const holder = (await (await fetch(`${running.api}/v1/erc8004/31337/${identity}/${tokenId}`)).json()) as { agentId: string };
      expect(holder.agentId).to.equal(claim.agentId);
      // Vrai's feedback in the local ReputationRegistry (issue #27), turned on by the owner; given once the next day is anchored.
      expect(running.out()).to.contain(`ERC-8004 feedback: ReputationRegistry ${deployment.contracts.ReputationRegistry?.address}`);
      const publishing = await fetch(`${running.api}/v1/agents/${claim.agentId}/erc8004-publishing`, {
        method: "PUT",
        headers: ownerAuth,
        body: JSON.stringify({ enabled: true }),
      });
      expect(publishing.status, await publishing.clone().text()).to.equal(200);
      expect(await publishing.json()).to.deep.include({ enabled: true });
      const elsewhere = spawnSync(process.execPath, [BIN, "dev-identity", newWallet, "--rpc", "http://127.0.0.1:1"], {
        cwd: dir,
        env: plainEnv,
        encoding: "utf8",
      });
      expect([elsewhere.status, elsewhere.stderr]).to.deep.equal([2, `${elsewhere.stderr.split("\n")[0]}\n`]);
      expect(elsewhere.stderr).to.match(/^vrai dev-identity: cannot reach the chain at http:\/\/127\.0\.0\.1:1: is vrai dev running\?/);
      const operatorToken = fs.readFileSync(path.join(dir, "data", "operator-token"), "utf8");
      // The data directory is this process's alone (issue #33): a second command on it is refused at once, naming it.
      const { PORT: _port, CHAIN_PORT: _chain, DATA_DIR: _data, DATABASE_URL: _db, ...env } = process.env;
      const recompute = spawnSync(process.execPath, [BIN, "recompute"], { cwd: dir, env, encoding: "utf8" });
      expect(recompute.status, recompute.stderr).to.equal(2);
      expect(recompute.stderr).to.match(
        new RegExp(
          `^vrai recompute: data directory \\./data is in use by vrai dev \\(pid ${running.child.pid}, since [^)]+\\): ` +
            ".*stop that one first.*\n$",
        ),
      );
      const second = spawnSync(process.execPath, [BIN, "dev"], {
        cwd: dir,
        env: { ...env, PORT: "0", CHAIN_PORT: String(await freePort()) },
        encoding: "utf8",
      });
      expect(second.status, second.stderr).to.equal(2);
      expect(second.stderr).to.match(/^vrai dev: data directory \.\/data is in use by vrai dev/);
      expect(second.stdout).to.not.contain("chain started");

      // The development clock a day forward (issue #31): the chain's time with it, through the journal the restart replays.
      const advanced = spawnSync(process.execPath, [BIN, "dev-clock", "advance", "--days", "1", "--api", running.api], {
        cwd: dir,
        env: plainEnv,
        encoding: "utf8",
      });
      expect(advanced.status, advanced.stderr).to.equal(0);
      expect(advanced.stdout).to.match(
        new RegExp(
          String.raw`^development clock moved 1 day forward \(the chain's time with it\)\n` +
            String.raw`\d{4}-\d\d-\d\d: 1 daily score, root anchored on chain in block \d+`,
        ),
      );
      const movedBlock = await publicClient.getBlock();
      expect(Number(movedBlock.timestamp)).to.be.at.least(Math.floor(Date.now() / 1000) + 86_400 - 60);
      // The day's score given as feedback, from the local publisher, read back from the registry.
      const daily = (await (await fetch(`${running.api}/v1/agents/${claim.agentId}/scores`)).json()) as {
        scores: Array<{ total: number }>;
      };
      const reputation = deployment.contracts.ReputationRegistry!.address;
      const publisher = mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: 19 }).address;
      const summary = await publicClient.readContract({
        address: reputation,
        abi: reputationRegistryAbi,
        functionName: "getSummary",
        args: [tokenId, [publisher], "vraiScore", ""],
      });
      expect(summary).to.deep.equal([1n, BigInt(daily.scores.at(-1)!.total), 0]);

      running.child.kill("SIGTERM");
      expect(await running.exited).to.equal(0);
      expect(running.out()).to.contain("vrai stopped");
      // Private to its user: the directory 0700, every file (the operator token, the chain journal, PGlite's) 0600.
      const dataDir = path.join(dir, "data");
      expect((fs.statSync(dataDir).mode & 0o777).toString(8)).to.equal("700");
      for (const entry of fs.readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
        const mode = (fs.statSync(path.join(entry.parentPath, entry.name)).mode & 0o777).toString(8);
        expect(mode, path.join(entry.parentPath, entry.name)).to.equal(entry.isDirectory() ? "700" : "600");
      }
      expect(await rpc(running.chain, "eth_chainId").catch(() => "closed")).to.equal("closed");

      const restartedAt = Math.floor(Date.now() / 1000);
      running = await startDev(dir, chainPort);
      started.push(running);
      expect(running.out()).to.match(/chain restored: \d+ calls replayed from data\/chain\.jsonl/);
      // The same blocks, so the same identity and proof record, as before the restart.
      const restored = createPublicClient({ chain: hardhat, transport: http(running.chain) });
      expect((await restored.getBlock({ blockNumber: BigInt(proof.blockNumber) })).hash).to.equal(proofBlock.hash);
      expect(await restored.readContract({ address: identity, abi: identityRegistryAbi, functionName: "ownerOf", args: [0n] })).to.equal(
        wallet.account.address,
      );
      expect((await restored.getTransactionReceipt({ hash: proof.txHash })).status).to.equal("success");
      // The indexer goes on from its checkpoint on the restored chain.
      await submitProof(
        { wallet, publicClient: restored },
        { registry, agentId: 0n, success: false, riskLevel: "high", policyViolations: 1, traceRoot: `0x${"cd".repeat(32)}` },
      );
      expect(await indexedDerived(running.api, did, 2)).to.include({ source: "onchain" });
      // Chain time goes on from now on the development clock (a day ahead, kept in ./data), not from the last block before the restart.
      expect((await restored.getBlock({ blockNumber: movedBlock.number })).hash).to.equal(movedBlock.hash);
      expect(Number((await restored.getBlock()).timestamp)).to.be.at.least(restartedAt + 86_400);
      expect(((await (await fetch(`${running.api}/v1/dev/clock`)).json()) as { offsetDays: number }).offsetDays).to.equal(1);
      const me = await fetch(`${running.api}/v1/owners/me`, { headers: { authorization: `Bearer ${owner.token}` } });
      expect(me.status).to.equal(200);
      expect(await me.json()).to.deep.equal({ ownerId: owner.ownerId, agents: [claim.agentId], nextCursor: null });
      const scoreAfter = (await (await fetch(`${running.api}/v1/agents/${claim.agentId}/score`)).json()) as { total: number };
      // The wallet and ERC-8004 proofs kept.
      expect(scoreAfter.total).to.equal(280);
      expect(fs.readFileSync(path.join(dir, "data", "operator-token"), "utf8")).to.equal(operatorToken);

      running.child.kill("SIGINT");
      expect(await running.exited).to.equal(0);
    },
  );

  it(
    "of two vrai dev started together on one data directory, one runs and the other exits 2 at once " +
      "with one line naming the first's PID, before its chain or anything else starts (issue #33) (two vrai dev, one of them ready: 10-30 s)",
    async () => {
      const own = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-dev-two-"));
      try {
        const both = [launchDev(own, await freePort()), launchDev(own, await freePort())];
        for (const launched of both)
          void launched.ready.then(
            (running) => started.push(running),
            () => undefined,
          );
        const loser = await Promise.race(both.map((launched) => launched.exited.then(() => launched)));
        const winner = both.find((launched) => launched !== loser)!;
        expect(await loser.exited, loser.err()).to.equal(2);
        expect(loser.err()).to.match(
          new RegExp(`^vrai dev: data directory \\./data is in use by vrai dev \\(pid ${winner.child.pid}, since [^)]+\\): [^\\n]*\\n$`),
        );
        // Nothing of it ran: no operator token written or read, no chain.
        expect(loser.out()).to.equal("");
        const running = await winner.ready;
        expect(running.out()).to.contain("chain started: contracts deployed");
        expect((await fetch(`${running.api}/v1/method`)).status).to.equal(200);
        running.child.kill("SIGTERM");
        expect(await running.exited).to.equal(0);
      } finally {
        fs.rmSync(own, { recursive: true, force: true });
      }
    },
  );

  // Goes on from the ./data the previous test left: its chain journal, tampered with here.
  it("redeploys on an empty chain, and says so, when the chain journal cannot be replayed (vrai dev redeploys the contracts: 10-20 s)", async () => {
    const chainPort = await freePort();
    const journal = path.join(dir, "data", "chain.jsonl");
    const lines = fs.readFileSync(journal, "utf8").trimEnd().split("\n");
    const last = JSON.parse(lines[lines.length - 1]) as { head: string };
    lines[lines.length - 1] = JSON.stringify({ ...last, head: `0x${"00".repeat(32)}` });
    fs.writeFileSync(journal, `${lines.join("\n")}\n`);

    running = await startDev(dir, chainPort);
    started.push(running);
    expect(running.out()).to.match(
      new RegExp(
        String.raw`chain restarted empty \(call \d+ \(\w+\) led to block \d+ 0x[0-9a-f]{64}, not 0x0{64}; ` +
          String.raw`journal kept in data\/chain\.jsonl\.unreplayable-\d+\): ` +
          String.raw`contracts redeployed \(deployments\/localhost\.json rewritten\); Vrai data in \.\/data kept`,
      ),
    );
    const deployment = readDeployment(path.join(dir, "deployments", "localhost.json"));
    expect(await rpc(running.chain, "eth_getCode", [registryAddressOf(deployment), "latest"])).to.not.equal("0x");
    // Three deployments and three role grants (block 6), maybe a daily anchor after them.
    expect(Number(await rpc(running.chain, "eth_blockNumber"))).to.be.at.least(6);
    // The indexer finds the chain it had indexed gone and follows the new one.
    const health = await eventually(async () => {
      const body = (await (await fetch(`${running!.api}/v1/indexer/health`)).json()) as {
        status: string;
        checkpoints: Array<{ chainId: number; blockNumber: number }>;
      };
      return body.checkpoints.some((c) => c.chainId === 31337 && c.blockNumber >= 6) ? body : undefined;
    });
    expect(health.status).to.equal("ok");

    running.child.kill("SIGTERM");
    expect(await running.exited).to.equal(0);
  });
});
