/**
 * `npm run bench:site`: the public site against real PostgreSQL with 100,000 claimed agents, each
 * figure printed beside its target from issue 16.
 *
 * The agents are bulk-loaded with SQL (scripts/bench/service.ts's `bulkLoad`: 30 days of history,
 * proofs, penalties), and their latest scores written by the service's own daily recompute (its bulk
 * path, which also puts each latest score on its agent's row for the directory). Then, each at a
 * steady rate with autocannon (connections of 20 requests a second, started evenly through the
 * second, as bench:service's steady schedule; 3 s of warm-up on the same connections, then the
 * measured window):
 * - `GET /agents`, the first page and a page 2,000 deep (its cursor), and `GET /v1/agents`, first
 *   and deep, at 200 requests/s each: p99 under 50 ms;
 * - `GET /agents/{id}/badge.svg` of random agents at 1,000 requests/s: p99 under 10 ms.
 * The server runs in a child process (this file with `--site-serve`), so the load generator's CPU is not
 * the server's. Environment: BENCH_AGENTS (100000, read by bulkLoad), BENCH_SITE_S (15), TEST_PG_ADMIN_URL.
 */
import { fork, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import os from "node:os";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import pg from "pg";
import pino from "pino";
import { dayStart } from "../../src/method";
import { startApiServer } from "../../src/app/server";
import { createVraiService } from "../../src/service";
import { createManualClock } from "../../src/service/clock";
import { encodeCursor } from "../../src/service/directory";
import { createPgDb } from "../../src/store/db";
import { migrate } from "../../src/store/migrate";
import { createSqlStore } from "../../src/store/sql-store";
import { bulkLoad } from "./service";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const AGENTS = Number(process.env.BENCH_AGENTS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SITE_S ?? 15);
const WARMUP_S = 3;
/** The day bulkLoad's history leads up to (scripts/bench/service.ts): its daily scores are the latest. */
const DAY = "2026-11-02";
const AT = dayStart(DAY);
/** Pages of 20 before the deep page: 40,000 agents in. */
const DEEP_PAGES = 2_000;
/** Each autocannon connection sends this many requests a second. */
const PER_CONNECTION = 20;
const OPERATOR_TOKEN = "operator-bench-token-0123456789";

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (x: number) => `${x.toFixed(1)} ms`;
const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] : NaN;
const log = (...args: unknown[]) => console.log(...args);

/** The API server in this child process, on the database the parent loaded. */
async function serve(): Promise<void> {
  const db = createPgDb(process.env.BENCH_DB_URL as string, { max: 20 });
  const server = await startApiServer({
    db,
    operatorToken: OPERATOR_TOKEN,
    clock: createManualClock(AT + 3600),
    logger: pino({ level: "silent" }),
    // The load comes from one address: limits and connection caps out of its way.
    rateLimit: { perMinute: 1_000_000_000, burst: 1_000_000_000 },
    serverLimits: { maxConnections: 10_000, maxConnectionsPerAddress: 10_000, maxRequestsPerSocket: 0 },
  });
  await server.scoreCache?.warmed;
  process.on("message", async () => {
    await server.close();
    await db.close();
    process.exit(0);
  });
  process.send?.({ url: server.url });
}

function startServer(dbUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const child = fork(__filename, ["--site-serve"], { env: { ...process.env, BENCH_DB_URL: dbUrl }, stdio: "inherit" });
  return new Promise((resolve, reject) => {
    child.once("message", (m: { url: string }) => resolve({ child, url: m.url }));
    child.once("exit", (code) => reject(new Error(`server child exited with ${code}`)));
  });
}

type Measured = { ok: number; other: number; errors: number; latencies: number[] };

/**
 * `rate` requests a second for WARMUP_S + SECONDS, from rate / PER_CONNECTION autocannon
 * connections started evenly through one second; the answers to requests sent in the last SECONDS
 * are measured (latencies from autocannon's 'response' events, not its histogram).
 */
