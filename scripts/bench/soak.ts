/**
 * `npm run bench:soak -- --minutes 20`: a soak of `vrai serve` on PostgreSQL (issue #30), the command as an
 * operator runs it, under 500 check-ins/s and 200 score reads/s for the whole run, with every database
 * connection of the service terminated once in the middle (`pg_terminate_backend` on the database's backends
 * other than the bench's own: the server stays up, PostgreSQL too).
 *
 * Check-ins go to a ring of agents (loaded with SQL, claimed just before the run) large enough that no agent
 * comes back within 1,260 s, so every one is counted (V3.2); each carries a fresh Idempotency-Key. Score reads
 * go to the first agents of the ring, scored by the service's own scoring before the server starts. The load is
 * autocannon, one connection per 10 requests a second, the connections started evenly through a second
 * (a steady rate rather than a burst at the top of each second). Figures, each beside its target:
 * - every acknowledged (2xx) check-in stored exactly once (its key found once in `checkins`);
 * - every answer 2xx or 503 with Retry-After (the reconnection), no other status, no connection error or timeout;
 * - the server's RSS (sampled every 5 s from /proc) growing less than 10% from minute 5 to the end (from a
 *   quarter of the run when it is shorter than 6 minutes), its heap in use and external memory printed beside it;
 * - the rates achieved, the connections terminated and how long 503s were answered after.
 *
 * Flags: --minutes M (20), --checkins R (500 a second), --reads R (200 a second), --terminations N (1: every connection
 * terminated N times, evenly through the run; more show whether each reconnection leaves memory behind). TEST_PG_ADMIN_URL
 * as the tests use it.
 * The short run that checks the bench works: `npm run bench:soak -- --minutes 1`.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import { parseArgs } from "node:util";
import pg from "pg";
import { createVraiService } from "../../src/service";
import { systemClock } from "../../src/service/clock";
import { createPgDb } from "../../src/store/db";
import { migrate } from "../../src/store/migrate";
import { createSqlStore } from "../../src/store/sql-store";
import { startServe, type ServeProcess } from "../../src/test-helpers/serve";
import { buildCommand, createBenchDatabase, fmt, printRows, runAutocannon, startEvenly, type Row } from "./harness";

const OPERATOR_TOKEN = `bench-soak-${crypto.randomBytes(12).toString("hex")}`;
const METRICS_TOKEN = `bench-soak-metrics-${crypto.randomBytes(12).toString("hex")}`;

const { values } = parseArgs({
  options: { minutes: { type: "string" }, checkins: { type: "string" }, reads: { type: "string" }, terminations: { type: "string" } },
});
const positive = (text: string | undefined, name: string, fallback: number) => {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!(n > 0) || !Number.isFinite(n)) throw new Error(`${name}: expected a positive number, got ${JSON.stringify(text)}`);
  return n;
};
const SECONDS = Math.round(positive(values.minutes, "--minutes", 20) * 60);
/** Times every connection of the service is terminated, evenly through the run (the middle when once). */
const TERMINATIONS = Math.round(positive(values.terminations, "--terminations", 1));
/** When each termination comes, in seconds from the start of the load. */
const TERMINATE_AT_S = Array.from({ length: TERMINATIONS }, (_, k) => (SECONDS * (k + 1)) / (TERMINATIONS + 1));
const CHECKIN_RATE = positive(values.checkins, "--checkins", 500);
const READ_RATE = positive(values.reads, "--reads", 200);
/** Requests a second on one autocannon connection, which has one in flight at a time: each answer may take 100 ms. */
const PER_CONNECTION = 10;
/** V3.2: an agent comes back no sooner than this (1,200 s and a margin), so each check-in is counted. */
const COMEBACK_S = 1260;
const RING = Math.ceil(CHECKIN_RATE * Math.min(SECONDS + 10, COMEBACK_S) * 1.05);
/** Agents scored before the run, whose scores are read. */
const READ_AGENTS = 1000;
const OWNERS = 1000;
/** The server's RSS is compared from here (minute 5, or a quarter of a run shorter than 6 minutes) to the end. */
const RSS_FROM_S = SECONDS >= 360 ? 300 : SECONDS / 4;
const RSS_SAMPLE_MS = 5000;
const RSS_GROWTH_LIMIT = 0.1;

