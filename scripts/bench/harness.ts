/**
 * What the benches that run `vrai serve` share: the command built from these sources, a database of their own on
 * TEST_PG_ADMIN_URL's server, load generators started evenly through a second, and the closing table of figures.
 */
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import path from "node:path";
import autocannon from "autocannon";
import pg from "pg";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

/** One figure of a bench, its target and PASS or FAIL ("" where the figure has no target of its own). */
export type Row = { figure: string; value: string; target: string; verdict: "PASS" | "FAIL" | "" };

/** `n` with thousands separators and exactly `digits` decimals. */
export const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** `title`, then one aligned line per row: figure, value, target, verdict; each line through `log`. */
export function printRows(title: string, rows: readonly Row[], log: (line: string) => void = console.log): void {
  const w = [
    Math.max(...rows.map((r) => r.figure.length)),
    Math.max(...rows.map((r) => r.value.length)),
    Math.max(...rows.map((r) => r.target.length)),
  ];
  log("");
  log(title);
  for (const r of rows) log(`${r.figure.padEnd(w[0])}  ${r.value.padStart(w[1])}  ${r.target.padEnd(w[2])}  ${r.verdict}`);
}

/** Builds the `vrai` bundle from these sources: the benches run the command as an operator does. */
export function buildCommand(): void {
  execFileSync("npm", ["run", "build", "--silent"], { cwd: path.resolve(__dirname, "../.."), stdio: "inherit" });
}

/** A new, empty database named `<prefix>_<random>` for one run: its name, its URL, and how to drop it (connections and all). */
export async function createBenchDatabase(prefix: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${crypto.randomBytes(4).toString("hex")}`;
  const root = new pg.Client({ connectionString: ADMIN_URL });
  await root.connect();
  await root.query(`CREATE DATABASE ${name}`);
  return {
    name,
    url: ADMIN_URL.replace(/\/[^/]*$/, `/${name}`),
    async drop() {
      try {
        await root.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await root.end();
      }
    },
  };
}

/**
 * Calls `start(i)` for i = 0 .. count - 1, the i-th at `t0 + i * withinMs / count` (each at its own offset from t0, so
 * late timers do not add up): load generators whose seconds begin at even offsets send evenly through the second.
 * @returns what each call returned, once the last has been called
 */
export async function startEvenly<T>(count: number, withinMs: number, start: (i: number) => T, t0 = performance.now()): Promise<T[]> {
  const started: T[] = [];
  for (let i = 0; i < count; i++) {
    const wait = t0 + (i * withinMs) / count - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    started.push(start(i));
  }
  return started;
}

/** Runs autocannon with `options`, handing its instance to `attach` (to listen to its events) as it starts. */
export function runAutocannon(
  options: autocannon.Options,
  attach: (instance: autocannon.Instance) => void = () => undefined,
): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => attach(autocannon(options, (err, result) => (err ? reject(err) : resolve(result)))));
}