async function steadyLoad(url: string, rate: number, path: () => string): Promise<Measured> {
  const out: Measured = { ok: 0, other: 0, errors: 0, latencies: [] };
  const connections = Math.max(1, Math.round(rate / PER_CONNECTION));
  const t0 = performance.now();
  const opens = t0 + WARMUP_S * 1000;
  const closes = opens + SECONDS * 1000;
  const finished: Promise<unknown>[] = [];
  for (let i = 0; i < connections; i++) {
    const wait = t0 + (i * 1000) / connections - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    let done: (value: unknown) => void = () => undefined;
    finished.push(new Promise((resolve) => (done = resolve)));
    const instance = autocannon(
      {
        url,
        connections: 1,
        connectionRate: PER_CONNECTION,
        duration: WARMUP_S + SECONDS,
        requests: [{ method: "GET", setupRequest: (req: autocannon.Request) => ({ ...req, path: path() }) }],
      },
      (error, result) => done(error ?? result),
    );
    instance.on("response", (_client: unknown, status: number, _bytes: number, took: number) => {
      const sentAt = performance.now() - took;
      if (sentAt < opens || sentAt >= closes) return;
      if (status >= 200 && status < 300) out.ok++;
      else out.other++;
      out.latencies.push(took);
    });
    instance.on("reqError", () => void out.errors++);
  }
  await Promise.all(finished);
  out.latencies.sort((a, b) => a - b);
  return out;
}