const agentId = (i: number) => `agt_soak${i}`;
const log = (line: string) => console.log(line);

/** What the load got back: answers by kind, the acknowledged check-ins' keys, and when the 503s came. */
type Tally = {
  ok: number;
  unavailable: number;
  unavailableWithoutRetryAfter: number;
  other: Map<number, number>;
  errors: number;
  acknowledgedKeys: string[];
  unavailableAt: number[];
};
const newTally = (): Tally => ({
  ok: 0,
  unavailable: 0,
  unavailableWithoutRetryAfter: 0,
  other: new Map(),
  errors: 0,
  acknowledgedKeys: [],
  unavailableAt: [],
});

/** One request of a load: its path and headers, and what to remember of it until its answer (the key of a check-in). */
type Planned = { path: string; headers?: Record<string, string>; key?: string };

/**
 * `rate` requests a second of `method` for SECONDS, from rate / PER_CONNECTION autocannon instances of one
 * connection each, started evenly through the first second; every answer tallied with its headers.
 */
async function drive(url: string, method: "GET" | "POST", rate: number, next: () => Planned, tally: Tally): Promise<void> {
  const instances = Math.max(1, Math.round(rate / PER_CONNECTION));
  const runs = await startEvenly(instances, 1000, () =>
    runAutocannon(
      {
        url,
        connections: 1,
        connectionRate: rate / instances,
        duration: SECONDS,
        requests: [
          {
            method,
            // One request in flight per connection: the context holds the key of the request being answered.
            setupRequest: (req, context) => {
              const planned = next();
              (context as { key?: string }).key = planned.key;
              return { ...req, method, path: planned.path, headers: { ...req.headers, ...planned.headers } };
            },
            onResponse: (status, _body, context, headers) => tallyAnswer(tally, status, (context as { key?: string }).key, headers ?? {}),
          },
        ],
      },
      (instance) => instance.on("reqError", () => void tally.errors++),
    ),
  );
  await Promise.all(runs);
}

/** Counts one answer: a 2xx (and the key it acknowledges), a 503 with or without a Retry-After of whole seconds, or another status. */
function tallyAnswer(tally: Tally, status: number, key: string | undefined, headers: Record<string, unknown>): void {
  if (status >= 200 && status < 300) {
    tally.ok++;
    if (key !== undefined) tally.acknowledgedKeys.push(key);
  } else if (status === 503) {
    tally.unavailable++;
    tally.unavailableAt.push(Date.now());
    const retryAfter = Object.entries(headers).find(([name]) => name.toLowerCase() === "retry-after")?.[1];
    if (retryAfter === undefined || !/^\d+$/.test(String(retryAfter))) tally.unavailableWithoutRetryAfter++;
  } else tally.other.set(status, (tally.other.get(status) ?? 0) + 1);
}

/** The resident set of process `pid` in bytes (Linux /proc). */
function rssOf(pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!line) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(line[1]) * 1024;
}

/** The server's JavaScript heap in use and its memory outside the heap (buffers), from its /metrics (prom-client's defaults). */
async function heapOf(url: string): Promise<{ heap: number; external: number }> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
  return { heap: gauge("nodejs_heap_size_used_bytes"), external: gauge("nodejs_external_memory_bytes") };
}

