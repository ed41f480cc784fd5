import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { COMMANDS } from "./commands";
import { runCli } from "./main";
import { memoryIo } from "./io";
import { buildScoreInputs, canonicalJson, parseRfc3339, playCheckins } from "../method";

const EX = "did:erc8004:1:0x0000000000000000000000000000000000000001:7";
const record = (i: number, over: Record<string, unknown> = {}) => ({
  txHash: `0x${i}`, executor: EX, success: true, riskLevel: "high", policyViolations: 0, verified: true,
  traceRoot: "0x01", source: "onchain", blockNumber: i, logIndex: 0, ...over,
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
    expect(result).to.include({ scoreType: "sdk-derived", total: 3, verifiedCount: 3, cap: 55, score: 55, multiplier: 1, interpretation: "Moderate trust" });
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
    const doc = canonicalJson(buildScoreInputs({ agent: "a1", method: "0.1", at, claimedAt: at - 10 * 86_400, proofs: [], penalties: [], days }));
    const { code, out } = await run(["score"], doc);
    expect(code).to.equal(0);
    const result = JSON.parse(out);
    expect(result).to.include({ scoreType: "vrai", method: "0.1", total: 200, band: "200-399", state: "provisional" });
    expect(result.sha256).to.match(/^[0-9a-f]{64}$/);
  });

  const bad: Array<[string, string[], string, RegExp]> = [
    ["malformed JSON", ["derive"], "{bad", /^vrai derive: malformed JSON: .+\n$/],
    ["a field of the wrong type", ["derive"], JSON.stringify({ records: [record(1), record(2), record(3), record(4, { riskLevel: "extreme" })] }),
      /^vrai derive: records\[3\]\.riskLevel: expected low\|medium\|high\|critical, got "extreme" \(txHash 0x4\)\n$/],
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
      for (const argv of [[name, "--help"], [name, "-h"], ["help", name], [name, "extra", "--help"]]) {
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

    describe("compiled into one bundle (bin/bundle.js)", () => {
      const { ensureBundle } = require("../../bin/bundle.js") as { ensureBundle(entry: string): string };
      const builtAt = (file: string) => statSync(file).mtimeMs;
      const LONG_AGO = new Date(1_000_000_000_000);

      it("runs the bundle, built again when a file it was built from is newer than it", () => {
        const bundle = ensureBundle("src/cli/main.ts");
        expect(ensureBundle("src/cli/main.ts")).to.equal(bundle);
        const fresh = builtAt(bundle);
        // Older than every source: the command must build it again before running.
        utimesSync(bundle, LONG_AGO, LONG_AGO);
        const input = JSON.stringify({ records: [record(1)] });
        const result = node(["derive"], input);
        expect(result.status).to.equal(0, result.stderr);
        expect(builtAt(bundle)).to.be.at.least(fresh);
        // Fresh now: another run leaves it as it is.
        const rebuilt = builtAt(bundle);
        expect(node(["derive"], input).stdout).to.equal(result.stdout);
        expect(builtAt(bundle)).to.equal(rebuilt);
      });

      it("is built again when a file it was built from is gone (moved or renamed)", () => {
        const bundle = ensureBundle("src/cli/main.ts");
        const list = `${bundle}.inputs.json`;
        const inputs = JSON.parse(readFileSync(list, "utf8")) as string[];
        expect(inputs).to.include.members(["src/cli/main.ts", "src/method/days.ts", "src/store/memory-store.ts"]);
        writeFileSync(list, JSON.stringify([...inputs, "src/no-such-file.ts"]));
        // Newer than every source, so only the missing file can make it build again.
        const later = new Date(Date.now() + 60_000);
        utimesSync(bundle, later, later);
        const before = builtAt(bundle);
        ensureBundle("src/cli/main.ts");
        expect(JSON.parse(readFileSync(list, "utf8"))).to.deep.equal(inputs);
        expect(builtAt(bundle)).to.be.below(before);
      });

      it("never runs a stale bundle: where it cannot build one (dist/ not writable), it runs the sources", () => {
        const bundle = ensureBundle("src/cli/main.ts");
        const input = JSON.stringify({ records: [record(1)] });
        writeFileSync(bundle, 'exports.main = () => process.stdout.write("stale bundle\\n");');
        utimesSync(bundle, LONG_AGO, LONG_AGO);
        // Root may write anywhere, so as root the command runs as nobody; anyone else gets dist/ made read-only.
        const asRoot = process.getuid?.() === 0;
        const dist = path.dirname(bundle);
        let result;
        try {
          if (!asRoot) chmodSync(dist, 0o555);
          result = spawnSync(process.execPath, [bin, "derive"], { input, encoding: "utf8", ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
          expect(readFileSync(bundle, "utf8")).to.include("stale bundle");
        } finally {
          if (!asRoot) chmodSync(dist, 0o755);
        }
        expect(result.status).to.equal(0, result.stderr);
        expect(result.stdout).not.to.include("stale");
        // Writable again: the next run builds a fresh bundle and answers the same.
        expect(node(["derive"], input).stdout).to.equal(result.stdout);
        expect(readFileSync(bundle, "utf8")).not.to.include("stale bundle");
        expect(JSON.parse(result.stdout).executors[EX].total).to.equal(1);
      });

      it("answers byte for byte as the TypeScript sources do (VRAI_BUNDLE=0)", () => {
        const t = parseRfc3339("2026-10-01T00:00:00Z");
        const events = [
          { at: t, type: "claim", agent: "a", owner: "o" },
          ...Array.from({ length: 30 }, (_, h) => ({ at: t + 60 + h * 3600 + (h % 7) * 300, type: "checkin", agent: "a", key: `k${h % 25}` })),
          { at: t + 31 * 3600, type: "penalty", id: "p", agent: "a", code: "rate_abuse", points: 20, days: 30 },
          { at: t + 32 * 3600, type: "score", agent: "a" },
          { at: t + 32 * 3600, type: "checkin", agent: "nobody", key: "k" },
        ];
        const input = JSON.stringify({ method: "0.2", events });
        const bundled = node(["replay"], input);
        const sources = spawnSync(process.execPath, [bin, "replay"], { input, encoding: "utf8", env: { ...process.env, VRAI_BUNDLE: "0" } });
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
