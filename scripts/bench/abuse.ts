/**
 * `npm run bench:abuse`: what a stranger can do to a real agent and to new clients of `vrai serve`
 * (issue #33), measured against the real command on PostgreSQL with its default limits and
 * `TRUST_PROXY=none`. Every client is a loopback address of its own (127.0.0.0/8 through
 * `localAddress`), so the limits see as many clients as the bench makes. A real agent checks in every
 * 250 ms from an address of its own throughout; one agent's check-ins are counted once per 1,200 s
 * (V3.2), so its answers are one 201 and then 429 `checkin_refused`, unless something else refuses it.
 *
 * 0. Baseline: an agent checks in, no attack: its answers and latency (p50, p99, max).
 * (a) The issue's attacks, at once, on one real agent: 600 check-ins with made-up keys in flight together
 *     (20 addresses, 30 each, in parallel; again every second, once all are answered) and 135
 *     `POST /v1/agents/:id/summaries` with a made-up key and a body that trickles in (3 addresses, 45 each,
 *     2,000 bytes in 20 pieces 100 ms apart, sent again once done): the real agent's answers and latency
 *     against the baseline's.
 * (b) A ladder of made-up-key rates at one agent (a new one each step): forged check-ins a minute, from
 *     how many addresses (8 at a time each), the server's CPU per forged request, and whether any real
 *     check-in was refused or took longer than twice the baseline's p99; it climbs until one is or the
 *     ladder ends, and prints the highest rate tried. The generator shares the machine's cores with the
 *     server and PostgreSQL: past what they absorb, every request waits for CPU, the real ones too.
 * (c) Hoarders from 20 addresses, up to `--hoard` (64, the per-client cap) connections each, opened
 *     again as the server closes them: five addresses each send nothing, one byte, part of a request's
 *     headers, or a request whose body trickles in (a byte every 500 ms), while a new client asks
 *     `GET /v1/method` every 100 ms: how many connections the server held (its own count,
 *     `vrai_http_connections` on the metrics listener) and how many new clients were answered (p99).
 *
 * Flags: --seconds S (each window, 15), --hoard N (64), --quick (3 s windows and a two-step ladder: checks
 * that the bench runs, its figures are not the issue's). TEST_PG_ADMIN_URL as the tests use it.
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

const { values } = parseArgs({ options: { seconds: { type: "string" }, hoard: { type: "string" }, quick: { type: "boolean" } } });
const QUICK = values.quick === true;
const SECONDS = Number(values.seconds ?? (QUICK ? 3 : 15));
const HOARD = Number(values.hoard ?? 64);
/** How often the real agent checks in. */
const CADENCE_MS = 250;
/** The ladder of (b): addresses and forged requests a second in all (Infinity: as fast as the clients go). */
const LADDER: ReadonlyArray<{ addresses: number; perSecond: number }> = QUICK
  ? [
      { addresses: 20, perSecond: 200 },
      { addresses: 50, perSecond: Infinity },
    ]
  : [
      { addresses: 20, perSecond: 100 },
      { addresses: 20, perSecond: 500 },
      { addresses: 50, perSecond: 1000 },
      { addresses: 100, perSecond: 2000 },
      { addresses: 200, perSecond: Infinity },
    ];
/** Requests at a time from each address of the ladder. */
const LADDER_CONCURRENCY = 8;

type Answer = { status: number; code: string; ms: number };
type Agent = { agentId: string; agentKey: string };