/** Agents and owners loaded with SQL as claims just made; the first READ_AGENTS scored by the service's own scoring. */
async function load(dbUrl: string): Promise<void> {
  const db = createPgDb(dbUrl);
  try {
    await migrate(db);
    const now = systemClock.now() - 60;
    await db.query(
      `INSERT INTO owners (id, token_hash, created_at) SELECT 'own_soak' || o, md5(o::text), $1 FROM generate_series(0, $2 - 1) o`,
      [now, OWNERS],
    );
    await db.query(
      `INSERT INTO agents (id, name, owner_id, claim_id, claimed_at, key_hash, created_at)
       SELECT 'agt_soak' || i, NULL, 'own_soak' || (i % $1), i, $2, encode(sha256(convert_to('va_agt_soak' || i || '.k', 'UTF8')), 'hex'), $2
       FROM generate_series(1, $3) i`,
      [OWNERS, now, RING],
    );
    await db.query(
      `INSERT INTO claims (id, agent_id, owner_id, kind, claimed_at) SELECT i, 'agt_soak' || i, 'own_soak' || (i % $1), 'claim', $2
       FROM generate_series(1, $3) i`,
      [OWNERS, now, RING],
    );
    await db.query("SELECT setval('claims_id_seq', $1)", [RING]);
    await db.query("ANALYZE agents, claims, owners");
    const service = createVraiService({ store: createSqlStore(db), clock: systemClock, busy: () => false });
    for (let i = 1; i <= READ_AGENTS; i++) await service.scoring.scoreNow(agentId(i));
  } finally {
    await db.close();
  }
}

/** How many of `keys` the `checkins` table holds once, more than once, and not at all, and its rows of them. */
async function storedOnce(
  client: pg.Client,
  keys: readonly string[],
): Promise<{ once: number; more: number; missing: number; rows: number }> {
  const counts = new Map<string, number>();
  for (let i = 0; i < keys.length; i += 50_000) {
    const { rows } = await client.query<{ k: string; n: number }>(
      "SELECT idempotency_key AS k, count(*)::int AS n FROM checkins WHERE idempotency_key = ANY($1::text[]) GROUP BY idempotency_key",
      [keys.slice(i, i + 50_000)],
    );
    for (const r of rows) counts.set(r.k, r.n);
  }
  let once = 0;
  let more = 0;
  let rows = 0;
  for (const key of keys) {
    const n = counts.get(key) ?? 0;
    rows += n;
    if (n === 1) once++;
    else if (n > 1) more++;
  }
  return { once, more, missing: keys.length - once - more, rows };
}

