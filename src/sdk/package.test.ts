/**
 * @vrai/sdk as an outside user gets it: built (packages/sdk, tsup), packed with `npm pack`, installed from the
 * tarball into an empty project, and used there from plain Node ESM, CommonJS and TypeScript, against the API
 * and a local chain with an anchored daily score. Every `@example` of its declarations runs here too.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import { builtinModules } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import ts from "typescript";
import { getAddress, type Address } from "viem";
import { vraiGateAbi } from "../chain/abi/vraiGate";
import { startDev } from "../test-helpers/dev-process";
import { startGatedScore, type GatedScore } from "../test-helpers/gated-score";
import { npxInstalls, removeNpxInstallsFrom } from "../test-helpers/npx-cache";
import { readmeBlocks } from "../test-helpers/readme";
import { renderMethodPage } from "../web/method-page";

const SDK_DIR = path.resolve(__dirname, "../../packages/sdk");
const TSC = require.resolve("typescript/bin/tsc");
const run = promisify(execFile);
/** Packages that must not come with the SDK (the issue: the service's own dependencies). */
const SERVICE_ONLY = ["hardhat", "pg", "@electric-sql/pglite", "express", "ethers", "esbuild", "tsx", "pino"];

/** The environment of the commands run in the empty project: nothing of the workspace's npm run. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.toLowerCase().startsWith("npm_")) env[name] = value;
  return { ...env, ...extra };
}

/** Every package installed under `dir`/node_modules (nested ones included), with its size on disk in bytes. */
function installed(dir: string): { packages: string[]; bytes: number } {
  const packages: string[] = [];
  let bytes = 0;
  const size = (p: string): number => {
    const stat = fs.lstatSync(p);
    return stat.isDirectory() ? fs.readdirSync(p).reduce((sum, name) => sum + size(path.join(p, name)), 0) : stat.size;
  };
  const walk = (modules: string) => {
    if (!fs.existsSync(modules)) return;
    for (const name of fs.readdirSync(modules)) {
      if (name.startsWith(".")) continue;
      const names = name.startsWith("@") ? fs.readdirSync(path.join(modules, name)).map((n) => `${name}/${n}`) : [name];
      for (const pkg of names) {
        const at = path.join(modules, pkg);
        if (!fs.existsSync(path.join(at, "package.json"))) continue;
        packages.push(pkg);
        walk(path.join(at, "node_modules"));
      }
    }
  };
  walk(path.join(dir, "node_modules"));
  if (fs.existsSync(path.join(dir, "node_modules"))) bytes = size(path.join(dir, "node_modules"));
  return { packages, bytes };
}

