/**
 * The README's quick start as a newcomer runs it (issue #31), on a fresh copy of the repository: `npm start`
 * (vrai dev: the contracts compiled and deployed on the local chain, the service on PGlite), then the block of
 * "Five minutes with curl" as it is written, twice in a row: owner, agent, check-in, wallet proof, the score,
 * the development clock a day forward, and `vrai verify` passing. Ctrl-C then stops it with its last line.
 *
 * The copy is the repository's files as a clone has them (tracked and untracked, ignored ones aside: no
 * artifacts, typechain types, dist or data), with the repository's own node_modules linked in rather than
 * installed again: `npm install` itself is covered by src/install.test.ts (no engine warnings: every locked
 * package accepts Node 20.19) and src/sdk/package.test.ts (the SDK's tarball installed into an empty project).
 */
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { startDev, type DevProcess } from "./test-helpers/dev-process";
import { readmeBlocks } from "./test-helpers/readme";

const ROOT = path.resolve(__dirname, "..");
const CHECKED = /^✔ /;

/** The repository as a fresh clone has it, in a new directory, with the repository's node_modules linked in. */
function freshCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-quick-start-"));
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT }).toString("utf8").split("\0").filter((f) => f !== "" && fs.existsSync(path.join(ROOT, f)));
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  return dir;
}

/** The environment a person's shell has: nothing of this test run's npm, or of a service's configuration. */
function shellEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.toLowerCase().startsWith("npm_") || ["DATA_DIR", "DATABASE_URL", "OPERATOR_TOKEN", "RPC_URL", "PORT", "CHAIN_PORT", "VRAI_API_URL"].includes(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

describe("the README's quick start on a fresh copy of the repository (issue #31)", function () {
  // A fresh copy compiles the contracts (offline solc, about 15 s) before vrai dev is ready.
  this.timeout(300_000);
  let dir: string;
  let dev: DevProcess | undefined;

  before(() => {
    dir = freshCopy();
  });
  after(async () => {
    if (dev && dev.child.exitCode === null && dev.child.signalCode === null) {
      process.kill(-dev.child.pid!, "SIGKILL");
      await dev.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("npm start, then the walkthrough as written, twice: owner, agent, check-in, wallet proof, score 230, dev clock a day on, vrai verify passes; Ctrl-C stops it (compiles the contracts: 30-60 s)", async () => {
    expect(fs.existsSync(path.join(dir, "artifacts")), "a fresh copy has no compiled contracts").to.equal(false);
    // As the README's first section says: npm start, at the root of the copy, its data in ./data.
    dev = await startDev(["npm", "start"], dir, { cwd: dir, detached: true, env: { LOG_LEVEL: "info" } });
    const rpc = `http://127.0.0.1:${dev.chainPort}`;
    expect(dev.output()).to.contain("chain started: contracts deployed (deployments/localhost.json)");

    const [walkthrough] = readmeBlocks("Five minutes with curl", "sh");
    expect(walkthrough).to.contain("npx vrai dev-clock advance --days 1").and.contain("npx vrai verify $ID");
    const days: string[] = [];
    for (const run of [1, 2]) {
      const { stdout, stderr } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", walkthrough], {
        cwd: dir, env: shellEnv({ API: dev.url, RPC: rpc }), maxBuffer: 16 * 2 ** 20,
      }).catch((error: { stdout: string; stderr: string; code: number }) => {
        throw new Error(`run ${run} of the walkthrough exited with ${error.code}:\n${error.stdout}\n${error.stderr}`);
      });
      const lines = stdout.trim().split("\n");
      const checkIn = JSON.parse(lines[0]) as { agentId: string; result: string; next_heartbeat_s: number };
      expect(checkIn, `run ${run}`).to.include({ result: "counted", next_heartbeat_s: 3600 });
      expect(lines.slice(1, 3), `run ${run}`).to.deep.equal(["wallet", "230"]);
      expect(lines[3]).to.match(/^[0-9a-f]{64} {2}-$/);
      expect(lines[4]).to.equal("agent page: 200");
      // The development clock: a day forward, that day's daily scores computed and their root anchored on chain.
      expect(lines[5]).to.equal("development clock moved 1 day forward (the chain's time with it)");
      const day = /^(\d{4}-\d\d-\d\d): (\d+) daily scores?, root anchored on chain in block \d+ \(tx 0x[0-9a-f]{64}\)$/.exec(lines[6]);
      expect(day, lines[6]).to.not.equal(null);
      expect(Number(day![2]), `run ${run}: every agent claimed so far`).to.equal(run);
      days.push(day![1]);
      expect(lines[7]).to.match(new RegExp(`^now \\S+ on the service's clock, ${run} days? ahead of the machine's; next daily recompute at \\S+$`));
      // vrai verify: the agent's latest daily score, every step held.
      expect(lines[8]).to.match(new RegExp(`^verifying the daily Vrai score \\d+ of agent ${checkIn.agentId} on ${day![1]} `));
      expect(lines.slice(9, 14).every((l) => CHECKED.test(l)), lines.slice(9).join("\n")).to.equal(true);
      expect(lines.slice(14), `run ${run}`).to.deep.equal(["verified"]);
      expect(stderr, `run ${run}: nothing went wrong`).to.equal("");
    }
    // The second run's day is the day after the first's: each run moved the clock by one.
    expect(Date.parse(`${days[1]}T00:00:00Z`) - Date.parse(`${days[0]}T00:00:00Z`)).to.equal(86_400_000);

    process.kill(-dev.child.pid!, "SIGINT");
    expect(await dev.exited, dev.output()).to.deep.equal({ code: 0, signal: null });
    expect(dev.output().trimEnd().split("\n").pop()).to.equal("vrai stopped");
  });
});