async function main(): Promise<void> {
  const started = performance.now();
  buildCommand();
  const database = await createBenchDatabase("vrai_soak");
  const { name: dbName, url: dbUrl } = database;
  const bench = new pg.Client({ connectionString: dbUrl });
  const rows: Row[] = [];
  let serve: ServeProcess | undefined;
  const rss: Array<{ atS: number; bytes: number }> = [];
  const heap: Array<{ heap: number; external: number }> = [];
  let sampler: NodeJS.Timeout | undefined;
  try {
    log(`bench:soak: loading ${fmt(RING)} agents into ${dbName}, scoring ${fmt(READ_AGENTS)} ...`);
    await load(dbUrl);
    serve = await startServe({
      DATABASE_URL: dbUrl,
      PORT: "0",
      OPERATOR_TOKEN,
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000000",
      MAX_CONNECTIONS_PER_ADDRESS: "10000",
      MAX_CONNECTIONS: "10000",
      MAX_REQUESTS_PER_SOCKET: "1000000000",
      SCHEDULE_INTERVAL_MS: "3600000",
      METRICS_TOKEN,
    });
    await bench.connect();
    const pid = serve.child.pid!;
    log(
      `bench:soak: vrai serve at ${serve.url} (pid ${pid}); ${fmt(CHECKIN_RATE)} check-ins/s and ${fmt(READ_RATE)} score reads/s ` +
        `for ${fmt(SECONDS)} s; every connection of the service terminated at ${TERMINATE_AT_S.map((t) => fmt(t)).join(", ")} s`,
    );

    const checkins = newTally();
    const reads = newTally();
    let issued = 0;
    const nextCheckin = (): Planned => {
      const i = 1 + (issued++ % RING);
      const key = crypto.randomUUID();
      return {
        path: `/v1/agents/${agentId(i)}/checkins`,
        headers: { authorization: `Bearer va_${agentId(i)}.k`, "idempotency-key": key },
        key,
      };
    };
    const nextRead = (): Planned => ({ path: `/v1/agents/${agentId(1 + crypto.randomInt(READ_AGENTS))}/score` });

    const t0 = Date.now();
    const atS = () => (Date.now() - t0) / 1000;
    rss.push({ atS: 0, bytes: rssOf(pid) });
    sampler = setInterval(() => {
      rss.push({ atS: atS(), bytes: rssOf(pid) });
      // Beside the RSS, what the server's heap holds: growth of the heap is the process's own, growth beside it is not.
      heapOf(serve!.url).then(
        (h) => heap.push(h),
        () => heap.push({ heap: NaN, external: NaN }),
      );
    }, RSS_SAMPLE_MS);
    const terminated: Array<{ at: number; backends: number }> = [];
    const terminations = TERMINATE_AT_S.map(
      (atSecond) =>
        new Promise<void>((resolve, reject) => {
          setTimeout(() => {
            bench
              .query<{ n: number }>(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity " +
                  "WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                [dbName],
              )
              .then(({ rows: [row] }) => {
                terminated.push({ at: Date.now(), backends: row.n });
                log(`bench:soak: ${atS().toFixed(1)} s: terminated ${row.n} connections of the service`);
                resolve();
              }, reject);
          }, atSecond * 1000);
        }),
    );
    await Promise.all([
      drive(serve.url, "POST", CHECKIN_RATE, nextCheckin, checkins),
      drive(serve.url, "GET", READ_RATE, nextRead, reads),
      ...terminations,
    ]);
    const loadS = atS();
    clearInterval(sampler);
    rss.push({ atS: loadS, bytes: rssOf(pid) });

    const stored = await storedOnce(bench, checkins.acknowledgedKeys);
    const { rows: all } = await bench.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins");
    const unacknowledged = all[0].n - stored.rows;
    const unavailableAt = [...checkins.unavailableAt, ...reads.unavailableAt];
    // Each 503 after the termination before it.
    const sinceTermination = unavailableAt.map((at) => at - Math.max(0, ...terminated.filter((t) => t.at <= at).map((t) => t.at)));
    const lastUnavailableMs = sinceTermination.length === 0 ? 0 : Math.max(...sinceTermination);
    const firstUnavailableMs = sinceTermination.length === 0 ? 0 : Math.min(...sinceTermination);
    const describe = (t: Tally) =>
      `${fmt(t.ok)} 2xx, ${fmt(t.unavailable)} 503 (${t.unavailableWithoutRetryAfter} without Retry-After), other ` +
      `${JSON.stringify(Object.fromEntries(t.other))}, ${t.errors} connection errors or timeouts`;
    log(
      `check-ins: ${describe(checkins)}; rows stored without an acknowledgement (answered 503 or in flight at the end) ${fmt(unacknowledged)}`,
    );
    log(`score reads: ${describe(reads)}; the load ran ${loadS.toFixed(1)} s from its first connection to its last answer`);
    log(
      `503s: ${fmt(unavailableAt.length)}, from ${fmt(firstUnavailableMs)} ms to ${fmt(lastUnavailableMs)} ms after a termination; ` +
        `server RSS every ${RSS_SAMPLE_MS / 1000} s (MiB): ${rss.map((s) => fmt(s.bytes / 2 ** 20)).join(" ")}`,
    );
    log(
      `server heap used / external every ${RSS_SAMPLE_MS / 1000} s (MiB): ` +
        heap.map((h) => `${fmt(h.heap / 2 ** 20)}/${fmt(h.external / 2 ** 20)}`).join(" "),
    );

    // Each autocannon instance offers its share for exactly SECONDS (its own timer), whenever it started.
    const checkinRate = checkins.ok / SECONDS;
    const readRate = reads.ok / SECONDS;
    rows.push({
      figure: "check-ins acknowledged (2xx) /s",
      value: `${fmt(checkinRate)} /s`,
      target: `>= ${fmt(0.95 * CHECKIN_RATE)} /s`,
      verdict: checkinRate >= 0.95 * CHECKIN_RATE ? "PASS" : "FAIL",
    });
    rows.push({
      figure: "score reads answered (2xx) /s",
      value: `${fmt(readRate)} /s`,
      target: `>= ${fmt(0.95 * READ_RATE)} /s`,
      verdict: readRate >= 0.95 * READ_RATE ? "PASS" : "FAIL",
    });
    rows.push({
      figure: "acknowledged check-ins stored exactly once",
      value: `${fmt(stored.once)} of ${fmt(checkins.acknowledgedKeys.length)} (${stored.missing} missing, ${stored.more} twice)`,
      target: "all",
      verdict: stored.once === checkins.acknowledgedKeys.length && checkins.acknowledgedKeys.length > 0 ? "PASS" : "FAIL",
    });
    rows.push({
      figure: `service connections terminated mid-run, ${TERMINATIONS} time${TERMINATIONS === 1 ? "" : "s"}`,
      value: terminated.map((t) => fmt(t.backends)).join(", "),
      target: ">= 1 each time",
      verdict: terminated.length === TERMINATIONS && terminated.every((t) => t.backends >= 1) ? "PASS" : "FAIL",
    });
    const badUnavailable = checkins.unavailableWithoutRetryAfter + reads.unavailableWithoutRetryAfter;
    const otherStatuses = [...checkins.other.values(), ...reads.other.values()].reduce((a, b) => a + b, 0);
    rows.push({
      figure: "answers other than 2xx and 503 with Retry-After",
      value: `${fmt(otherStatuses + badUnavailable)}`,
      target: "0",
      verdict: otherStatuses + badUnavailable === 0 ? "PASS" : "FAIL",
    });
    rows.push({
      figure: "connection errors and timeouts",
      value: fmt(checkins.errors + reads.errors),
      target: "0",
      verdict: checkins.errors + reads.errors === 0 ? "PASS" : "FAIL",
    });
    rows.push({ figure: "503 with Retry-After while reconnecting", value: fmt(unavailableAt.length), target: "", verdict: "" });
    const from = rss.reduce((best, s) => (Math.abs(s.atS - RSS_FROM_S) < Math.abs(best.atS - RSS_FROM_S) ? s : best));
    const end = rss[rss.length - 1];
    const growth = (end.bytes - from.bytes) / from.bytes;
    rows.push({
      figure: `server RSS growth, ${fmt(from.atS)} s (${fmt(from.bytes / 2 ** 20)} MiB) to the end (${fmt(end.bytes / 2 ** 20)} MiB)`,
      value: `${(growth * 100).toFixed(1)}%`,
      target: `< ${RSS_GROWTH_LIMIT * 100}%`,
      verdict: growth < RSS_GROWTH_LIMIT ? "PASS" : "FAIL",
    });
    // What the server logged, when an answer or a stored check-in is wrong (not for a rate or the RSS).
    if (otherStatuses + badUnavailable + checkins.errors + reads.errors + stored.missing + stored.more > 0) {
      log(`server output (its end):\n${serve.output().slice(-4000)}`);
    }
  } finally {
    clearInterval(sampler);
    await serve?.kill("SIGTERM");
    await bench.end().catch(() => undefined);
    await database.drop();
  }
  printRows(`Vrai soak, ${fmt(SECONDS / 60, 1)} minutes, total ${fmt((performance.now() - started) / 1000)} s`, rows);
  if (rows.some((r) => r.verdict === "FAIL")) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