/** The bare module names the built files import or require (Node's own modules aside). */
function importedPackages(dist: string): string[] {
  const names = new Set<string>();
  for (const file of fs.readdirSync(dist).filter((f) => /\.c?js$/.test(f))) {
    const text = fs.readFileSync(path.join(dist, file), "utf8");
    for (const [, specifier] of text.matchAll(/(?:\bfrom\s*|\brequire\(\s*|\bimport\(\s*)"([^"./][^"]*)"/g)) {
      const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0];
      if (!name.startsWith("node:") && !builtinModules.includes(name)) names.add(name);
    }
  }
  return [...names].sort();
}

/** The `@example` blocks of the declarations, each with the name of what it documents. */
function examplesOf(declarations: string): Array<{ name: string; code: string }> {
  const source = ts.createSourceFile("index.d.ts", declarations, ts.ScriptTarget.Latest, true);
  const found: Array<{ name: string; code: string }> = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isFunctionDeclaration(node) || ts.isVariableDeclaration(node) || ts.isClassDeclaration(node)) &&
      node.name &&
      ts.isIdentifier(node.name)
    ) {
      for (const tag of ts.getJSDocTags(node)) {
        if (tag.tagName.text === "example") found.push({ name: node.name.text, code: ts.getTextOfJSDocComment(tag.comment) ?? "" });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The lines of the /method page's "Verify a score yourself" command block, as a reader copies them. */
function methodPageVerifyCommand(): string[] {
  const page = renderMethodPage({ outages: [], nextPage: null, laterPage: false });
  const [, code] = /<h2 id="verify-heading">[\s\S]*?<pre class="snippet"><code>([\s\S]*?)<\/code><\/pre>/.exec(page) ?? [];
  const text = code.replace(
    /&(amp|lt|gt|quot|#39);/g,
    (_, name: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[name] ?? "",
  );
  return text.split("\n");
}

/** An ES module that checks in once as the agent API, AGENT and KEY name (environment) and prints the answer. */
const CHECK_IN_FROM_ESM =
  'import { createVraiAgent } from "@vrai/sdk"; ' +
  "const a = createVraiAgent({ baseUrl: process.env.API, agentId: process.env.AGENT, agentKey: process.env.KEY }); " +
  "console.log(JSON.stringify(await a.checkIn()))";

/** Runs every example in its own async function, with the SDK's exports and the live system's values in scope. */
const EXAMPLE_RUNNER = `
import * as sdk from "@vrai/sdk";
import { createPublicClient, createWalletClient, http, keccak256, stringToHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
const given = JSON.parse(process.env.EXAMPLE_SCOPE);
const scope = {
  ...sdk, keccak256, stringToHex, api: given.api, rpcUrl: given.rpcUrl, agentId: given.agentId, agentKey: given.agentKey,
  tokenId: BigInt(given.tokenId), gate: given.gate,
  publicClient: createPublicClient({ chain: hardhat, transport: http(given.rpcUrl) }),
  wallet: createWalletClient({ chain: hardhat, account: privateKeyToAccount(given.privateKey), transport: http(given.rpcUrl) }),
};
const AsyncFunction = (async () => {}).constructor;
const functions = Object.entries(sdk).filter(([, v]) => typeof v === "function" && !Function.prototype.toString.call(v).startsWith("class")).map(([k]) => k);
console.log(JSON.stringify({ functions }));
for (const { name, code } of JSON.parse(process.env.EXAMPLES)) {
  await new AsyncFunction(...Object.keys(scope), code)(...Object.values(scope));
  console.log(JSON.stringify({ ran: name }));
}
// As a process manager stops it: the heartbeat an example started (and its SIGTERM handler) ends, and so does the process.
if (process.listenerCount("SIGTERM") > 0) process.kill(process.pid, "SIGTERM");
`;

describe("@vrai/sdk packed and installed into an empty project", function () {
  this.timeout(180_000);
  let project: string;
  let fixture: GatedScore;
  let tarball: string;
  let identity: Address;
  let registry: Address;
  const node = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, args, { cwd: project, env: cleanEnv(env), maxBuffer: 16 * 2 ** 20 });

  /**
   * Builds the package (its prepack script) and packs it by the /method page's command, as printed, at the root of
   * this checkout; moves the tarball into a new empty project and installs it there.
   */
  async function packAndInstall(): Promise<void> {
    const [pack] = methodPageVerifyCommand();
    const { stdout } = await run("bash", ["-euc", pack], { cwd: path.resolve(SDK_DIR, "../.."), env: cleanEnv(), maxBuffer: 16 * 2 ** 20 });
    tarball = stdout.trim().split("\n").pop()!;
    // Copied, then removed: the project can be on another file system (a tmpfs TMPDIR), where a rename fails.
    fs.copyFileSync(path.join(SDK_DIR, tarball), path.join(project, tarball));
    fs.rmSync(path.join(SDK_DIR, tarball));
    fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "sdk-consumer", version: "1.0.0", private: true }));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", `./${tarball}`], {
      cwd: project,
      env: cleanEnv(),
      maxBuffer: 16 * 2 ** 20,
    });
  }

  before(async () => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-sdk-consumer-"));
    // An established agent with an anchored daily score and the ERC-8004 identity token 0 of the reference registry,
    // owned by account 2, and the example gate (test-helpers/gated-score.ts).
    // Both settled before either failure is thrown: a fixture started is kept for `after` to close (its database dropped).
    const [gated, install] = await Promise.allSettled([startGatedScore(), packAndInstall()]);
    if (gated.status === "fulfilled") fixture = gated.value;
    for (const step of [gated, install]) if (step.status === "rejected") throw step.reason;
    // The dApp side: the Registry over that identity registry, in deployments/localhost.json as `vrai dev` writes it.
    const { chain } = fixture;
    identity = fixture.identityRegistry;
    registry = getAddress((await chain.deployContract("Registry", [chain.accounts[0].address, identity])).address);
    fs.mkdirSync(path.join(project, "deployments"));
    fs.writeFileSync(
      path.join(project, "deployments", "localhost.json"),
      JSON.stringify({
        network: "localhost",
        chainId: 31337,
        contracts: {
          IdentityRegistry: { address: identity },
          AnchorRegistry: { address: fixture.anchorRegistry },
          Registry: { address: registry },
        },
      }),
    );
  });
  after(async () => {
    await fixture?.close();
    fs.rmSync(project, { recursive: true, force: true });
  });

  it("depends on exactly the packages its built code imports, and brings none of the service's (Hardhat, pg, PGlite, Express, ethers)", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(SDK_DIR, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(importedPackages(path.join(SDK_DIR, "dist"))).to.deep.equal(Object.keys(manifest.dependencies).sort());
    const { packages, bytes } = installed(project);
    expect(packages).to.include.members(["@vrai/sdk", "viem", "canonicalize"]);
    for (const name of SERVICE_ONLY) expect(packages, name).to.not.include(name);
    // The figures the issue asks for (installed size and package count of the tarball in an empty project).
    console.log(
      `      @vrai/sdk installed into an empty project: ${packages.length} packages, ${(bytes / 2 ** 20).toFixed(1)} MiB ` +
        `(${tarball}, ${(fs.statSync(path.join(project, tarball)).size / 1024).toFixed(0)} KiB)`,
    );
  });

  it("imports from plain Node ESM and requires from CommonJS, with the same exports", async () => {
    const esm = await node([
      "--input-type=module",
      "-e",
      'import * as sdk from "@vrai/sdk"; console.log(JSON.stringify(Object.keys(sdk).sort()))',
    ]);
    const cjs = await node(["-e", 'console.log(JSON.stringify(Object.keys(require("@vrai/sdk")).sort()))']);
    const names = JSON.parse(esm.stdout) as string[];
    expect(names).to.include.members([
      "createVraiAgent",
      "submitProof",
      "readNetworkScore",
      "deriveScore",
      "verifyScore",
      "getScoreProof",
      "vraiGateAbi",
      "registryAddressOf",
      "readDeployment",
    ]);
    expect(JSON.parse(cjs.stdout)).to.deep.equal(names.filter((n) => n !== "default"));
    expect(esm.stderr + cjs.stderr).to.equal("");
  });

  it("type-checks a TypeScript program against its declarations (tsc, strict, nodenext; wrong uses are type errors)", async () => {
    fs.copyFileSync(path.join(SDK_DIR, "examples", "check-in.ts"), path.join(project, "check-in.ts"));
    fs.writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          lib: ["es2023", "dom"],
          types: [],
          noEmit: true,
          skipLibCheck: true,
        },
        files: ["check-in.ts"],
      }),
    );
    const { stdout } = await node([TSC, "-p", "tsconfig.json"]).catch((error: { stdout: string }) => ({
      stdout: `failed: ${error.stdout}`,
    }));
    expect(stdout).to.equal("");
  });

  it("checks in for real against the running API from ESM, and verifies the anchored score with verifyScore from CommonJS", async () => {
    const agent = fixture.provisional;
    const checkIn = await node(["--input-type=module", "-e", CHECK_IN_FROM_ESM], {
      API: fixture.server.url,
      AGENT: agent.agentId,
      KEY: agent.agentKey,
    });
    expect(JSON.parse(checkIn.stdout)).to.include({ agentId: agent.agentId, result: "counted", next_heartbeat_s: 3600, replayed: false });

    const verify = await node(
      [
        "-e",
        'require("@vrai/sdk")' +
          ".verifyScore({ api: process.env.API, agentId: process.env.AGENT, day: process.env.DAY, rpcUrl: process.env.RPC })" +
          ".then((r) => console.log(JSON.stringify(r)))",
      ],
      { API: fixture.server.url, AGENT: fixture.established.agentId, DAY: fixture.today, RPC: fixture.rpc.url },
    );
    const result = JSON.parse(verify.stdout) as {
      verified: boolean;
      checks: Array<{ step: string; ok: boolean }>;
      anchor: { contract: string; leafCount: number };
    };
    expect(result.checks.map((c) => [c.step, c.ok])).to.deep.equal([
      ["inputs", true],
      ["score", true],
      ["digest", true],
      ["merkle", true],
      ["anchor", true],
    ]);
    expect(result.verified).to.equal(true);
    expect(result.anchor).to.include({ contract: fixture.anchorRegistry, leafCount: 2 });
  });

  it("checks in for real against a running vrai dev, as an agent developer does after npm start (starts vrai dev: 10-30 s)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-sdk-dev-"));
    const dev = await startDev([process.execPath, "bin/vrai.js", "dev"], dir);
    try {
      const post = async (p: string, token: string | undefined) =>
        (
          await fetch(dev.url + p, {
            method: "POST",
            headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
            body: "{}",
          })
        ).json() as Promise<Record<string, string>>;
      const owner = await post("/v1/owners", undefined);
      const agent = await post("/v1/agents", owner.token);
      const checkIn = await node(["--input-type=module", "-e", CHECK_IN_FROM_ESM], {
        API: dev.url,
        AGENT: agent.agentId,
        KEY: agent.agentKey,
      });
      expect(JSON.parse(checkIn.stdout)).to.include({ agentId: agent.agentId, result: "counted", replayed: false });
    } finally {
      dev.child.kill("SIGTERM");
      await dev.exited;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    "runs every @example of its declarations against the live API and chain, and every exported function has one" +
      " (a node process runs them all, on chain: 12.7 s once under a CPU hog)",
    async () => {
      const examples = examplesOf(fs.readFileSync(path.join(project, "node_modules/@vrai/sdk/dist/index.d.ts"), "utf8"));
      fs.writeFileSync(path.join(project, "run-examples.mjs"), EXAMPLE_RUNNER);
      const { agentId, agentKey, tokenId, holder } = fixture.established;
      const { stdout } = await node(["run-examples.mjs"], {
        EXAMPLES: JSON.stringify(examples),
        EXAMPLE_SCOPE: JSON.stringify({
          api: fixture.server.url,
          rpcUrl: fixture.rpc.url,
          agentId,
          agentKey,
          tokenId: tokenId.toString(),
          gate: fixture.gate,
          privateKey: fixture.chain.keys[holder],
        }),
      });
      const lines = stdout.trim().split("\n");
      const { functions } = JSON.parse(lines[0]) as { functions: string[] };
      expect(functions.length).to.be.greaterThan(6);
      for (const name of functions)
        expect(
          examples.map((e) => e.name),
          `@example of ${name}`,
        ).to.include(name);
      const ran = lines.filter((l) => l.startsWith('{"ran"')).map((l) => (JSON.parse(l) as { ran: string }).ran);
      expect(ran).to.deep.equal(examples.map((e) => e.name));
      expect(stdout).to.match(/^counted at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, next in 3600 s$/m);
      expect(stdout).to.match(/^proof in block \d+, tx 0x[0-9a-f]{64}$/m);
      expect(stdout).to.match(/^✔ anchor: root anchored on chain/m);
      expect(stdout).to.match(/^entered with a score of \d+, anchored at \d+$/m);
    },
  );

  it(
    "type-checks and runs the contract-gate code of both READMEs (the repository's dApp section, its " +
      "own) against the live API, chain and gate (type-checks and runs both READMEs' code: 6-12 s)",
    async () => {
      const blocks = [
        ...readmeBlocks("A Vrai score checked by a contract", "ts"),
        ...readmeBlocks("Gating a contract on a score", "ts", path.join(project, "node_modules/@vrai/sdk/README.md")),
      ];
      expect(blocks).to.have.length(2);
      // As written, against the package's declarations: what a reader has in scope is declared, nothing else.
      for (const [i, block] of blocks.entries()) fs.writeFileSync(path.join(project, `readme-gate-${i}.mts`), block);
      fs.writeFileSync(
        path.join(project, "readme-scope.d.ts"),
        [
          "declare const agentId: string;",
          'declare const gate: import("viem").Address;',
          'declare const publicClient: import("viem").PublicClient;',
          'declare const wallet: import("viem").WalletClient<import("viem").Transport, import("viem").Chain, import("viem").Account>;',
        ].join("\n"),
      );
      fs.writeFileSync(
        path.join(project, "tsconfig.readme.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            module: "nodenext",
            moduleResolution: "nodenext",
            target: "es2022",
            lib: ["es2023", "dom"],
            types: [],
            noEmit: true,
            skipLibCheck: true,
          },
          files: ["readme-scope.d.ts", ...blocks.map((_, i) => `readme-gate-${i}.mts`)],
        }),
      );
      const { stdout: typeErrors } = await node([TSC, "-p", "tsconfig.readme.json"]).catch((error: { stdout: string }) => ({
        stdout: `failed: ${error.stdout}`,
      }));
      expect(typeErrors).to.equal("");

      // Run with the SDK's exports in scope (what their import lines name) and the README's API address made the live one's.
      const { chain, established, gate, server } = fixture;
      const entered = async () =>
        (
          await chain.publicClient.getContractEvents({
            address: gate,
            abi: vraiGateAbi,
            eventName: "Entered",
            fromBlock: 0n,
            args: { account: chain.accounts[established.holder].address },
          })
        ).length;
      const before = await entered();
      fs.writeFileSync(path.join(project, "run-examples.mjs"), EXAMPLE_RUNNER);
      const examples = blocks.map((block, i) => ({
        name: `README block ${i}`,
        code: block.replace(/^import .*\n/gm, "").replaceAll("http://127.0.0.1:8080", server.url),
      }));
      const { stdout } = await node(["run-examples.mjs"], {
        EXAMPLES: JSON.stringify(examples),
        EXAMPLE_SCOPE: JSON.stringify({
          api: server.url,
          rpcUrl: fixture.rpc.url,
          agentId: established.agentId,
          tokenId: "0",
          gate,
          privateKey: chain.keys[established.holder],
        }),
      });
      expect(stdout.trim().split("\n").slice(1)).to.deep.equal(examples.map((e) => JSON.stringify({ ran: e.name })));
      // Each block's writeContract went through the gate.
      expect(await entered()).to.equal(before + blocks.length);
    },
  );

  it(
    "runs the /method page's verify command as printed from the tarball its pack line wrote, in an empty " +
      "directory: the score verified (npm installs the tarball again: 7-20 s)",
    async () => {
      const [pack, npx, ...rest] = methodPageVerifyCommand();
      expect([pack, rest]).to.deep.equal(["cd packages/sdk && npm pack", []]);
      expect(npx).to.match(new RegExp(`^npx --yes --package \\./${tarball.replace(/\./g, "\\.")} vrai-verify AGENT_ID `));
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-method-verify-"));
      const cachedBefore = npxInstalls();
      try {
        fs.copyFileSync(path.join(project, tarball), path.join(dir, tarball));
        const command = npx
          .replace("AGENT_ID", fixture.established.agentId)
          .replace("YYYY-MM-DD", fixture.today)
          .replace("https://vrai.example", fixture.server.url)
          .replace("RPC_URL", fixture.rpc.url);
        const { stdout } = await run("bash", ["-euc", command], {
          cwd: dir,
          env: cleanEnv({ npm_config_prefer_offline: "true", npm_config_audit: "false", npm_config_fund: "false" }),
          maxBuffer: 16 * 2 ** 20,
        });
        const lines = stdout.trim().split("\n");
        expect(lines.filter((l) => l.startsWith("✔"))).to.have.length(5);
        expect(lines[lines.length - 1]).to.equal("verified");
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
        removeNpxInstallsFrom(dir, cachedBefore);
      }
    },
  );

  it("carries its README, LICENSE and repository field in the tarball (issue #31), the LICENSE the repository's", async () => {
    const { stdout } = await run("tar", ["tzf", path.join(project, tarball)]);
    expect(stdout.trim().split("\n")).to.include.members([
      "package/README.md",
      "package/LICENSE",
      "package/package.json",
      "package/dist/verify.js",
      "package/dist/heartbeat.js",
    ]);
    const installedDir = path.join(project, "node_modules", "@vrai", "sdk");
    const manifest = JSON.parse(fs.readFileSync(path.join(installedDir, "package.json"), "utf8")) as {
      repository?: { type: string; url: string; directory: string };
      license: string;
    };
    expect(manifest.repository).to.include({ type: "git", directory: "packages/sdk" });
    expect(manifest.repository?.url).to.match(/^git\+https:\/\/\S+\.git$/);
    expect(fs.readFileSync(path.join(installedDir, "LICENSE"), "utf8")).to.equal(
      fs.readFileSync(path.resolve(SDK_DIR, "../../LICENSE"), "utf8"),
    );
    expect(manifest.license).to.equal("MIT");
    const readme = fs.readFileSync(path.join(installedDir, "README.md"), "utf8");
    // Until it is published, how to get it: the pack step.
    expect(readme).to.contain("cd packages/sdk && npm pack");
    expect(readme).to.contain("vrai-verify");
    // Issue #26: the contract-gate call and its ABI, whose example the test above runs.
    expect(readme).to.contain("getScoreProof").and.contain("vraiGateAbi");
  });

  it("exports its error classes (issue #31): a bad option is an InvalidInputError, a check-in too soon a VraiAgentError, all BaseErrors", async () => {
    const post = async (p: string, token: string | undefined) =>
      (
        await fetch(fixture.server.url + p, {
          method: "POST",
          headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: "{}",
        })
      ).json() as Promise<Record<string, string>>;
    const agent = await post("/v1/agents", (await post("/v1/owners", undefined)).token);
    const { stdout } = await node(
      [
        "--input-type=module",
        "-e",
        `
      import { BaseError, DeploymentFileError, InvalidInputError, VraiAgentError, createVraiAgent, verifyScore, readDeployment } from "@vrai/sdk";
      const bad = await verifyScore({ api: process.env.API, agentId: "not an id", rpcUrl: process.env.API }).catch((e) => e);
      const file = await Promise.resolve().then(() => readDeployment("package.json")).catch((e) => e);
      const agent = createVraiAgent({ baseUrl: process.env.API, agentId: process.env.AGENT, agentKey: process.env.KEY });
      await agent.checkIn();
      const soon = await agent.checkIn().catch((e) => e);
      console.log(JSON.stringify({
        bad: [bad instanceof InvalidInputError, bad instanceof BaseError, bad.code],
        file: [file instanceof DeploymentFileError, file instanceof InvalidInputError, file.code],
        soon: [soon instanceof VraiAgentError, soon instanceof BaseError, soon.code, soon.retryAfterMs > 1_000_000],
      }));`,
      ],
      { API: fixture.server.url, AGENT: agent.agentId, KEY: agent.agentKey },
    );
    expect(JSON.parse(stdout)).to.deep.equal({
      bad: [true, true, "invalid_verify_options"],
      file: [true, true, "invalid_deployment"],
      soon: [true, true, "checkin_too_soon", true],
    });
  });

  it(
    "installs the vrai-verify bin, which verifies the anchored daily score outside any checkout of Vrai (exit 0), and prints its usage " +
      "(the installed bin run twice, a verification against the API and the chain: 3-12 s)",
    async () => {
      const bin = path.join(project, "node_modules", ".bin", "vrai-verify");
      const help = await run(bin, ["--help"], { cwd: project, env: cleanEnv() });
      expect(help.stdout).to.match(/^usage: vrai-verify <agent> \[--day YYYY-MM-DD\]/);
      const verified = await run(
        bin,
        [
          fixture.established.agentId,
          "--day",
          fixture.today,
          "--api",
          fixture.server.url,
          "--rpc",
          fixture.rpc.url,
          "--deployment",
          "deployments/localhost.json",
        ],
        { cwd: project, env: cleanEnv() },
      );
      const lines = verified.stdout.trim().split("\n");
      expect(lines[0]).to.match(
        new RegExp(
          `^verifying the daily Vrai score \\d+ of agent ${fixture.established.agentId} on ${fixture.today} ` +
            `\\(${fixture.server.url.replace(/[.:/]/g, "\\$&")}\\)$`,
        ),
      );
      expect(lines.filter((l) => l.startsWith("✔"))).to.have.length(5);
      expect(lines[lines.length - 1]).to.equal("verified");
      const refused = await run(bin, [], { cwd: project, env: cleanEnv() }).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(refused?.code).to.equal(2);
      expect(refused?.stderr).to.match(/^vrai-verify: expected one agent id, got 0 \(usage: vrai-verify <agent>/);
    },
  );

  it("installs the vrai-heartbeat bin: it prints its usage, and refuses a key on the command line with exit 2", async () => {
    const bin = path.join(project, "node_modules", ".bin", "vrai-heartbeat");
    const help = await run(bin, ["--help"], { cwd: project, env: cleanEnv() });
    expect(help.stderr).to.match(/^usage: vrai-heartbeat --api URL --agent ID/);
    const refused = await run(bin, ["--api", fixture.server.url, "--agent", "agt_1", "--key", "va_secret"], {
      cwd: project,
      env: cleanEnv(),
    }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused?.code).to.equal(2);
    expect(refused?.stderr.trim().split("\n")).to.have.length(1);
  });
});
