import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "./app/server";
import { claimAgent } from "./test-helpers/checkin-proxy";
import { createTestPgliteDb, type TestDb } from "./test-helpers/db";
import { readmeBlocks } from "./test-helpers/readme";

const ROOT = path.resolve(__dirname, "..");
const README = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

describe("README", () => {
  let testDb: TestDb;
  let server: ApiServer;
  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({ db: testDb.db, operatorToken: "operator-token-readme-walkthrough", logger: pino({ level: "silent" }) });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it("agent developers' vrai-heartbeat block runs as written: key in a file, the agent's command wrapped, its exit code returned", async () => {
    const [block] = readmeBlocks("For agent developers", "sh").filter((b) => b.includes("vrai-heartbeat"));
    const { agentId, agentKey } = await claimAgent(server.url);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-readme-heartbeat-"));
    try {
      fs.writeFileSync(path.join(dir, "my-agent.js"), "process.exit(7)");
      // `npm install @vrai/sdk` is this repository; `npx vrai-heartbeat` is its bin from the sources.
      const shims =
        "npm() { :; }\n" +
        `npx() { shift; node -r ${JSON.stringify(require.resolve("tsx/cjs"))} ` +
        `${JSON.stringify(path.join(ROOT, "src/sdk/heartbeat-bin.ts"))} "$@"; }\n`;
      const ran = await promisify(execFile)("bash", ["-uo", "pipefail", "-c", shims + block], {
        cwd: dir,
        env: { ...process.env, API: server.url, ID: agentId, KEY: agentKey },
      }).then(
        () => ({ code: 0, stderr: "" }),
        (error: { code: number; stderr: string }) => error,
      );
      expect(ran.code, ran.stderr).to.equal(7);
      // The command exits at once; the check-in sent as it started is counted before the heartbeat stops.
      expect(ran.stderr).to.match(/vrai-heartbeat: node exited with 7; 1 check-in counted\n$/);
      expect(fs.readFileSync(path.join(dir, "agent.key"), "utf8")).to.equal(`${agentKey}\n`);
      expect(fs.statSync(path.join(dir, "agent.key")).mode & 0o777).to.equal(0o600);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("dApps' Solidity in 'A Vrai score checked by a contract' compiles with the project's solc, in a contract importing VraiScores", function () {
    this.timeout(60_000);
    const [snippet, ...others] = readmeBlocks("A Vrai score checked by a contract", "solidity");
    expect(others).to.deep.equal([]);
    expect(snippet).to.contain("VraiScores.verify(ANCHORS, score, proof, root)");
    // The compiler hardhat.config.ts pins, which it compiles with: the `solc` package's soljson.js.
    const version = /const SOLC_VERSION = "([0-9.]+)"/.exec(fs.readFileSync(path.join(ROOT, "hardhat.config.ts"), "utf8"))![1];
    const solc = require("solc") as {
      version(): string;
      compile(input: string, callbacks: { import(file: string): { contents: string } | { error: string } }): string;
    };
    expect(solc.version()).to.match(new RegExp(`^${version.replace(/\./g, "\\.")}\\+`));
    // What a dApp writes around the snippet: the registry it names ANCHORS, and the README's two imports.
    const source = `// SPDX-License-Identifier: MIT
pragma solidity ${version};

import {IAnchorRegistry} from "contracts/interfaces/IAnchorRegistry.sol";
import {VraiScores} from "contracts/VraiScores.sol";

contract ReadmeGate {
    IAnchorRegistry private immutable ANCHORS;

    constructor(IAnchorRegistry anchors) {
        ANCHORS = anchors;
    }

${snippet}}
`;
    // Imports resolved as Hardhat resolves them: the project's own files from its root, packages from node_modules.
    const resolve = (file: string) => {
      for (const base of [ROOT, path.join(ROOT, "node_modules")])
        if (fs.existsSync(path.join(base, file))) return { contents: fs.readFileSync(path.join(base, file), "utf8") };
      return { error: `${file} not found` };
    };
    const input = {
      language: "Solidity",
      sources: { "ReadmeGate.sol": { content: source } },
      settings: { evmVersion: "cancun", outputSelection: { "ReadmeGate.sol": { ReadmeGate: ["abi"] } } },
    };
    const output = JSON.parse(solc.compile(JSON.stringify(input), { import: resolve })) as {
      errors?: Array<{ severity: string; formattedMessage: string }>;
      contracts?: Record<string, Record<string, { abi: Array<{ name?: string }> }>>;
    };
    const errors = (output.errors ?? []).filter((e) => e.severity === "error").map((e) => e.formattedMessage);
    expect(errors).to.deep.equal([]);
    expect(output.contracts?.["ReadmeGate.sol"].ReadmeGate.abi.map((item) => item.name)).to.include("join");
  });

  it("the curl walkthrough prints an error answer's code and message, and a terminal goes on to the next step (no set -e)", async () => {
    const [walkthrough] = readmeBlocks("Five minutes with curl", "sh");
    const lines = walkthrough.split("\n");
    const json = lines.find((l) => l.startsWith("json() {"));
    const step2 = lines.filter((l) => l.startsWith("AGENT=$(") || l.startsWith("ID=$("));
    expect(json).to.not.equal(undefined);
    expect(step2).to.have.length(2);
    expect(walkthrough).to.not.match(/^set -e/m);
    // What its comment says of an error answer is what a terminal does with it (below): printed, the field empty, no stop.
    const said = lines.slice(1, lines.indexOf(json!)).join(" ");
    expect(said)
      .to.contain("An error answer is printed instead (its code and message) and the field is left empty")
      .and.not.contain("stops");
    // Step 2 with an owner token that is not one, as an interactive shell runs it: each line, whatever the last one did.
    const script = [lines[0], json, ...step2, 'echo "went on: ID=[$ID]"'].join("\n");
    const { stdout, stderr } = await promisify(execFile)("bash", ["-c", script], {
      env: { ...process.env, API: server.url, TOKEN: "vo_not_a_token" },
    });
    const answer = (await (
      await fetch(`${server.url}/v1/agents`, {
        method: "POST",
        headers: { authorization: "Bearer vo_not_a_token", "content-type": "application/json" },
        body: '{"name":"my agent"}',
      })
    ).json()) as { error: { code: string; message: string } };
    expect(answer.error.code).to.match(/^[a-z_]+$/);
    // Once for the agent id, once for its key: the step's two fields.
    expect(stderr).to.equal(`${answer.error.code}: ${answer.error.message}\n`.repeat(2));
    expect(stdout).to.equal("went on: ID=[]\n");
  });

  it(".env.example lists each variable once", () => {
    const names = [...fs.readFileSync(path.join(ROOT, ".env.example"), "utf8").matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);
    expect(names).to.include.members(["DEPLOYMENT", "CONFIRMATIONS"]);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).to.deep.equal([]);
  });

  it("names only commands that exist: every `vrai <command>` it shows is a registered command, and every npm script it shows exists", () => {
    const { COMMANDS } = require("./cli/commands") as { COMMANDS: Record<string, unknown> };
    const shown = new Set([...README.matchAll(/`(?:npx )?vrai ([a-z][a-z-]*)/g)].map((m) => m[1]));
    expect(shown.size).to.be.greaterThan(5);
    expect([...shown]).to.include.members(["dev-clock", "dev-identity", "verify"]);
    // `vrai help` is the command line's own (src/cli/main.ts), not a command module.
    for (const name of shown) if (name !== "help") expect(COMMANDS, `vrai ${name}`).to.have.property(name);
    const scripts = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
    for (const [, name] of README.matchAll(/npm (?:run )?([a-z][a-z:-]*)/g)) {
      // npm's own commands, not scripts of the package.
      if (name === "install" || name === "ci" || name === "pack") continue;
      expect(scripts, `npm ${name}`).to.have.property(name);
    }
  });
});
