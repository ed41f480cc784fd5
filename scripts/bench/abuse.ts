/**
 * `npm run bench:abuse`: what a stranger can do to a real agent and to new clients of `vrai serve`
 * (issue #33), measured against the real command on PostgreSQL with its default limits and
 * `TRUST_PROXY=none`. Every client is a loopback address of its own (127.0.0.0/8 through
 * `localAddress`), so the limits see as many clients as the bench makes.
 *
 * 1. Baseline: real agents check in, one a second (each a different agent, so V3.2 never refuses):
 *    their latency.
 * 2. Wrong keys: `--attackers` addresses (50) send check-ins with made-up keys for those same agents,
 *    `--concurrency` (8) requests at a time each, at a total of 1,000/s, then 3,000/s, then as fast as
 *    they can, `--seconds` (15) each, while the real agents go on checking in: forged requests a
 *    minute and how they were answered, the server's CPU per forged request (its /proc times), and
 *    whether any real check-in was refused, with its latency. The flood's generator shares the
 *    machine's two cores with the server and PostgreSQL: past what the server absorbs, every request
 *    waits for CPU, the real ones too.
 * 3. Idle connections: 20 addresses hold as many idle connections as they can (opened again as soon as
 *    the server closes one, up to `--idle` (2,000) at once) while a new client connects every 100 ms:
 *    how many of the new clients were answered.
 *
 * Flags: --attackers N, --concurrency C, --seconds S, --idle N. TEST_PG_ADMIN_URL as the tests use it.
 */
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const BIN = path.resolve(__dirname, "../../bin/vrai.js");
const OPERATOR_TOKEN = `bench-abuse-${crypto.randomBytes(12).toString("hex")}`;

const { values } = parseArgs({ options: { attackers: { type: "string" }, concurrency: { type: "string" }, seconds: { type: "string" }, idle: { type: "string" } } });
const ATTACKERS = Number(values.attackers ?? 50);
const CONCURRENCY = Number(values.concurrency ?? 8);
const SECONDS = Number(values.seconds ?? 15);
/** Forged requests a second in all, per run of phase 2; Infinity: as fast as the clients go. */
const RATES = [1000, 3000, Infinity];
const IDLE = Number(values.idle ?? 2000);

type Answer = { status: number; code: string; ms: number };

/** One request from the loopback address `from`, on a connection of `agent` (or a new one). */
function send(base: string, from: string, method: string, pathName: string, headers: Record<string, string>, agent?: http.Agent, body?: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const { hostname, port } = new URL(base);
    const req = http.request({ host: hostname, port, method, path: pathName, headers, localAddress: from, agent: agent ?? false }, (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => {
        let code = "";
        try {
          code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? "";
        } catch {
          code = "";
        }
        resolve({ status: res.statusCode ?? 0, code, ms: performance.now() - started });
      });
    });
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: 0, code: error.code ?? error.message, ms: performance.now() - started }));
    req.end(body);
  });
}