async function main(): Promise<void> {
  const started = performance.now();
  const dbName = `vrai_bench_site_${crypto.randomBytes(4).toString("hex")}`;
  const dbUrl = ADMIN_URL.replace(/\/[^/]*$/, `/${dbName}`);
  const root = new pg.Client({ connectionString: ADMIN_URL });
  await root.connect();
  await root.query(`CREATE DATABASE ${dbName}`);
  log(
    `database ${dbName}; ${os.cpus().length} cores; node ${process.version}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" / ")}`,
  );
  const admin = new pg.Client({ connectionString: dbUrl });
  let child: ChildProcess | null = null;
  const rows: Array<{ figure: string; value: string; target: string; verdict: string }> = [];
  try {
    await admin.connect();
    const db = createPgDb(dbUrl);
    await migrate(db);
    let t = performance.now();
    await bulkLoad(admin);
    log(`loaded ${fmt(AGENTS)} claimed agents with 30 days of history in ${fmt((performance.now() - t) / 1000, 1)} s`);
    t = performance.now();
    const service = createVraiService({ store: createSqlStore(db), clock: createManualClock(AT + 3600), busy: () => false });
    const stored = await service.scoring.recomputeDay(DAY);
    await db.close();
    log(`daily recompute (the service's bulk path): ${fmt(stored)} scores in ${fmt((performance.now() - t) / 1000, 1)} s`);
    await admin.query("VACUUM ANALYZE");
    await admin.query("CHECKPOINT");

    const ranked = Number((await admin.query("SELECT count(*)::int AS n FROM agents WHERE score_total IS NOT NULL")).rows[0].n);
    const totals = (
      await admin.query(
        "SELECT score_total AS total, count(*)::int AS n FROM agents WHERE score_total IS NOT NULL GROUP BY 1 ORDER BY 1 DESC LIMIT 8",
      )
    ).rows;
    log(`directory: ${fmt(ranked)} ranked agents; top totals ${totals.map((r) => `${r.total}×${fmt(r.n)}`).join(", ")}`);
    // The cursor the 2,000th "Next page" link carries: after the 40,000th agent of the ranking (fewer with fewer agents).
    const deepPages = Math.min(DEEP_PAGES, Math.floor(ranked / 20) - 1);
    const deep = (
      await admin.query("SELECT id, score_total FROM agents WHERE score_total IS NOT NULL ORDER BY -score_total, id OFFSET $1 LIMIT 1", [
        deepPages * 20 - 1,
      ])
    ).rows[0];
    const cursor = encodeCursor({ direction: "after", total: deep.score_total, agentId: deep.id }, {});

    const server = await startServer(dbUrl);
    child = server.child;
    const deepJson = (await (await fetch(`${server.url}/v1/agents?cursor=${cursor}`)).json()) as { agents: Array<{ agentId: string }> };
    const expectedDeep = (
      await admin.query("SELECT id FROM agents WHERE score_total IS NOT NULL ORDER BY -score_total, id OFFSET $1 LIMIT 20", [
        deepPages * 20,
      ])
    ).rows.map((r) => r.id);
    const deepRight = JSON.stringify(deepJson.agents.map((a) => a.agentId)) === JSON.stringify(expectedDeep);
    log(
      `page ${fmt(deepPages + 1)} by cursor: ${deepJson.agents.length} agents, ` +
        `${deepRight ? "the same" : "NOT the same"} as OFFSET ${fmt(deepPages * 20)} in SQL`,
    );
    rows.push({
      figure: `page ${fmt(deepPages + 1)} by cursor = rows ${fmt(deepPages * 20 + 1)}-${fmt(deepPages * 20 + 20)} of the ranking`,
      value: deepRight ? "yes" : "no",
      target: "yes",
      verdict: deepRight ? "PASS" : "FAIL",
    });

    const randomAgent = () => `agt_bench${String(1 + Math.floor(Math.random() * AGENTS)).padStart(8, "0")}`;
    const runs: Array<{ name: string; rate: number; targetMs: number; path: () => string }> = [
      { name: "GET /agents, first page", rate: 200, targetMs: 50, path: () => "/agents" },
      { name: `GET /agents, page ${fmt(deepPages + 1)} by cursor`, rate: 200, targetMs: 50, path: () => `/agents?cursor=${cursor}` },
      { name: "GET /v1/agents, first page", rate: 200, targetMs: 50, path: () => "/v1/agents" },
      { name: `GET /v1/agents, page ${fmt(deepPages + 1)} by cursor`, rate: 200, targetMs: 50, path: () => `/v1/agents?cursor=${cursor}` },
      { name: "GET /agents/{id}/badge.svg, random agents", rate: 1_000, targetMs: 10, path: () => `/agents/${randomAgent()}/badge.svg` },
    ];
    for (const run of runs) {
      const m = await steadyLoad(server.url, run.rate, run.path);
      const p99 = quantile(m.latencies, 0.99);
      log(
        `${run.name} at ${fmt(run.rate)}/s: ${fmt(m.ok)} 2xx, ${m.other} other, ${m.errors} errors in ${SECONDS} s; ` +
          `p50 ${ms(quantile(m.latencies, 0.5))}, p99 ${ms(p99)}, max ${ms(quantile(m.latencies, 1))}`,
      );
      const ok = p99 < run.targetMs && m.other === 0 && m.errors === 0 && m.ok >= run.rate * SECONDS * 0.95;
      rows.push({
        figure: `${run.name}, p99 at ${fmt(run.rate)}/s`,
        value: ms(p99),
        target: `< ${run.targetMs} ms, all 2xx`,
        verdict: ok ? "PASS" : "FAIL",
      });
    }
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      child.send({ stop: true });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    await admin.end().catch(() => undefined);
    await root.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await root.end();
  }
  const w = [
    Math.max(...rows.map((r) => r.figure.length)),
    Math.max(...rows.map((r) => r.value.length)),
    Math.max(...rows.map((r) => r.target.length)),
  ];
  log("");
  log(
    `Vrai site benchmark — ${fmt(AGENTS)} agents, ${os.cpus().length} cores, PostgreSQL on 127.0.0.1, total ${fmt((performance.now() - started) / 1000)} s`,
  );
  for (const r of rows) log(`${r.figure.padEnd(w[0])}  ${r.value.padStart(w[1])}  ${r.target.padEnd(w[2])}  ${r.verdict}`);
  if (rows.some((r) => r.verdict === "FAIL")) process.exitCode = 1;
}

// The child serves; run as a script, the parent measures; imported, nothing runs.
const entry = process.argv.includes("--site-serve") ? serve : require.main === module ? main : undefined;
entry?.().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
