/**
 * `npm run test:mutation [-- --area method|services] [-- <stryker options>]` (issue #30): runs Stryker
 * (stryker.config.mjs) over each area in turn, src/method/ with its tests and then the check-in, proof-check and
 * scoring services with theirs, and prints for each the time it took, its mutation score against its target and
 * every surviving mutant on one line (file:line:column, the mutator, the code it changed and what it became).
 * Exits 1 when an area is below its target. Other options go to `stryker run`, e.g. `--mutate src/method/time.ts`
 * (with the area that holds it) for one file, `--incremental` to rerun only the mutants whose code or tests changed
 * since the area's last run, `--concurrency 1` to leave a core to other work.
 *
 * The score is Stryker's: mutants detected (killed by a test, or timed out) over the valid ones (detected,
 * survived, or reached by no test); mutants that do not compile or throw before a test runs are left out.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../src/project-root";

/** The areas of the issue (stryker.config.mjs's MUTATION_AREA) and their targets (percent of valid mutants detected). */
const AREAS = [
  { name: "method", title: "src/method/", target: 90 },
  { name: "services", title: "services (checkins.ts, proof-checks.ts, scoring.ts)", target: 80 },
] as const;

/** What a mutant of Stryker's JSON report (mutation-testing-report-schema) says that is read here. */
type ReportedMutant = {
  mutatorName: string;
  replacement?: string;
  status: "Killed" | "Survived" | "NoCoverage" | "Timeout" | "CompileError" | "RuntimeError" | "Ignored" | "Pending";
  location: { start: { line: number; column: number }; end: { line: number; column: number } };
};
type Report = { files: Record<string, { source: string; mutants: ReportedMutant[] }> };

/** Mutants an area's score counts, by outcome. */
type Tally = { detected: number; survived: number; noCoverage: number; invalid: number };

/** Stryker's mutation score: detected over valid, in percent (100 when there is nothing to detect). */
function scoreOf(t: Tally): number {
  const valid = t.detected + t.survived + t.noCoverage;
  return valid === 0 ? 100 : (100 * t.detected) / valid;
}

/** Adds one mutant to a tally. */
function count(t: Tally, status: ReportedMutant["status"]): void {
  if (status === "Killed" || status === "Timeout") t.detected++;
  else if (status === "Survived") t.survived++;
  else if (status === "NoCoverage") t.noCoverage++;
  else t.invalid++;
}

/** The source text a mutant replaced, on one line and shortened. */
function original(source: string, m: ReportedMutant): string {
  const lines = source.split("\n");
  const { start, end } = m.location;
  const text =
    start.line === end.line
      ? lines[start.line - 1].slice(start.column - 1, end.column - 1)
      : [
          lines[start.line - 1].slice(start.column - 1),
          ...lines.slice(start.line, end.line - 1),
          lines[end.line - 1].slice(0, end.column - 1),
        ].join(" ");
  return shorten(text);
}

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 70 ? `${flat.slice(0, 67)}...` : flat;
}

/** Runs one area; prints and returns whether it met its target. */
function runArea(area: (typeof AREAS)[number], strykerArgs: readonly string[]): boolean {
  const started = process.hrtime.bigint();
  const stryker = path.join(PROJECT_ROOT, "node_modules", ".bin", "stryker");
  const run = spawnSync(stryker, ["run", "stryker.config.mjs", ...strykerArgs], {
    cwd: PROJECT_ROOT,
    stdio: "inherit",
    env: { ...process.env, MUTATION_AREA: area.name },
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.status !== 0) {
    console.error(`${area.title}: stryker run failed (exit ${run.status ?? run.signal}) after ${seconds.toFixed(0)} s`);
    return false;
  }
  const reportFile = path.join(PROJECT_ROOT, "reports", "mutation", `${area.name}.json`);
  const report = JSON.parse(fs.readFileSync(reportFile, "utf8")) as Report;
  const tally: Tally = { detected: 0, survived: 0, noCoverage: 0, invalid: 0 };
  const survivors: string[] = [];
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    for (const m of mutants) {
      count(tally, m.status);
      if (m.status === "Survived" || m.status === "NoCoverage") {
        const what = `${m.mutatorName}: ${original(source, m)} -> ${shorten(m.replacement ?? "")}`;
        survivors.push(
          `${file}:${m.location.start.line}:${m.location.start.column} ${m.status === "NoCoverage" ? "(no test) " : ""}${what}`,
        );
      }
    }
  }
  const score = scoreOf(tally);
  const ok = score >= area.target;
  if (survivors.length > 0) console.log(`\n${area.title}: survivors (${survivors.length}):\n${survivors.join("\n")}`);
  console.log(
    `\n${area.title}: ${score.toFixed(2)} % of ${tally.detected + tally.survived + tally.noCoverage} mutants detected ` +
      `(target ${area.target} %: ${ok ? "met" : "NOT MET"}); ${tally.survived} survived, ${tally.noCoverage} reached by no test, ` +
      `${tally.invalid} left out (an error before any test ran); ${seconds.toFixed(0)} s (${(seconds / 60).toFixed(1)} min); ` +
      `report: ${path.relative(PROJECT_ROOT, reportFile.replace(/json$/, "html"))}`,
  );
  return ok;
}

function main(): void {
  const args = process.argv.slice(2);
  const at = args.indexOf("--area");
  const only = at === -1 ? undefined : args.splice(at, 2)[1];
  const areas = AREAS.filter((area) => only === undefined || area.name === only);
  if (areas.length === 0) {
    console.error(`--area: expected ${AREAS.map((a) => a.name).join(" or ")}, got ${only}`);
    process.exit(2);
  }
  const results = areas.map((area) => runArea(area, args));
  if (results.includes(false)) process.exit(1);
}

main();
