/**
 * `npm run bench:unit-run [-- mocha arguments]`: the unit run (`npm run test:unit`: mocha with .mocharc.cjs, two
 * workers) timed against issue #30's bound of 8 minutes, and what bounds it on this machine.
 *
 * 1. Before the run: how busy the machine already is (2 s of /proc/stat), and two reference workloads that tell one
 *    machine from another, each the median of its tries: a start of the `vrai` command (`node bin/vrai.js --help`, 10
 *    tries: a process start and the bundle's modules loaded, as the run's child processes do) and SHA-256 over 256 MiB
 *    in this process (3 tries).
 * 2. The run, as `npm run test:unit` runs it (arguments after `--` go to mocha, e.g. `--jobs 3`), with
 *    `VRAI_TEST_TIMES` set (src/test-helpers/test-times.ts) to a temporary file.
 * 3. Its figures: wall time against the bound; the whole machine's busy CPU time and idle core time (/proc/stat, so
 *    PostgreSQL's backends count); the CPU time of the run's own processes (mocha, its workers and everything they
 *    started and waited for: this process's reaped children in /proc/self/stat; not what they left to init, such as the
 *    PostgreSQL servers pg_auto_failover starts, which count in the rest with the machine's own); the floor busy time sets,
 *    busy ÷ cores, which no ordering of the files can beat; the machine's busy time in units of each reference (how
 *    many `vrai` starts, how many SHA-256s of 256 MiB), to compare runs on machines of different speeds; the longest files.
 *
 * The exit code is mocha's when the run fails, 1 when it passes over the bound, 0 under it; 2 when /proc is missing.
 */
import { execFileSync, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { InvalidInputError } from "../../src/errors";
import { PROJECT_ROOT } from "../../src/project-root";
import { buildCommand, fmt, printRows, type Row } from "./harness";

/** Issue #30: "the unit run stays under 8 minutes ... on this machine". */
export const UNIT_RUN_BOUND_S = 480;

/** A machine's CPU time since boot in clock ticks, all cores together: busy (every state but idle and iowait) and idle. */
export type MachineTicks = { busy: number; idle: number };

/**
 * The machine's ticks from the text of /proc/stat (its first line, "cpu  user nice system idle iowait irq softirq
 * steal ..."; guest time is already inside user).
 * @throws InvalidInputError `proc_stat` when the text has no such line
 */
export function machineTicks(procStat: string): MachineTicks {
  const line = procStat.split("\n").find((l) => l.startsWith("cpu "));
  const fields = line?.trim().split(/\s+/).slice(1, 9).map(Number);
  if (!fields || fields.length < 8 || fields.some((n) => !Number.isInteger(n) || n < 0))
    throw new InvalidInputError(
      "proc_stat",
      `/proc/stat: expected a line "cpu  user nice system idle iowait irq softirq steal", got ${JSON.stringify(line)}`,
    );
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
  return { busy: user + nice + system + irq + softirq + steal, idle: idle + iowait };
}

/**
 * The CPU ticks of a process's children that it has waited for (their own waited-for children included), from the
 * text of its /proc/<pid>/stat: fields 16 and 17, cutime and cstime, counted after the command name's last ")".
 * @throws InvalidInputError `proc_stat` when the text is not such a line
 */
export function reapedChildrenTicks(selfStat: string): number {
  const rest = selfStat
    .slice(selfStat.lastIndexOf(")") + 2)
    .trim()
    .split(" ");
  const [cutime, cstime] = [Number(rest[13]), Number(rest[14])];
  if (!selfStat.includes(")") || !Number.isInteger(cutime) || !Number.isInteger(cstime))
    throw new InvalidInputError(
      "proc_stat",
      `/proc/self/stat: expected "pid (comm) state ..." with 17 fields or more, got ${JSON.stringify(selfStat)}`,
    );
  return cutime + cstime;
}

/** The `count` files that took longest, from `VRAI_TEST_TIMES`'s lines ("ms<TAB>path"), their paths relative to `root`. */
export function longestFiles(times: string, root: string, count: number): Array<{ ms: number; file: string }> {
  return times
    .split("\n")
    .filter((line) => line.includes("\t"))
    .map((line) => {
      const [ms, file] = line.split("\t");
      return { ms: Number(ms), file: path.relative(root, file) };
    })
    .sort((a, b) => b.ms - a.ms)
    .slice(0, count);
}

const readTicks = () => machineTicks(fs.readFileSync("/proc/stat", "utf8"));
const childTicks = () => reapedChildrenTicks(fs.readFileSync("/proc/self/stat", "utf8"));

/** Clock ticks per second (`getconf CLK_TCK`: 100 on Linux). */
const ticksPerSecond = () => Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** Runs `command` to its end, its output to this process's or nowhere; resolves with its exit code. */
function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv, output: "inherit" | "ignore"): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: PROJECT_ROOT, env, stdio: ["ignore", output, output] });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/** The median of `values` (the mean of the two middle ones when their count is even). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The reference workloads, each the median of several tries so that one slow try does not move it: the CPU seconds of
 * one start of the `vrai` command (`count` tries), and of SHA-256 over 256 MiB in this process (3 tries).
 */
async function references(hz: number, count: number): Promise<{ start: number; sha256: number }> {
  const starts: number[] = [];
  for (let i = 0; i < count; i++) {
    const before = childTicks();
    const code = await runToEnd(process.execPath, ["bin/vrai.js", "--help"], process.env, "ignore");
    if (code !== 0) throw new Error(`node bin/vrai.js --help exited with ${code}`);
    starts.push((childTicks() - before) / hz);
  }
  const chunk = Buffer.alloc(2 ** 20, 7);
  const hashes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const cpu0 = process.cpuUsage();
    const hash = crypto.createHash("sha256");
    for (let j = 0; j < 256; j++) hash.update(chunk);
    hash.digest();
    const used = process.cpuUsage(cpu0);
    hashes.push((used.user + used.system) / 1e6);
  }
  return { start: median(starts), sha256: median(hashes) };
}