/** The error code of an answer's JSON body, or "". */
function codeOf(text: string): string {
  try {
    return (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? "";
  } catch {
    return "";
  }
}

/**
 * One request from the loopback address `from`, on a connection of `agent` (or a new one); its body in
 * `pieces` `gapMs` apart when given. Resolves once the answer has come and the body has all been sent
 * (status 0 and the error's code when the connection failed, "timeout" after `timeoutMs`).
 */
function send(
  base: string,
  from: string,
  method: string,
  pathName: string,
  headers: Record<string, string>,
  options: { agent?: http.Agent; body?: string; pieces?: number; gapMs?: number; timeoutMs?: number } = {},
): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const { hostname, port } = new URL(base);
    let answer: Answer | undefined;
    let sent = false;
    const settle = () => {
      if (answer !== undefined && sent) resolve(answer);
    };
    const req = http.request(
      { host: hostname, port, method, path: pathName, headers, localAddress: from, agent: options.agent ?? false },
      (res) => {
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          answer ??= { status: res.statusCode ?? 0, code: codeOf(text), ms: performance.now() - started };
          settle();
        });
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => {
      answer ??= { status: 0, code: error.code ?? error.message, ms: performance.now() - started };
    });
    // Done, or its connection gone (an answer cut short included): whatever came is its answer.
    req.on("close", () => {
      answer ??= { status: 0, code: "closed", ms: performance.now() - started };
      sent = true;
      settle();
    });
    if (options.timeoutMs !== undefined)
      req.setTimeout(options.timeoutMs, () => req.destroy(Object.assign(new Error("timeout"), { code: "timeout" })));
    const body = options.body ?? "";
    const pieces = options.pieces ?? 1;
    const size = Math.ceil(body.length / pieces);
    let i = 0;
    const next = () => {
      if (req.destroyed) {
        // Closed by the server (or a timeout) before the whole body was sent.
        sent = true;
        settle();
        return;
      }
      if (i >= pieces) {
        req.end(() => {
          sent = true;
          settle();
        });
        return;
      }
      req.write(body.slice(i * size, (i + 1) * size));
      i++;
      setTimeout(next, options.gapMs ?? 0);
    };
    next();
  });
}

