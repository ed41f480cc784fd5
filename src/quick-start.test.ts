/**
 * The README's quick start as a newcomer runs it (issue #31), on a fresh `git clone` of this checkout's HEAD:
 * `npm ci` (the locked packages, and the `prepare` build of dist/vrai.cjs), `npm start` (vrai dev: the contracts
 * compiled and deployed on the local chain, the service on PGlite), then the block of "Five minutes with curl" as
 * it is written, twice in a row: owner, agent, check-in, wallet proof, the score, the development clock a day
 * forward, and `vrai verify` passing; the second time followed by the block of "Vrai in ERC-8004" in the same shell
 * (an ERC-8004 identity proven, publishing on, a day forward, `vrai verify --erc8004` passing from the registry).
 * Ctrl-C then stops it with its last line.
 *
 * What it tests is the commit, as CI's clean clone has it: in a checkout with uncommitted changes, they are not
 * in the clone (the test says so, and tests HEAD). The install needs the npm registry, or npm's cache warm
 * (`--prefer-offline`).
 */
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { startDev, type DevProcess } from "./test-helpers/dev-process";
import { npxInstalls, npxInstallsFrom, removeNpxInstallsFrom } from "./test-helpers/npx-cache";
import { readmeBlocks } from "./test-helpers/readme";

const ROOT = path.resolve(__dirname, "..");
const CHECKED = /^✔ /;
const run = promisify(execFile);

/** A fresh clone of this checkout's HEAD in a new directory: only what is committed, nothing installed or built. */
function freshClone(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-quick-start-"));
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT }).toString().trim();
  execFileSync("git", ["clone", "--quiet", "--no-checkout", ROOT, dir]);
  execFileSync("git", ["checkout", "--quiet", "--detach", head], { cwd: dir });
  if (execFileSync("git", ["status", "--porcelain"], { cwd: ROOT }).length > 0) {
    console.log(`      (testing the clone of HEAD ${head.slice(0, 12)}: this checkout's uncommitted changes are not in it)`);
  }
  return dir;
}

/** The environment a person's shell has: nothing of this test run's npm, or of a service's configuration. */
function shellEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (
      name.toLowerCase().startsWith("npm_") ||
      ["DATA_DIR", "DATABASE_URL", "OPERATOR_TOKEN", "RPC_URL", "PORT", "CHAIN_PORT", "VRAI_API_URL"].includes(name)
    )
      continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

