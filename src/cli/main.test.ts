import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { COMMANDS } from "./commands";
import { runCli } from "./main";
import { memoryIo } from "./io";
import { buildScoreInputs, canonicalJson, parseRfc3339, playCheckins } from "../method";

const EX = "did:erc8004:1:0x0000000000000000000000000000000000000001:7";
const record = (i: number, over: Record<string, unknown> = {}) => ({
  txHash: `0x${i}`,
  executor: EX,
  success: true,
  riskLevel: "high",
  policyViolations: 0,
  verified: true,
  traceRoot: "0x01",
  source: "onchain",
  blockNumber: i,
  logIndex: 0,
  ...over,
});

async function run(argv: string[], stdin = "", files: Record<string, string> = {}) {
  const io = memoryIo(stdin, files);
  const code = await runCli(argv, io);
  return { code, out: io.out, err: io.err };
}

describe("vrai command line (part F)", () => {
  it("derive prints { executors } in the F1 shape from standard input", async () => {
    const { code, out, err } = await run(["derive"], JSON.stringify({ records: [record(1), record(2), record(3)] }));
    expect([code, err]).to.deep.equal([0, ""]);
    const result = JSON.parse(out).executors[EX];
    expect(result).to.include({
      scoreType: "sdk-derived",
      total: 3,
      verifiedCount: 3,
      cap: 55,
      score: 55,
      multiplier: 1,
      interpretation: "Moderate trust",
    });
    expect(Object.keys(result.components)).to.deep.equal(["base", "volume", "riskBonus", "consistency"]);
  });

  it("derive reads a file argument", async () => {
    const { code, out } = await run(["derive", "r.json"], "", { "r.json": JSON.stringify({ records: [] }) });
    expect(code).to.equal(0);
    expect(JSON.parse(out)).to.deep.equal({ executors: {} });
  });

  it("score recomputes a stored inputs document with its sha256 (F3)", async () => {
    const at = parseRfc3339("2026-12-01T00:00:00Z");
    const { days } = playCheckins([{ arrival: at - 3 * 86_400 }, { arrival: at - 3 * 86_400 + 3600 }]);
    const doc = canonicalJson(
      buildScoreInputs({ agent: "a1", method: "0.1", at, claimedAt: at - 10 * 86_400, proofs: [], penalties: [], days }),
    );
    const { code, out } = await run(["score"], doc);
    expect(code).to.equal(0);
    const result = JSON.parse(out);
    expect(result).to.include({ scoreType: "vrai", method: "0.1", total: 200, band: "200-399", state: "provisional" });
    expect(result.sha256).to.match(/^[0-9a-f]{64}$/);
  });

  const bad: Array<[string, string[], string, RegExp]> = [
    ["malformed JSON", ["derive"], "{bad", /^vrai derive: malformed JSON: .+\n$/],
    [
      "a field of the wrong type",
      ["derive"],
      JSON.stringify({ records: [record(1), record(2), record(3), record(4, { riskLevel: "extreme" })] }),
      /^vrai derive: records\[3\]\.riskLevel: expected low\|medium\|high\|critical, got "extreme" \(txHash 0x4\)\n$/,
    ],
    ["an unknown method", ["score"], JSON.stringify({ method: "9.9" }), /^vrai score: method: unknown method version "9\.9"/],
    ["a missing file", ["score", "nope.json"], "", /^vrai score: cannot read nope\.json: ENOENT/],
    ["an unknown command", ["frobnicate"], "", /^vrai: unknown command "frobnicate"/],
  ];
  for (const [what, argv, stdin, message] of bad) {
    it(`exits 2 with one line on standard error for ${what}`, async () => {
      const { code, out, err } = await run(argv, stdin);
      expect(code).to.equal(2);
      expect(out).to.equal("");
      expect(err).to.match(message);
      expect(err.trimEnd().split("\n")).to.have.length(1);
    });
  }

  it("answers --help, -h and `vrai help <command>` for every subcommand with its usage, exit 0, running nothing (issue #31)", async () => {
    for (const name of Object.keys(COMMANDS)) {
      const usage = `usage: vrai ${COMMANDS[name]().usage}\n`;
      for (const argv of [
        [name, "--help"],
        [name, "-h"],
        ["help", name],
        [name, "extra", "--help"],
      ]) {
        // `dev --help` or `serve --help` would start a service and never return if they ran.
        const { code, out, err } = await run(argv);
        expect([code, err], argv.join(" ")).to.deep.equal([0, ""]);
        expect(out.startsWith(usage), `${argv.join(" ")}: ${out}`).to.equal(true);
        expect(out).to.contain(COMMANDS[name]().summary);
      }
    }
    const listing = await run(["help"]);
    for (const name of Object.keys(COMMANDS)) expect(listing.out).to.contain(`  vrai ${COMMANDS[name]().usage}\n`);
    expect((await run(["help", "frobnicate"])).code).to.equal(2);
    // After `--`, `--help` belongs to what follows it.
    expect((await run(["derive", "--", "--help"])).err).to.match(/^vrai derive: /);
  });

  describe("as an installed command (node bin/vrai.js)", function () {
    this.timeout(20_000);
    const bin = path.resolve(__dirname, "../../bin/vrai.js");
    const node = (args: string[], input?: string) => spawnSync(process.execPath, [bin, ...args], { input, encoding: "utf8" });

    it("derives from standard input and from a file argument", () => {
      const input = JSON.stringify({ records: [record(1)] });
      const fromStdin = node(["derive"], input);
      expect(fromStdin.status).to.equal(0, fromStdin.stderr);
      const file = path.join(mkdtempSync(path.join(tmpdir(), "vrai-")), "records.json");
      writeFileSync(file, input);
      const fromFile = node(["derive", file]);
      expect(fromFile.status).to.equal(0, fromFile.stderr);
      expect(fromFile.stdout).to.equal(fromStdin.stdout);
      expect(JSON.parse(fromFile.stdout).executors[EX].total).to.equal(1);
    });

    it("runs as an executable under its shebang's node flags, with the output node gives", () => {
      const input = JSON.stringify({ records: [record(1)] });
      const executable = spawnSync(bin, ["derive"], { input, encoding: "utf8" });
      expect(executable.status).to.equal(0, executable.stderr);
      expect(executable.stdout).to.equal(node(["derive"], input).stdout);
    });

    describe("compiled into one file (npm run build: dist/vrai.cjs)", () => {
      before(function () {
        this.timeout(60_000);
        const build = spawnSync("npm", ["run", "build", "--silent"], { cwd: path.resolve(__dirname, "../.."), encoding: "utf8" });
        expect(build.status, build.stderr).to.equal(0);
      });

      it("runs the compiled file when there is one, the TypeScript sources with VRAI_BUNDLE=0 or before a first build", () => {
        // In a copy of the layout (bin/vrai.js copied, a dist/ of its own, src/ and node_modules/ linked), not in the checkout: tests in
        // the other worker run the checkout's dist/vrai.cjs meanwhile, and one once loaded it half rewritten by this test.
        const root = mkdtempSync(path.join(tmpdir(), "vrai-bin-"));
        try {
          const repo = path.resolve(__dirname, "../..");
          for (const dir of ["bin", "dist"]) mkdirSync(path.join(root, dir));
          for (const dir of ["src", "node_modules"]) symlinkSync(path.join(repo, dir), path.join(root, dir), "dir");
          const copy = path.join(root, "bin", "vrai.js");
          copyFileSync(bin, copy);
          const compiled = path.join(root, "dist", "vrai.cjs");
          const input = JSON.stringify({ records: [record(1)] });
          const derive = (env: Record<string, string> = {}) =>
            spawnSync(process.execPath, [copy, "derive"], { input, encoding: "utf8", env: { ...process.env, ...env } });
          writeFileSync(compiled, 'exports.main = () => process.stdout.write("the compiled file ran\\n");');
          expect(derive().stdout).to.equal("the compiled file ran\n");
          const sources = derive({ VRAI_BUNDLE: "0" });
          expect(JSON.parse(sources.stdout).executors[EX].total).to.equal(1);
          rmSync(compiled);
          const unbuilt = derive();
          expect([unbuilt.status, unbuilt.stdout]).to.deep.equal([0, sources.stdout]);
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      });

      it("answers byte for byte as the TypeScript sources do (VRAI_BUNDLE=0)", () => {
        const t = parseRfc3339("2026-10-01T00:00:00Z");
        const events = [
          { at: t, type: "claim", agent: "a", owner: "o" },
          ...Array.from({ length: 30 }, (_, h) => ({
            at: t + 60 + h * 3600 + (h % 7) * 300,
            type: "checkin",
            agent: "a",
            key: `k${h % 25}`,
          })),
          { at: t + 31 * 3600, type: "penalty", id: "p", agent: "a", code: "rate_abuse", points: 20, days: 30 },
          { at: t + 32 * 3600, type: "score", agent: "a" },
          { at: t + 32 * 3600, type: "checkin", agent: "nobody", key: "k" },
        ];
        const input = JSON.stringify({ method: "0.2", events });
        const bundled = node(["replay"], input);
        const sources = spawnSync(process.execPath, [bin, "replay"], {
          input,
          encoding: "utf8",
          env: { ...process.env, VRAI_BUNDLE: "0" },
        });
        expect(bundled.status).to.equal(0, bundled.stderr);
        expect(bundled.stdout.split("\n")).to.have.length(events.length + 1);
        expect(bundled.stdout).to.equal(sources.stdout);
        expect(bundled.stdout).to.include('"result":"duplicate"').and.include('"result":"rejected"');
      });
    });

    it("exits 2 with one line on malformed JSON and on a field of the wrong type", () => {
      const malformed = node(["derive"], "{");
      expect(malformed.status).to.equal(2);
      expect(malformed.stderr).to.match(/^vrai derive: malformed JSON: [^\n]+\n$/);
      const wrong = node(["derive"], JSON.stringify({ records: [record(1, { policyViolations: "0" })] }));
      expect(wrong.status).to.equal(2);
      expect(wrong.stderr).to.equal('vrai derive: records[0].policyViolations: expected a whole number >= 0, got "0" (txHash 0x1)\n');
    });
  });
});