const quantile = (values: number[], q: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const label = (a: Answer) => `${a.status}${a.code ? ` ${a.code}` : ""}`;
const tally = (answers: Answer[]) => {
  const counts = new Map<string, number>();
  for (const a of answers) counts.set(label(a), (counts.get(label(a)) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${n.toLocaleString("en-US")} × ${k}`)
    .join(", ");
};
const ms = (value: number) => `${value.toFixed(1)} ms`;
const latency = (answers: Answer[]) => {
  const times = answers.map((a) => a.ms);
  return `p50 ${ms(quantile(times, 0.5))}, p99 ${ms(quantile(times, 0.99))}, max ${ms(Math.max(...times))}`;
};
const sleep = (wait: number) => new Promise((resolve) => setTimeout(resolve, wait));
const perMinute = (n: number, sinceMs: number) => Math.round((n * 60_000) / (Date.now() - sinceMs)).toLocaleString("en-US");

/** An answer a real agent gets without any attack: its check-in counted, or refused by V3.2's spacing. */
const asAlone = (a: Answer) => a.status === 201 || (a.status === 429 && a.code === "checkin_refused");

/** CPU time a process has used, user and system, in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

type Served = { url: string; metricsUrl: string; cpuMs(): number; stop(): Promise<void> };

/** `vrai serve` on `databaseUrl`, default limits, the client address being the socket's, /metrics on a listener of its own. */
function startServe(databaseUrl: string): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve"], {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: "0",
      METRICS_PORT: "0",
      OPERATOR_TOKEN,
      LOG_LEVEL: "info",
      TRUST_PROXY: "none",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk) => {
      if (out.length < 1e6) out += chunk;
      const ready = /vrai ready: api (http:\/\/\S+)\/v1/.exec(out);
      const metrics = /"url":"(http:\/\/[^"]+)","msg":"metrics listening"/.exec(out);
      if (ready && metrics) {
        out = "";
        resolve({
          url: ready[1],
          metricsUrl: metrics[1],
          cpuMs: () => cpuMsOf(child.pid!),
          stop: async () => {
            child.kill("SIGTERM");
            await exited;
          },
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`vrai serve exited with ${code}: ${out}`)));
  });
}

/** The server's own count of its API connections: open, and waiting for their client. */
async function connectionsOf(metricsUrl: string): Promise<{ open: number; waiting: number }> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const figure = (state: string) => Number(new RegExp(`^vrai_http_connections\\{state="${state}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);
  return { open: figure("open"), waiting: figure("waiting") };
}

/** `agent` checking in from its own address every CADENCE_MS until `until`. */
async function checkInUntil(base: string, agent: Agent, until: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  while (Date.now() < until) {
    const tick = Date.now();
    answers.push(
      await send(
        base,
        "127.0.250.1",
        "POST",
        `/v1/agents/${agent.agentId}/checkins`,
        { authorization: `Bearer ${agent.agentKey}`, "idempotency-key": crypto.randomUUID() },
        { timeoutMs: 30_000 },
      ),
    );
    await sleep(Math.max(0, CADENCE_MS - (Date.now() - tick)));
  }
  return answers;
}

/** What a real agent got under attack, against the baseline: its answers, latency, and how many were refused or delayed past twice the baseline's p99. */
function verdict(real: Answer[], baseline: Answer[]): { line: string; refused: number; delayed: number } {
  const bound =
    2 *
    quantile(
      baseline.map((a) => a.ms),
      0.99,
    );
  const refused = real.filter((a) => !asAlone(a)).length;
  const delayed = real.filter((a) => asAlone(a) && a.ms > bound).length;
  const pass = refused === 0 && delayed === 0 && real.some((a) => a.status === 201);
  return {
    refused,
    delayed,
    line:
      `real agent: ${real.length} check-ins, ${tally(real)}; ${latency(real)}; ` +
      `refused ${refused}, slower than 2 × baseline p99 (${ms(bound)}) ${delayed}: ${pass ? "PASS" : "FAIL"}`,
  };
}

/** Made-up-key check-ins at `target` from `addresses` addresses (`prefix`.x.y), `concurrency` each, `perSecond` in all, until `until`. */
async function forgeCheckIns(
  base: string,
  target: Agent,
  options: { prefix: string; addresses: number; concurrency: number; perSecond: number; until: number },
): Promise<Answer[]> {
  const forged: Answer[] = [];
  const workers = options.addresses * options.concurrency;
  // Each worker paced to its share of the rate: a request, then a wait until its next slot.
  const gapMs = Number.isFinite(options.perSecond) ? (1000 * workers) / options.perSecond : 0;
  await Promise.all(
    Array.from({ length: options.addresses }, async (_, a) => {
      const from = `${options.prefix}.${Math.floor(a / 250)}.${(a % 250) + 1}`;
      const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
      await Promise.all(
        Array.from({ length: options.concurrency }, async (_, w) => {
          let slot = Date.now() + (gapMs * w) / options.concurrency;
          for (let i = 0; Date.now() < options.until; i++) {
            if (gapMs > 0) await sleep(Math.max(0, slot - Date.now()));
            slot += gapMs;
            forged.push(
              await send(
                base,
                from,
                "POST",
                `/v1/agents/${target.agentId}/checkins`,
                { authorization: `Bearer va_${target.agentId}.k_forged${i}`, "idempotency-key": `f-${a}-${w}-${i}` },
                { agent },
              ),
            );
          }
        }),
      );
      agent.destroy();
    }),
  );
  return forged;
}

/**
 * Waves of made-up-key check-ins at `target`: `perAddress` at once from each of `addresses` addresses
 * (`prefix`.0.x), all in flight together; the next wave once this one is answered, a second after it started at the soonest.
 */
async function forgeWaves(
  base: string,
  target: Agent,
  options: { prefix: string; addresses: number; perAddress: number; until: number },
): Promise<{ answers: Answer[]; waves: number }> {
  const agents = Array.from({ length: options.addresses }, () => new http.Agent({ keepAlive: true, maxSockets: options.perAddress }));
  const answers: Answer[] = [];
  let waves = 0;
  while (Date.now() < options.until) {
    const tick = Date.now();
    answers.push(
      ...(await Promise.all(
        agents.flatMap((agent, a) =>
          Array.from({ length: options.perAddress }, (_, w) =>
            send(
              base,
              `${options.prefix}.0.${a + 1}`,
              "POST",
              `/v1/agents/${target.agentId}/checkins`,
              { authorization: `Bearer va_${target.agentId}.k_forged${w}`, "idempotency-key": `w-${waves}-${a}-${w}` },
              { agent },
            ),
          ),
        ),
      )),
    );
    waves++;
    await sleep(Math.max(0, 1000 - (Date.now() - tick)));
  }
  for (const agent of agents) agent.destroy();
  return { answers, waves };
}

/** (c): hoarders of each kind from 20 addresses, reopened as they are closed, while a new client comes every 100 ms. */
async function hoard(server: Served): Promise<void> {
  const { hostname, port } = new URL(server.url);
  const kinds: ReadonlyArray<{ name: string; first: string; trickle: boolean }> = [
    { name: "no byte", first: "", trickle: false },
    { name: "one byte", first: "P", trickle: false },
    { name: "part of the headers", first: "GET /v1/method HTTP/1.1\r\nHost: x\r\nX-Slow: ", trickle: false },
    {
      name: "a trickling body",
      first: "POST /v1/owners HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
      trickle: true,
    },
  ];
  const until = Date.now() + SECONDS * 1000;
  const held = new Set<net.Socket>();
  let opened = 0;
  const open = (from: string, kind: (typeof kinds)[number]) => {
    if (Date.now() > until) return;
    const socket = net.connect({ host: hostname, port: Number(port), localAddress: from });
    opened++;
    held.add(socket);
    socket.on("error", () => undefined);
    socket.once("connect", () => {
      if (kind.first) socket.write(kind.first);
    });
    const trickle = kind.trickle ? setInterval(() => socket.writable && socket.write(" "), 500) : undefined;
    socket.once("close", () => {
      clearInterval(trickle);
      held.delete(socket);
      setTimeout(() => open(from, kind), 10);
    });
  };
  for (let a = 0; a < 20; a++) for (let i = 0; i < HOARD; i++) open(`127.2.0.${a + 1}`, kinds[a % kinds.length]);
  await sleep(1000);
  const newcomers: Answer[] = [];
  let most = { open: 0, waiting: 0 };
  const sampling = (async () => {
    while (Date.now() < until) {
      const now = await connectionsOf(server.metricsUrl).catch(() => most);
      if (now.open > most.open) most = now;
      await sleep(250);
    }
  })();
  const arrivals: Array<Promise<void>> = [];
  for (let i = 0; Date.now() < until; i++) {
    arrivals.push(
      send(server.url, `127.3.${Math.floor(i / 250)}.${(i % 250) + 1}`, "GET", "/v1/method", {}, { timeoutMs: 10_000 }).then(
        (a) => void newcomers.push(a),
      ),
    );
    await sleep(100);
  }
  await Promise.all([sampling, ...arrivals]);
  for (const socket of held) socket.destroy();
  const answered = newcomers.filter((a) => a.status === 200).length;
  console.log(
    `(c) hoarders: 20 addresses × up to ${HOARD} connections (5 addresses each: ${kinds.map((k) => k.name).join(", ")}), ` +
      `${opened.toLocaleString("en-US")} opened in ${SECONDS} s; ` +
      `the server held at most ${most.open} connections (${most.waiting} of them waiting for their client)`,
  );
  console.log(
    `    new clients answered ${answered} of ${newcomers.length} (${tally(newcomers)}), ${latency(newcomers)}: ` +
      `${answered === newcomers.length ? "PASS" : "FAIL"}`,
  );
}

async function main(): Promise<void> {
  const name = `vrai_bench_abuse_${crypto.randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const server = await startServe(ADMIN_URL.replace(/\/[^/]*$/, `/${name}`));
  try {
    const json = { "content-type": "application/json" };
    const owner = JSON.parse(await (await fetch(`${server.url}/v1/owners`, { method: "POST", headers: json, body: "{}" })).text()) as {
      token: string;
    };
    const newAgent = async (): Promise<Agent> =>
      JSON.parse(
        await (
          await fetch(`${server.url}/v1/agents`, {
            method: "POST",
            headers: { ...json, authorization: `Bearer ${owner.token}` },
            body: "{}",
          })
        ).text(),
      ) as Agent;

    // 0. Baseline.
    const baseline = await checkInUntil(server.url, await newAgent(), Date.now() + SECONDS * 1000);
    console.log(
      `baseline (no attack): one agent, ${baseline.length} check-ins every ${CADENCE_MS} ms, ${tally(baseline)}; ${latency(baseline)}`,
    );

    // (a) The issue's two attacks at once, on one real agent.
    {
      const target = await newAgent();
      const until = Date.now() + SECONDS * 1000;
      const flood = forgeWaves(server.url, target, { prefix: "127.10", addresses: 20, perAddress: 30, until });
      const body = JSON.stringify({ records: [{ executor: "x" }] }).padEnd(2000, " ");
      const summaries: Answer[] = [];
      const trickling = Promise.all(
        Array.from({ length: 135 }, async (_, i) => {
          while (Date.now() < until) {
            summaries.push(
              await send(
                server.url,
                `127.11.0.${Math.floor(i / 45) + 1}`,
                "POST",
                `/v1/agents/${target.agentId}/summaries`,
                {
                  authorization: `Bearer va_${target.agentId}.k_forged`,
                  "content-type": "application/json",
                  "content-length": String(body.length),
                },
                { body, pieces: 20, gapMs: 100, timeoutMs: 30_000 },
              ),
            );
          }
        }),
      );
      const real = await checkInUntil(server.url, target, until);
      const { answers: forged, waves } = await flood;
      await trickling;
      console.log(
        `(a) 600 made-up-key check-ins in flight at once at one agent (20 addresses × 30), ${waves} waves a second apart: ${tally(forged)}`,
      );
      console.log(
        `    and 135 made-up-key summaries at a time with a trickling body (3 addresses × 45, each sent again as it ends): ${tally(summaries)}`,
      );
      console.log(`    ${verdict(real, baseline).line}`);
    }

    // (b) The ladder of rates at one agent.
    let highest = "";
    let refusedInAll = 0;
    let delayedInAll = 0;
    let realInAll = 0;
    for (const [step, { addresses, perSecond }] of LADDER.entries()) {
      const target = await newAgent();
      const until = Date.now() + SECONDS * 1000;
      const cpuBefore = server.cpuMs();
      const started = Date.now();
      const attack = forgeCheckIns(server.url, target, {
        prefix: `127.${20 + step}`,
        addresses,
        concurrency: LADDER_CONCURRENCY,
        perSecond,
        until,
      });
      const real = await checkInUntil(server.url, target, until);
      const forged = await attack;
      const cpuUs = ((server.cpuMs() - cpuBefore) * 1000) / forged.length;
      const result = verdict(real, baseline);
      highest = `${perMinute(forged.length, started)} forged check-ins a minute from ${addresses} addresses`;
      refusedInAll += result.refused;
      delayedInAll += result.delayed;
      realInAll += real.length;
      console.log(
        `(b) ${addresses} addresses × ${LADDER_CONCURRENCY} at ${Number.isFinite(perSecond) ? `${perSecond.toLocaleString("en-US")}/s` : "full speed"}: ` +
          `${perMinute(forged.length, started)} forged a minute, ${tally(forged)}; server CPU ${cpuUs.toFixed(0)} µs per forged request`,
      );
      console.log(`    ${result.line}`);
      if (result.refused > 0) break;
    }
    console.log(
      `(b) highest rate tried: ${highest}; real check-ins refused ${refusedInAll} of ${realInAll}, slower than 2 × baseline p99 ${delayedInAll}: ` +
        `${refusedInAll === 0 ? (delayedInAll === 0 ? "PASS: none refused or delayed" : "none refused, some delayed") : "FAIL: refused"}`,
    );

    // (c) Hoarders.
    await hoard(server);
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