describe("the README's quick start on a fresh clone of the repository (issue #31)", function () {
  // npm ci (35-40 s with npm's cache warm), then vrai dev compiles the contracts (offline solc, about 15 s) before it is ready.
  this.timeout(600_000);
  let dir: string;
  let dev: DevProcess | undefined;
  let npxBefore: Set<string>;

  before(() => {
    dir = freshClone();
    npxBefore = npxInstalls();
  });
  after(async () => {
    if (dev && dev.child.exitCode === null && dev.child.signalCode === null) {
      process.kill(-dev.child.pid!, "SIGKILL");
      await dev.exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
    // Were `npx vrai` to install the clone into npm's cache (the test fails then), nothing of it is left there.
    removeNpxInstallsFrom(dir, npxBefore);
  });

  it(
    "npm ci, npm start, then the walkthrough as written, twice: owner, agent, check-in, wallet proof, score 230, dev clock a day on, " +
      "vrai verify passes; Ctrl-C stops it (about a minute, npm ci half of it)",
    async () => {
      for (const absent of ["node_modules", "dist", "artifacts", "typechain-types"])
        expect(fs.existsSync(path.join(dir, absent)), `a fresh clone has no ${absent}`).to.equal(false);
      // `npx vrai` before npm install: the checkout's package is named vrai and declares no bin, so npx stops there and
      // never looks for a package "vrai" on the registry (here one on a closed loopback port, which would refuse).
      const early = await run("npx", ["vrai", "--help"], {
        cwd: dir,
        env: shellEnv({ npm_config_registry: "http://127.0.0.1:9/" }),
      }).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => error,
      );
      expect(early.code, early.stderr).to.not.equal(0);
      expect(early.stderr).to.contain("could not determine executable to run").and.not.contain("127.0.0.1:9");
      const started = Date.now();
      // npm install as the README says, from the lock file: every package, then the prepare script's build.
      const install = await run("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], {
        cwd: dir,
        env: shellEnv({}),
        maxBuffer: 16 * 2 ** 20,
      });
      expect(install.stdout).to.match(/^> vrai@[^ ]+ prepare$/m);
      expect(fs.existsSync(path.join(dir, "dist", "vrai.cjs")), "npm install built dist/vrai.cjs").to.equal(true);
      // Nothing to worry a newcomer: no engine warning, no install script left unreviewed (package.json allowScripts).
      expect(install.stderr, "npm warns of no engine").to.not.contain("EBADENGINE");
      expect(install.stderr.split("\n").filter((line) => /npm warn/i.test(line))).to.deep.equal([]);
      // npm links the command as node_modules/.bin/vrai (the workspace in bin/), which `npx vrai` runs as it is.
      expect(fs.readlinkSync(path.join(dir, "node_modules", ".bin", "vrai"))).to.equal("../@vrai/cli/vrai.js");
      const installed = Date.now();
      // As the README's first section says: npm start, at the root of the clone, its data in ./data.
      dev = await startDev(["npm", "start"], dir, { cwd: dir, detached: true, env: { LOG_LEVEL: "info" } });
      const ready = Date.now();
      const rpc = `http://127.0.0.1:${dev.chainPort}`;
      expect(dev.output()).to.contain("chain started: contracts deployed (deployments/localhost.json)");

      // The clone's README: the commit's own walkthrough.
      const [walkthrough] = readmeBlocks("Five minutes with curl", "sh", path.join(dir, "README.md"));
      expect(walkthrough).to.contain("npx vrai dev-clock advance --days 1").and.contain("npx vrai verify $ID");
      const [publishing] = readmeBlocks("Vrai in ERC-8004", "sh", path.join(dir, "README.md")).filter((b) =>
        b.includes("erc8004-publishing"),
      );
      expect(publishing).to.contain("npx vrai verify --erc8004 $SUBJECT");
      const days: string[] = [];
      for (const round of [1, 2]) {
        const script = round === 2 ? `${walkthrough}\n${publishing}` : walkthrough;
        const { stdout, stderr } = await run("bash", ["-euo", "pipefail", "-c", script], {
          cwd: dir,
          env: shellEnv({ API: dev.url, RPC: rpc }),
          maxBuffer: 16 * 2 ** 20,
        }).catch((error: { stdout: string; stderr: string; code: number }) => {
          throw new Error(`run ${round} of the walkthrough exited with ${error.code}:\n${error.stdout}\n${error.stderr}`);
        });
        const lines = stdout.trim().split("\n");
        const checkIn = JSON.parse(lines[0]) as { agentId: string; result: string; next_heartbeat_s: number };
        expect(checkIn, `run ${round}`).to.include({ result: "counted", next_heartbeat_s: 3600 });
        expect(lines.slice(1, 3), `run ${round}`).to.deep.equal(["wallet", "230"]);
        expect(lines[3]).to.match(/^[0-9a-f]{64} {2}-$/);
        expect(lines[4]).to.equal("agent page: 200");
        // The development clock: a day forward, that day's daily scores computed and their root anchored on chain.
        expect(lines[5]).to.equal("development clock moved 1 day forward (the chain's time with it)");
        const day = /^(\d{4}-\d\d-\d\d): (\d+) daily scores?, root anchored on chain in block \d+ \(tx 0x[0-9a-f]{64}\)$/.exec(lines[6]);
        expect(day, lines[6]).to.not.equal(null);
        expect(Number(day![2]), `run ${round}: every agent claimed so far`).to.equal(round);
        days.push(day![1]);
        expect(lines[7]).to.match(
          new RegExp(`^now \\S+ on the service's clock, ${round} days? ahead of the machine's; next daily recompute at \\S+$`),
        );
        // vrai verify: the agent's latest daily score, every step held.
        expect(lines[8]).to.match(new RegExp(`^verifying the daily Vrai score \\d+ of agent ${checkIn.agentId} on ${day![1]} `));
        expect(
          lines.slice(9, 14).every((l) => CHECKED.test(l)),
          lines.slice(9).join("\n"),
        ).to.equal(true);
        expect(lines[14], `run ${round}`).to.equal("verified");
        if (round === 1) expect(lines.slice(15), "run 1").to.deep.equal([]);
        else {
          // Vrai in ERC-8004: the proof, publishing on, then vrai verify from the registry, every step held.
          expect(lines.slice(15, 17)).to.deep.equal(["erc8004", "true"]);
          expect(lines[17]).to.match(
            /^verifying Vrai's ERC-8004 feedback about token \d+ of 0x[0-9a-fA-F]{40} \(0x[0-9a-fA-F]{40}, by 0x[0-9a-fA-F]{40}\)$/,
          );
          expect(lines[18]).to.match(new RegExp(`^verifying the daily Vrai score \\d+ of agent ${checkIn.agentId} on `));
          expect(
            lines.slice(19, -1).every((l) => CHECKED.test(l)),
            lines.slice(17).join("\n"),
          ).to.equal(true);
          expect(lines.slice(19, -1)).to.have.length(7);
          expect(lines.at(-1)).to.equal("verified");
        }
        expect(stderr, `run ${round}: nothing went wrong`).to.equal("");
      }
      // Each `npx vrai` ran the link: none installed the clone into npm's cache (`npx vrai --help` that way: 3.75 CPU-s, not 1.65).
      expect(npxInstallsFrom(dir, npxBefore), "npx installs of the clone").to.deep.equal([]);
      // The second run's day is the day after the first's: each run moved the clock by one.
      expect(Date.parse(`${days[1]}T00:00:00Z`) - Date.parse(`${days[0]}T00:00:00Z`)).to.equal(86_400_000);

      process.kill(-dev.child.pid!, "SIGINT");
      expect(await dev.exited, dev.output()).to.deep.equal({ code: 0, signal: null });
      expect(dev.output().trimEnd().split("\n").pop()).to.equal("vrai stopped");
      const s = (ms: number) => `${Math.round(ms / 1000)} s`;
      console.log(
        `      npm ci ${s(installed - started)}, npm start to ready ${s(ready - installed)}, ` +
          `the walkthrough twice and the stop ${s(Date.now() - ready)}`,
      );
    },
  );
});
