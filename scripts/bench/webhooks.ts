/**
 * `npm run bench:webhooks`: webhook deliveries of `vrai serve` on PostgreSQL to a receiver on 127.0.0.1
 * (issue #28), the command as an operator runs it, with WEBHOOK_ALLOW_LOOPBACK (as `vrai dev`) so that a
 * local receiver is allowed, and its default poll interval and timeout.
 *
 * 1. Deliveries per second: N deliveries due at once (one endpoint per owner, events stored as the service
 *    stores them), from the first to the last receipt, each signature checked by the receiver on a sample.
 * 2. Lag under load: check-ins at R a second, each the first counted check-in after an agent.late (the
 *    agents' previous check-in two hours old, marked late), so every check-in records an agent.back in its
 *    own write: the time from the check-in's 201 to the receipt of its agent.back, p50 and p99. Beside them,
 *    penalties at P a second (an operator's change that writes a score, V9): from the 201 to the receipt of
 *    its score.changed. A check-in itself writes no score (V9: scores are computed daily and when a claim,
 *    proof or penalty changes), so agent.back is the event a check-in causes.
 *
 * Flags: --deliveries N (20,000), --rate R (500), --seconds S (20), --quick (500 deliveries, 50 check-ins/s
 * for 3 s: checks that the bench runs; its figures are not the issue's). TEST_PG_ADMIN_URL as the tests use it.
 */
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { SUBSCRIBABLE_EVENT_TYPES } from "../../src/service/events/kinds";
import { createSecretBox, secretsKey } from "../../src/service/webhooks/secret-box";
import { startServe } from "../../src/test-helpers/serve";
import { buildCommand, createBenchDatabase, fmt, printRows, type Row } from "./harness";

const OPERATOR_TOKEN = `bench-webhooks-${crypto.randomBytes(12).toString("hex")}`;
const SECRET = `whsec_${crypto.randomBytes(24).toString("base64")}`;

const { values } = parseArgs({
  options: { deliveries: { type: "string" }, rate: { type: "string" }, seconds: { type: "string" }, quick: { type: "boolean" } },
});
const QUICK = values.quick === true;
const DELIVERIES = Number(values.deliveries ?? (QUICK ? 500 : 20_000));
const RATE = Number(values.rate ?? (QUICK ? 50 : 500));
const SECONDS = Number(values.seconds ?? (QUICK ? 3 : 20));
/** Penalties a second beside the check-ins. */
const PENALTY_RATE = QUICK ? 2 : 10;
/** Owners of the bench; agent i belongs to owner i % OWNERS. */
const OWNERS = 100;

const log = (line: string) => console.log(line);
const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Receipt = { at: number; type: string; agentId: string | undefined };

