/** `npm run bench:unit-run` (issue #30): its parsers of /proc, and a run of a tiny suite measured as it measures the unit run. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { longestFiles, machineTicks, median, reapedChildrenTicks, runUnitRunBench, type UnitRunResult } from "../scripts/bench/unit-run";
import { InvalidInputError } from "./errors";

describe("bench:unit-run (issue #30)", () => {
  it("reads the machine's busy and idle ticks from /proc/stat's cpu line (iowait idle, steal busy)", () => {
    const stat = "cpu  100 2 30 400 5 6 7 8 0 0\ncpu0 50 1 15 200 2 3 3 4 0 0\nintr 1\n";
    expect(machineTicks(stat)).to.deep.equal({ busy: 100 + 2 + 30 + 6 + 7 + 8, idle: 400 + 5 });
    expect(() => machineTicks("intr 1\n")).to.throw(InvalidInputError, /\/proc\/stat: expected a line "cpu /);
    expect(() => machineTicks("cpu  1 2 x 4 5 6 7 8\n")).to.throw(InvalidInputError);
  });

  it("reads a process's waited-for children's ticks from its /proc/<pid>/stat, a name with spaces and parentheses included", () => {
    const fields = ["S", "1", "2", "3", "0", "-1", "4194304", "10", "0", "0", "0", "11", "12", "130", "7", "20", "0"];
    expect(reapedChildrenTicks(`42 (a (b) c) ${fields.join(" ")}`)).to.equal(137);
    expect(() => reapedChildrenTicks("42 (node) S 1")).to.throw(InvalidInputError, /\/proc\/self\/stat/);
  });

  it("takes the median of the reference's tries: the middle one, or the mean of the middle two", () => {
    expect(median([3, 1, 2])).to.equal(2);
    expect(median([4, 1, 3, 2])).to.equal(2.5);
    expect(median([0.7])).to.equal(0.7);
  });

  it("lists the files that took longest first, their paths relative to the root", () => {
    const times = "120\t/r/src/a.test.ts\n9000\t/r/src/b.test.ts\n\n450\t/r/src/c.test.ts\n";
    expect(longestFiles(times, "/r", 2)).to.deep.equal([
      { ms: 9000, file: "src/b.test.ts" },
      { ms: 450, file: "src/c.test.ts" },
    ]);
  });

  describe("a run of a two-file suite (mocha started as the bench starts the unit run: a few seconds)", function () {
    this.timeout(60_000);
    let dir: string;
    const lines: string[] = [];
    let passed: UnitRunResult;
    let failed: UnitRunResult;
    // Each file's one test burns CPU for 300 ms, so the run's processes have CPU time to count.
    const suite = (name: string, body: string) => {
      const file = path.join(dir, name);
      fs.writeFileSync(
        file,
        `describe("${name}", () => it("burns 300 ms", () => { const end = Date.now() + 300; while (Date.now() < end); ${body} }));\n`,
      );
      return file;
    };
    // In two workers, each file alone under its root suite, as .mocharc.cjs runs the unit run.
    const args = (...files: string[]) => [
      "--no-config",
      "--parallel",
      "--jobs",
      "2",
      "--require",
      "tsx/cjs",
      "--require",
      "./src/test-helpers/test-times.ts",
      ...files,
    ];

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-bench-unit-run-test-"));
      const [a, b, bad] = [suite("a.test.js", ""), suite("b.test.js", ""), suite("bad.test.js", 'throw new Error("wrong");')];
      passed = await runUnitRunBench(args(a, b), { log: (line) => lines.push(line), mochaOutput: "ignore", starts: 1, quietMs: 200 });
      // Mocha alone, in one process: only its exit code counts here.
      failed = await runUnitRunBench(["--no-config", bad], { log: () => undefined, mochaOutput: "ignore", starts: 1, quietMs: 200 });
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("counts the run's processes' CPU, within the machine's busy time, and the floor it sets", () => {
      expect(passed.code).to.equal(0);
      expect(passed.runS).to.be.at.least(0.5);
      expect(passed.busyS).to.be.at.least(passed.runS - 0.05);
      expect(passed.wallS).to.be.greaterThan(0.3).and.lessThan(60);
      const floor = passed.rows.find((r) => r.figure.startsWith("floor"));
      expect(floor?.value).to.equal(`${Math.round(passed.busyS / passed.cores)} s`);
      expect(passed.rows[0]).to.include({ figure: "wall time of the unit run", verdict: "PASS" });
    });

    it("prints the references before the run, the files by time, and the figures", () => {
      expect(lines[0]).to.match(
        /^before the run: the machine \d+% busy over 0\.2 s; a vrai start \d+\.\d\d CPU-s \(median of 1\), SHA-256 of 256 MiB \d+\.\d{3} CPU-s \(of 3\)$/,
      );
      const files = lines.slice(
        lines.indexOf("longest files (ms, hooks included):") + 1,
        lines.indexOf("longest files (ms, hooks included):") + 3,
      );
      expect(files.map((l) => path.basename(l.trim().split(/\s+/)[1])).sort()).to.deep.equal(["a.test.js", "b.test.js"]);
      expect(lines).to.include(`unit run: exit 0, ${Math.round(passed.wallS)} s on ${passed.cores} cores`);
    });

    it("fails the wall-time figure of a run whose tests fail, with mocha's exit code", () => {
      expect(failed.code).to.equal(1);
      expect(failed.rows[0].verdict).to.equal("FAIL");
    });
  });
});