export type UnitRunResult = { code: number; wallS: number; busyS: number; idleS: number; runS: number; cores: number; rows: Row[] };

/**
 * Where the bench prints (`log`), whether mocha's own output shows, how many `vrai` starts the reference tries (10), and
 * how long the machine's load is read before the run (2,000 ms).
 */
export type UnitRunOptions = { log?: (line: string) => void; mochaOutput?: "inherit" | "ignore"; starts?: number; quietMs?: number };

/**
 * Measures the unit run with `mochaArgs` added to the project's configuration.
 * @throws InvalidInputError `proc_stat` where /proc/stat is missing (not Linux): nothing has run
 */
export async function runUnitRunBench(mochaArgs: string[], options: UnitRunOptions = {}): Promise<UnitRunResult> {
  const { log = console.log, mochaOutput = "inherit", starts = 10, quietMs = 2000 } = options;
  if (!fs.existsSync("/proc/stat") || !fs.existsSync("/proc/self/stat"))
    throw new InvalidInputError("proc_stat", "bench:unit-run reads /proc/stat and /proc/self/stat: it runs on Linux only");
  const hz = ticksPerSecond();
  const cores = os.availableParallelism();
  const quiet0 = readTicks();
  await new Promise((resolve) => setTimeout(resolve, quietMs));
  const quiet1 = readTicks();
  const alreadyBusy = (quiet1.busy - quiet0.busy) / (quiet1.busy - quiet0.busy + quiet1.idle - quiet0.idle);
  const reference = await references(hz, starts);
  log(
    `before the run: the machine ${(alreadyBusy * 100).toFixed(0)}% busy over ${fmt(quietMs / 1000, 1)} s; ` +
      `a vrai start ${reference.start.toFixed(2)} CPU-s (median of ${starts}), SHA-256 of 256 MiB ${reference.sha256.toFixed(3)} CPU-s (of 3)`,
  );

  const timesFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "vrai-bench-unit-run-")), "times.tsv");
  const mocha = path.join(PROJECT_ROOT, "node_modules", "mocha", "bin", "mocha.js");
  const [machine0, run0, t0] = [readTicks(), childTicks(), performance.now()];
  const code = await runToEnd(process.execPath, [mocha, ...mochaArgs], { ...process.env, VRAI_TEST_TIMES: timesFile }, mochaOutput);
  const [machine1, run1, t1] = [readTicks(), childTicks(), performance.now()];
  const times = fs.existsSync(timesFile) ? fs.readFileSync(timesFile, "utf8") : "";
  fs.rmSync(path.dirname(timesFile), { recursive: true, force: true });

  const wallS = (t1 - t0) / 1000;
  const busyS = (machine1.busy - machine0.busy) / hz;
  const idleS = (machine1.idle - machine0.idle) / hz;
  const runS = (run1 - run0) / hz;
  const rows: Row[] = [
    {
      figure: "wall time of the unit run",
      value: `${fmt(wallS)} s`,
      target: `under ${UNIT_RUN_BOUND_S} s (issue #30)`,
      verdict: code !== 0 ? "FAIL" : wallS < UNIT_RUN_BOUND_S ? "PASS" : "FAIL",
    },
    { figure: "machine busy", value: `${fmt(busyS)} CPU-s`, target: `${cores} cores`, verdict: "" },
    { figure: "machine idle", value: `${fmt(idleS)} core-s`, target: "", verdict: "" },
    {
      figure: "floor set by busy time (busy ÷ cores)",
      value: `${fmt(busyS / cores)} s`,
      target: `under ${UNIT_RUN_BOUND_S} s to be reachable`,
      verdict: busyS / cores < UNIT_RUN_BOUND_S ? "PASS" : "FAIL",
    },
    { figure: "the run's processes (mocha, workers, children)", value: `${fmt(runS)} CPU-s`, target: "", verdict: "" },
    { figure: "the rest (PostgreSQL, daemons, other work)", value: `${fmt(busyS - runS)} CPU-s`, target: "", verdict: "" },
    { figure: "machine busy in vrai starts' CPU", value: fmt(busyS / reference.start), target: "", verdict: "" },
    { figure: "machine busy in SHA-256s of 256 MiB", value: fmt(busyS / reference.sha256), target: "", verdict: "" },
  ];
  log("");
  log("longest files (ms, hooks included):");
  for (const { ms, file } of longestFiles(times, PROJECT_ROOT, 10)) log(`  ${fmt(ms).padStart(7)}  ${file}`);
  printRows(`unit run: exit ${code}, ${fmt(wallS)} s on ${cores} cores`, rows, log);
  return { code, wallS, busyS, idleS, runS, cores, rows };
}

if (require.main === module) {
  const args = process.argv.slice(2);
  buildCommand();
  runUnitRunBench(args)
    .then((result) => {
      process.exitCode = result.code !== 0 ? result.code : result.wallS < UNIT_RUN_BOUND_S ? 0 : 1;
    })
    .catch((error: unknown) => {
      if (error instanceof InvalidInputError) {
        console.error(`bench:unit-run: ${error.message}`);
        process.exitCode = 2;
        return;
      }
      console.error(error);
      process.exitCode = 1;
    });
}