/** The receiver: 204 to every delivery, the time each event id first arrived, and the signature checked on one in `checkEvery`. */
async function startReceiver(checkEvery: number) {
  const receipts = new Map<string, Receipt>();
  let received = 0;
  let badSignatures = 0;
  const hook = new Webhook(SECRET);
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const at = performance.now();
    const body = Buffer.concat(chunks).toString("utf8");
    const id = String(req.headers["webhook-id"]);
    if (received++ % checkEvery === 0) {
      try {
        hook.verify(body, req.headers as Record<string, string>);
      } catch {
        badSignatures++;
      }
    }
    if (!receipts.has(id)) {
      const event = JSON.parse(body) as { type: string; data: { agentId?: string } };
      receipts.set(id, { at, type: event.type, agentId: event.data.agentId });
    }
    res.writeHead(204).end();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    receipts,
    stats: () => ({ received, badSignatures }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const started = performance.now();
  buildCommand();
  const database = await createBenchDatabase("vrai_bench");
  const { name: dbName, url: dbUrl } = database;
  const db = new pg.Client({ connectionString: dbUrl });
  const receiver = await startReceiver(QUICK ? 1 : 50);
  const rows: Row[] = [];
  let serve: Awaited<ReturnType<typeof startServe>> | undefined;
  try {
    serve = await startServe({
      DATABASE_URL: dbUrl,
      PORT: "0",
      OPERATOR_TOKEN,
      LOG_LEVEL: "warn",
      WEBHOOK_ALLOW_LOOPBACK: "true",
      RATE_LIMIT_PER_MINUTE: "100000000",
      MAX_CONNECTIONS_PER_ADDRESS: "10000",
      MAX_CONNECTIONS: "10000",
      SCHEDULE_INTERVAL_MS: "3600000",
    });
    await db.connect();
    const now = () => Math.floor(Date.now() / 1000);
    const sealed = createSecretBox(secretsKey(undefined, OPERATOR_TOKEN)).seal(SECRET);
    const agents = Math.ceil(RATE * SECONDS);
    // Owners, each with an endpoint asking for every event; agents whose previous counted check-in is two hours
    // old (V3.5: its deadline passed an hour ago) and marked late, as the deadline scan leaves them.
    await db.query(
      `INSERT INTO owners (id, token_hash, created_at) SELECT 'own_bw' || o, md5(o::text), $1 FROM generate_series(0, $2 - 1) o`,
      [now(), OWNERS],
    );
    await db.query(
      `INSERT INTO webhook_endpoints (id, owner_id, url, description, events, secret, created_at, updated_at)
       SELECT 'whk_bw' || o, 'own_bw' || o, $1, 'bench', $2, $3, $4, $4 FROM generate_series(0, $5 - 1) o`,
      [`${receiver.url}/hook`, SUBSCRIBABLE_EVENT_TYPES, sealed, now(), OWNERS],
    );
    const previous = now() - 7200;
    await db.query(
      `INSERT INTO agents (id, name, owner_id, claim_id, claimed_at, key_hash, last_arrival, last_next_heartbeat_s, late_deadline, created_at)
       SELECT 'agt_bw' || i, NULL, 'own_bw' || (i % $1), i, $2 - 86400, encode(sha256(convert_to('va_agt_bw' || i || '.k', 'UTF8')), 'hex'),
              $2, 3600, $2 + 4200, $2 - 86400
       FROM generate_series(1, $3) i`,
      [OWNERS, previous, agents],
    );
    await db.query(
      `INSERT INTO claims (id, agent_id, owner_id, kind, claimed_at) SELECT i, 'agt_bw' || i, 'own_bw' || (i % $1), 'claim', $2 - 86400
       FROM generate_series(1, $3) i`,
      [OWNERS, previous, agents],
    );
    await db.query("SELECT setval('claims_id_seq', $1)", [agents]);
    await db.query("ANALYZE agents, claims, owners, webhook_endpoints");
    log(
      `bench:webhooks: vrai serve at ${serve.url} on PostgreSQL ${dbName}; receiver ${receiver.url}; ${fmt(OWNERS)} owners with an endpoint, ` +
        `${fmt(agents)} late agents`,
    );

    // 1. Deliveries per second: N events of the owners, each with its delivery, due at once.
    const sent = receiver.stats().received;
    await db.query(
      `WITH e AS (
         INSERT INTO events (owner_id, type, at, data)
         SELECT 'own_bw' || (n % $1), 'ping', $2, json_build_object('webhookId', 'whk_bw' || (n % $1), 'message', 'bench ' || n)::text
         FROM generate_series(1, $3) n RETURNING seq, owner_id, at
       )
       INSERT INTO webhook_deliveries (event_seq, endpoint_id, created_at, due_at) SELECT seq, 'whk_bw' || substr(owner_id, 7), at, at FROM e`,
      [OWNERS, now(), DELIVERIES],
    );
    const t0 = performance.now();
    while (receiver.stats().received - sent < DELIVERIES && performance.now() - t0 < 600_000) await sleep(20);
    const pings = [...receiver.receipts.values()].filter((r) => r.type === "ping").map((r) => r.at);
    const first = Math.min(...pings);
    const last = Math.max(...pings);
    const perSecond = (pings.length - 1) / ((last - first) / 1000);
    const tries = await db.query<{ status: number | null; error: string | null; n: number }>(
      "SELECT status, error, count(*)::int AS n FROM webhook_attempts GROUP BY status, error ORDER BY n DESC",
    );
    log(
      `1. ${fmt(pings.length)} deliveries in ${fmt((last - first) / 1000, 2)} s from the first receipt to the last: ${fmt(perSecond)} /s`,
    );
    log(
      `   tries logged: ${tries.rows.map((r) => `${fmt(r.n)} ${r.status ?? r.error}`).join(", ")}; requests received ${fmt(receiver.stats().received - sent)}`,
    );
    const requests = receiver.stats().received - sent;
    rows.push({
      figure: "  requests received for them (a retry or a second send adds one)",
      value: fmt(requests),
      target: fmt(DELIVERIES),
      verdict: requests === DELIVERIES && pings.length === DELIVERIES ? "PASS" : "FAIL",
    });
    rows.push({
      figure: "deliveries/s to a loopback receiver",
      value: `${fmt(perSecond)} /s`,
      target: ">= 500 /s",
      verdict: QUICK ? "" : perSecond >= 500 ? "PASS" : "FAIL",
    });

    // 2. Lag under R check-ins a second, each bringing its agent back (agent.back), and penalties beside them.
    const answered = new Map<string, number>();
    const penalties = new Map<string, number>();
    let statuses: Record<string, number> = {};
    const post = async (p: string, token: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(serve!.url + p, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      await res.arrayBuffer();
      return res.status;
    };
    const inFlight: Promise<unknown>[] = [];
    const runStart = performance.now();
    const penaltyEvery = Math.max(1, Math.round(RATE / PENALTY_RATE));
    for (let i = 1; i <= agents; i++) {
      // Paced: request i leaves at i / RATE seconds into the run.
      const due = runStart + ((i - 1) * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const agentId = `agt_bw${i}`;
      inFlight.push(
        post(`/v1/agents/${agentId}/checkins`, `va_${agentId}.k`, undefined, { "idempotency-key": crypto.randomUUID() }).then((status) => {
          if (status === 201) answered.set(agentId, performance.now());
        }),
      );
      if (i % penaltyEvery === 0) {
        const target = `agt_bw${1 + ((i * 7919) % agents)}`;
        inFlight.push(
          post("/v1/operator/penalties", OPERATOR_TOKEN, {
            agentId: target,
            code: "rate_abuse",
            points: 10,
            days: 30,
            reason: "bench",
          }).then((status) => {
            if (status === 201) penalties.set(target, performance.now());
          }),
        );
      }
    }
    await Promise.all(inFlight);
    const runSeconds = (performance.now() - runStart) / 1000;
    const offered = agents / runSeconds;
    const deadline = performance.now() + 60_000;
    const backs = () => [...receiver.receipts.values()].filter((r) => r.type === "agent.back");
    while (backs().length < answered.size && performance.now() < deadline) await sleep(50);
    await sleep(2000);
    const lags = backs()
      .filter((r) => r.agentId !== undefined && answered.has(r.agentId))
      .map((r) => r.at - answered.get(r.agentId!)!)
      .sort((a, b) => a - b);
    const changed = [...receiver.receipts.values()]
      .filter((r) => r.type === "score.changed" && r.agentId !== undefined && penalties.has(r.agentId))
      .map((r) => r.at - penalties.get(r.agentId!)!)
      .sort((a, b) => a - b);
    log(
      `2. ${fmt(agents)} check-ins offered at ${fmt(RATE)} /s (${fmt(offered)} /s achieved in ${fmt(runSeconds, 1)} s; answers ` +
        `${JSON.stringify(statuses)}), each bringing an agent back; ${fmt(penalties.size)} penalties beside them`,
    );
    log(
      `   agent.back received for ${fmt(lags.length)} of ${fmt(answered.size)} counted check-ins: p50 ${fmt(quantile(lags, 0.5))} ms, p99 ` +
        `${fmt(quantile(lags, 0.99))} ms, max ${fmt(lags[lags.length - 1] ?? NaN)} ms`,
    );
    log(
      `   score.changed received for ${fmt(changed.length)} of ${fmt(penalties.size)} penalties: p50 ${fmt(quantile(changed, 0.5))} ms, p99 ` +
        `${fmt(quantile(changed, 0.99))} ms`,
    );
    const p99 = quantile(lags, 0.99);
    rows.push({
      figure: `check-in -> agent.back delivered, p99 (${fmt(RATE)} check-ins/s)`,
      value: `${fmt(p99)} ms`,
      target: "< 2,000 ms",
      verdict: QUICK ? "" : p99 < 2000 && lags.length === answered.size ? "PASS" : "FAIL",
    });
    rows.push({
      figure: "penalty -> score.changed delivered, p99 (same load)",
      value: `${fmt(quantile(changed, 0.99))} ms`,
      target: "< 2,000 ms",
      verdict: QUICK ? "" : quantile(changed, 0.99) < 2000 && changed.length === penalties.size ? "PASS" : "FAIL",
    });
    const { received, badSignatures } = receiver.stats();
    rows.push({
      figure: "signatures checked on a sample, bad",
      value: String(badSignatures),
      target: "0",
      verdict: badSignatures === 0 ? "PASS" : "FAIL",
    });
    statuses = {};
    log(`   receiver: ${fmt(received)} requests in all`);
  } finally {
    await serve?.kill("SIGTERM");
    await db.end().catch(() => undefined);
    await receiver.close();
    await database.drop();
  }
  printRows(
    `Vrai webhooks benchmark${QUICK ? " (--quick: checks that it runs; not the issue's figures)" : ""}, total ${fmt((performance.now() - started) / 1000)} s`,
    rows,
  );
  if (rows.some((r) => r.verdict === "FAIL")) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