const quantile = (values: number[], q: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const tally = (answers: Answer[]) => {
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(`${a.status}${a.code ? ` ${a.code}` : ""}`, (counts.get(`${a.status}${a.code ? ` ${a.code}` : ""}`) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n.toLocaleString("en-US")} × ${k}`).join(", ");
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU time a process has used, user and system, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `vrai serve` on `databaseUrl`, default limits, the client address being the socket's; resolves with its URL. */
function startServe(databaseUrl: string): Promise<{ url: string; cpuMs(): number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [BIN, "serve"], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: "0", OPERATOR_TOKEN, LOG_LEVEL: "warn", TRUST_PROXY: "none" }, stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      const ready = /vrai ready: api (http:\/\/\S+)\/v1/.exec(out);
      if (ready) resolve({ url: ready[1], cpuMs: () => cpuMsOf(child.pid!), stop: async () => void (child.kill("SIGTERM"), await exited) });
    });
    child.once("exit", (code) => reject(new Error(`vrai serve exited with ${code}: ${out}`)));
  });
}

async function main(): Promise<void> {
  const name = `vrai_bench_abuse_${crypto.randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const server = await startServe(ADMIN_URL.replace(/\/[^/]*$/, `/${name}`));
  try {
    const json = { "content-type": "application/json" };
    const owner = JSON.parse(await (await fetch(`${server.url}/v1/owners`, { method: "POST", headers: json, body: "{}" })).text()) as { token: string };
    // Enough agents for the baseline's 15 check-ins and one a second through each run of phase 2, each agent once.
    const agents: Array<{ agentId: string; agentKey: string }> = [];
    for (let i = 0; i < 15 + RATES.length * (SECONDS + 1) + 5; i++) {
      agents.push(JSON.parse(await (await fetch(`${server.url}/v1/agents`, { method: "POST", headers: { ...json, authorization: `Bearer ${owner.token}` }, body: "{}" })).text()));
    }
    let nextAgent = 0;
    const realCheckIn = () => {
      const agent = agents[nextAgent++ % agents.length];
      return send(server.url, "127.0.250.1", "POST", `/v1/agents/${agent.agentId}/checkins`, { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": crypto.randomUUID() });
    };

    // 1. Baseline.
    const baseline: Answer[] = [];
    for (let i = 0; i < 15; i++) {
      baseline.push(await realCheckIn());
      await sleep(100);
    }
    console.log(`baseline: ${baseline.length} real check-ins, ${tally(baseline)}; p50 ${quantile(baseline.map((a) => a.ms), 0.5).toFixed(1)} ms, max ${Math.max(...baseline.map((a) => a.ms)).toFixed(1)} ms`);

    // 2. Wrong keys for the same agents from many addresses, at three rates, while the real agents check in.
    for (const [run, rate] of RATES.entries()) {
      const forged: Answer[] = [];
      const real: Answer[] = [];
      const until = Date.now() + SECONDS * 1000;
      const attackerAgents: http.Agent[] = [];
      // Each worker paced to its share of the rate (a request, then a wait until its next slot).
      const gapMs = Number.isFinite(rate) ? (1000 * ATTACKERS * CONCURRENCY) / rate : 0;
      const attacker = async (a: number) => {
        const from = `127.${10 + run}.${Math.floor(a / 250)}.${(a % 250) + 1}`;
        const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
        attackerAgents.push(agent);
        const worker = async (w: number) => {
          let slot = Date.now() + (gapMs * w) / CONCURRENCY;
          for (let i = 0; Date.now() < until; i++) {
            if (gapMs > 0) await sleep(Math.max(0, slot - Date.now()));
            slot += gapMs;
            const target = agents[(a + i) % agents.length];
            forged.push(await send(server.url, from, "POST", `/v1/agents/${target.agentId}/checkins`, { authorization: `Bearer va_${target.agentId}.k_forged${i}`, "idempotency-key": `f-${run}-${a}-${w}-${i}` }, agent));
          }
        };
        await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
      };
      const cpuBefore = server.cpuMs();
      const started = Date.now();
      const attack = Promise.all(Array.from({ length: ATTACKERS }, (_, a) => attacker(a)));
      while (Date.now() < until - 1000) {
        const tick = Date.now();
        real.push(await realCheckIn());
        await sleep(Math.max(0, 1000 - (Date.now() - tick)));
      }
      await attack;
      const cpuUs = ((server.cpuMs() - cpuBefore) * 1000) / forged.length;
      for (const agent of attackerAgents) agent.destroy();
      const minutes = (Date.now() - started) / 60_000;
      const refused = real.filter((a) => a.status !== 201).length;
      console.log(
        `wrong keys at ${Number.isFinite(rate) ? `${rate.toLocaleString("en-US")}/s` : "full speed"} (${ATTACKERS} addresses × ${CONCURRENCY}): ` +
          `${Math.round(forged.length / minutes).toLocaleString("en-US")} forged check-ins a minute, answered ${tally(forged)}; server CPU ${cpuUs.toFixed(0)} µs per forged request`,
      );
      console.log(
        `  real agents meanwhile: ${real.length} check-ins, ${tally(real)}; p50 ${quantile(real.map((a) => a.ms), 0.5).toFixed(1)} ms, max ${Math.max(...real.map((a) => a.ms)).toFixed(1)} ms; ` +
          `${refused === 0 ? "PASS: none refused" : `FAIL: ${refused} not counted`}`,
      );
    }

    // 3. Idle connections held open from 20 addresses, re-opened as they are closed, while new clients come.
    const { hostname, port } = new URL(server.url);
    const held = new Set<net.Socket>();
    const holding = Date.now() + 15_000;
    let opened = 0;
    const hold = (from: string) => {
      if (Date.now() > holding || held.size >= IDLE) return;
      const socket = net.connect({ host: hostname, port: Number(port), localAddress: from });
      opened++;
      held.add(socket);
      socket.on("error", () => undefined);
      socket.once("close", () => {
        held.delete(socket);
        setTimeout(() => hold(from), 10);
      });
    };
    for (let i = 0; i < IDLE; i++) hold(`127.2.0.${(i % 20) + 1}`);
    await sleep(1000);
    const newcomers: Answer[] = [];
    let most = 0;
    for (let i = 0; Date.now() < holding; i++) {
      most = Math.max(most, held.size);
      newcomers.push(await send(server.url, `127.3.${Math.floor(i / 250)}.${(i % 250) + 1}`, "GET", "/v1/method", {}));
      await sleep(100);
    }
    for (const socket of held) socket.destroy();
    const answered = newcomers.filter((a) => a.status === 200).length;
    console.log(
      `idle connections: up to ${most.toLocaleString("en-US")} held at once from 20 addresses (${opened.toLocaleString("en-US")} opened in 15 s); new clients answered ${answered} of ${newcomers.length}, ` +
        `p99 ${quantile(newcomers.map((a) => a.ms), 0.99).toFixed(1)} ms; ${answered === newcomers.length ? "PASS" : "FAIL"}`,
    );
  } finally {
    await server.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
