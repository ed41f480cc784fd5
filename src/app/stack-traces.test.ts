/**
 * Stack traces through the `vrai` bundle's map (issue #30). Each case runs in a node process of its own, as bin/vrai.js
 * does: `mapStackTracesOf` sets the process's `Error.prepareStackTrace`, which a test worker must keep as tsx set it.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { PROJECT_ROOT } from "../project-root";

const run = promisify(execFile);
const BUNDLE = path.join(PROJECT_ROOT, "dist", "vrai.cjs");

/** Runs `script` in `node -e` from the project's root, with `args` loaded first; its standard output parsed as JSON. */
async function nodeJson<T>(script: string, args: string[] = []): Promise<T> {
  const { stdout } = await run(process.execPath, [...args, "-e", script], { cwd: PROJECT_ROOT });
  return JSON.parse(stdout) as T;
}

describe("stack traces of the vrai bundle (issue #30)", () => {
  it("name the TypeScript source, line and column of each of the bundle's frames, as bin/vrai.js sets them up", async () => {
    // runCli (src/cli/main.ts) answers --help with io.stdout(...): the frame of that call is the bundle's.
    const { stack, maps } = await nodeJson<{ stack: string; maps: boolean }>(`
      const cli = require(${JSON.stringify(BUNDLE)});
      cli.mapStackTracesOf(${JSON.stringify(BUNDLE)});
      let stack = "";
      const io = { stdout: () => { stack = new Error("probe").stack; }, stderr: () => {}, readStdin: async () => "", readFile: async () => "" };
      cli.runCli(["--help"], io).then(() => console.log(JSON.stringify({ stack, maps: process.sourceMapsEnabled })));
    `);
    const lines = stack.split("\n");
    expect(lines[0]).to.equal("Error: probe");
    const main = path.join(PROJECT_ROOT, "src", "cli", "main.ts");
    const frame = lines.find((line) => line.includes("runCli ("));
    const at = new RegExp(`^    at (?:Object\\.)?runCli \\(${main.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:(\\d+):(\\d+)\\)$`).exec(
      frame ?? "",
    );
    expect(at, stack).to.not.equal(null);
    const source = fs.readFileSync(main, "utf8").split("\n")[Number(at![1]) - 1];
    expect(source, `line ${at![1]} of main.ts`).to.contain("io.stdout(");
    expect(Number(at![2])).to.be.within(1, source.length);
    expect(stack, "no frame left in the bundle").to.not.contain(BUNDLE);
    // Node's own source maps stay off: they would read every dependency's map at each start.
    expect(maps).to.equal(false);
  });

  describe("a bundle of one line mapped to line 10, column 3 of original.ts", () => {
    let dir: string;
    let mapped: string;
    // f calls g, which makes the error: a frame in plain.cjs, then one in mapped.cjs.
    const MAPPED = "exports.f = function f(g) { return g(); };\n";
    const PLAIN = 'exports.g = function g() { return new Error("boom"); };\n';
    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-stack-traces-"));
      mapped = path.join(dir, "mapped.cjs");
      // Generated line 1, column 0 is line 10, column 2 of original.ts (mappings "AASE": 0, 0, +9, +2).
      fs.writeFileSync(mapped, MAPPED);
      fs.writeFileSync(path.join(dir, "plain.cjs"), PLAIN);
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** The stack of an error made in plain.cjs, called from mapped.cjs, with `mapped` mapped; and whether the map parsed. */
    const stackThrough = () =>
      nodeJson<{ stack: string; parsed: boolean }>(
        `
        const { mapStackTracesOf, parseStackTraceMapNow } = require("./src/app/stack-traces.ts");
        mapStackTracesOf(${JSON.stringify(mapped)});
        const { f } = require(${JSON.stringify(mapped)});
        const { g } = require(${JSON.stringify(path.join(dir, "plain.cjs"))});
        console.log(JSON.stringify({ stack: f(g).stack, parsed: parseStackTraceMapNow() }));
        `,
        ["--require", "tsx/cjs"],
      );

    it("maps the bundle's frame and leaves a frame of another file as V8 writes it", async () => {
      fs.writeFileSync(`${mapped}.map`, JSON.stringify({ version: 3, sources: ["original.ts"], names: [], mappings: "AASE" }));
      const { stack, parsed } = await stackThrough();
      const lines = stack.split("\n");
      expect(lines[0]).to.equal("Error: boom");
      expect(lines[1]).to.equal(`    at g (${path.join(dir, "plain.cjs")}:1:${PLAIN.indexOf("new Error") + 1})`);
      expect(lines[2]).to.equal(`    at f (${path.join(dir, "original.ts")}:10:3)`);
      expect(parsed).to.equal(true);
    });

    it("keeps the bundle's own positions when its map is missing or unreadable, and says no map is in use", async () => {
      for (const map of [undefined, "{ not json"]) {
        fs.rmSync(`${mapped}.map`, { force: true });
        if (map !== undefined) fs.writeFileSync(`${mapped}.map`, map);
        const { stack, parsed } = await stackThrough();
        expect(stack.split("\n")[2], String(map)).to.equal(`    at f (${mapped}:1:${MAPPED.indexOf("g();") + 1})`);
        expect(parsed).to.equal(false);
      }
    });
  });
});
