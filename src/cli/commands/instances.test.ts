/**
 * Several instances (issue #18): three `vrai serve` processes on one PostgreSQL database behind HAProxy, each
 * with the chain indexer configured; one holds the chain's advisory lock and indexes, the others stand by.
 * What one instance does, the others see: check-ins are decided in the database (V3.1, V3.2), the latest-score
 * cache follows other instances' writes by NOTIFY, and the indexer moves to a standby when its instance dies.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import type { Hex } from "viem";
import { executorId } from "../../method";
import { createTestPgDb, type TestDb } from "../../test-helpers/db";
import { eventually } from "../../test-helpers/eventually";
import { startBalancer, type Balancer } from "../../test-helpers/haproxy";
import { startHttpServer } from "../../test-helpers/http-server";
import { deployToNode, startHardhatNode, traceRoot, type HardhatNode, type NodeDriver } from "../../test-helpers/node";
import { startServe, type ServeProcess } from "../../test-helpers/serve";

const OPERATOR_TOKEN = "operator-token-for-the-instances-test";
const INSTANCES = 3;
/** HAProxy's health check, answered from memory: an instance takes traffic once it is ready (issue #30). */
const HEALTH_PATH = "/v1/ready";

type Json = Record<string, any>;
type Answer = { status: number; json: Json; servedBy: string | null; replayed: boolean };

describe("three vrai serve instances behind HAProxy on one PostgreSQL", function () {
  this.timeout(300_000);
  let testDb: TestDb;
  let node: HardhatNode;
  let chain: NodeDriver;
  let dir: string;
  let chainAgent: bigint;
  const instances: ServeProcess[] = [];
  let balancer: Balancer;
  /** What every instance shares: the database and the chain it follows (each has its own port). More instances start with it. */
  let sharedEnv: Record<string, string>;

  before(async () => {
    testDb = await createTestPgDb();
    node = await startHardhatNode();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-instances-"));
    chain = await deployToNode(node.url, dir);
    [chainAgent] = await chain.register(chain.accounts[2]);
    sharedEnv = {
      DATABASE_URL: testDb.url!,
      PORT: "0",
      OPERATOR_TOKEN,
      LOG_LEVEL: "info",
      RATE_LIMIT_PER_MINUTE: "100000",
      RPC_URL: node.url,
      DEPLOYMENT: chain.file,
      CONFIRMATIONS: "0",
      POLL_INTERVAL_MS: "100",
      // Webhooks to the test's receiver on 127.0.0.1, looked for every 50 ms by each instance's worker (issue #28).
      WEBHOOK_ALLOW_LOOPBACK: "true",
      WEBHOOK_POLL_INTERVAL_MS: "50",
      // Each instance reads its own scores a few hundred times before it reports ready, as vrai serve does 3,000 times.
      WARM_UP_REQUESTS: "300",
      // Every connection comes from HAProxy on 127.0.0.1: raised behind a proxy, as the README says (64 per client address).
      MAX_CONNECTIONS_PER_ADDRESS: "800",
    };
    // The first alone: it builds the bundle all three run, and takes the indexer lock.
    instances.push(await startServe(sharedEnv));
    instances.push(...(await Promise.all(Array.from({ length: INSTANCES - 1 }, () => startServe(sharedEnv)))));
    // Listening, each answers 503 until it is ready; the balancer sends it nothing meanwhile.
    for (const s of instances)
      await eventually(
        async () => {
          const answer = await fetch(`${s.url}${HEALTH_PATH}`);
          await answer.arrayBuffer();
          return answer.status === 200;
        },
        `${s.url} ready`,
        30_000,
      );
    balancer = await startBalancer(
      instances.map((s, i) => ({ name: `vrai${i + 1}`, url: s.url })),
      HEALTH_PATH,
    );
  });
  after(async () => {
    await balancer?.close();
    await Promise.all(instances.map((s) => s.kill("SIGKILL")));
    await node?.close();
    await testDb?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function call(
    base: string,
    method: "GET" | "POST",
    p: string,
    options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const res = await fetch(base + p, {
      method,
      headers: {
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    }).catch((error: Error) => {
      // undici says only "fetch failed"; what failed is in its cause.
      const cause = error.cause as (Error & { code?: string }) | undefined;
      throw new Error(`${method} ${base}${p}: ${error.message} (${cause?.code ?? ""} ${cause?.message ?? ""})`, { cause });
    });
    const text = await res.text();
    let json: Json;
    try {
      json = JSON.parse(text) as Json;
    } catch {
      throw new Error(`${method} ${base}${p}: ${res.status} answered with no JSON: ${text.slice(0, 200)}`);
    }
    return {
      status: res.status,
      json,
      servedBy: res.headers.get("x-served-by"),
      replayed: res.headers.get("idempotent-replayed") === "true",
    };
  }
  /**
   * Reads the executor's derived score through the balancer every 200 ms until it counts `n` records (120 s at most).
   * A read the balancer closed without an answer is read again: HAProxy closes the client's connection so that it
   * retries when a server closes a kept-alive connection as the request is sent (HAProxy's `http-reuse safe`), as a
   * browser would, and the test waits on the records, not on one read. A failure names the last answer or error
   * and what HAProxy said of its servers.
   */
  async function recordsThroughBalancer(did: string, n: number): Promise<void> {
    let last = "no answer";
    for (const until = Date.now() + 120_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
      try {
        const res = await call(balancer.url, "GET", `/v1/executors/${encodeURIComponent(did)}/derived-score`);
        if (res.status === 200 && res.json.recordCount === n) return;
        last = `${res.status} ${JSON.stringify(res.json)}`;
      } catch (error) {
        last = String(error);
      }
    }
    throw new Error(`${n} records not served through the balancer in 120 s; last: ${last}\nHAProxy: ${balancer.output()}`);
  }
  const newAgent = async (base: string) => {
    const owner = await call(base, "POST", "/v1/owners", { body: {} });
    const agent = await call(base, "POST", "/v1/agents", { token: owner.json.token, body: {} });
    return { agentId: agent.json.agentId as string, agentKey: agent.json.agentKey as string };
  };
  const checkIn = (base: string, agent: { agentId: string; agentKey: string }, key: string) =>
    call(base, "POST", `/v1/agents/${agent.agentId}/checkins`, { token: agent.agentKey, body: {}, headers: { "idempotency-key": key } });
  const storedCheckins = async (agentId: string) =>
    (await testDb.db.query<{ idempotency_key: string }>("SELECT idempotency_key FROM checkins WHERE agent_id = $1", [agentId])).rows.map(
      (r) => r.idempotency_key,
    );

  it("each parsed its stack traces' source map (the bundle's) before it reported ready, not at its first error under load", () => {
    for (const s of instances) {
      const ready = s
        .output()
        .split("\n")
        .filter((line) => line.includes('"api ready"'));
      expect(ready, s.output().slice(-2000)).to.have.length(1);
      expect(JSON.parse(ready[0])).to.include({ sourceMap: true });
    }
  });

  it("counts exactly one of 50 parallel check-ins of one agent spread over the three instances (V3.2)", async () => {
    const agent = await newAgent(balancer.url);
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => ({ key: `burst-${i}`, ...(await checkIn(balancer.url, agent, `burst-${i}`)) })),
    );
    expect(new Set(answers.map((a) => a.servedBy)).size, "all three instances answered").to.equal(INSTANCES);
    const counted = answers.filter((a) => a.status === 201);
    expect(counted).to.have.length(1);
    expect(answers.filter((a) => a.status === 429)).to.have.length(49);
    expect(await storedCheckins(agent.agentId)).to.deep.equal([counted[0].key]);
  });

  it("counts once the same Idempotency-Key sent to every instance at once, and answers each with the original check-in (V3.1)", async () => {
    const agent = await newAgent(balancer.url);
    const together = await Promise.all(Array.from({ length: 2 * INSTANCES }, () => checkIn(balancer.url, agent, "one-key")));
    expect(new Set(together.map((a) => a.servedBy)).size).to.equal(INSTANCES);
    // The same key in flight on one instance may be answered 409 (V3.1); across instances the database decides.
    expect(
      together.every((a) => a.status === 201 || a.status === 409),
      JSON.stringify(together.map((a) => a.status)),
    ).to.equal(true);
    const again = await Promise.all(Array.from({ length: INSTANCES }, (_, i) => checkIn(instances[i].url, agent, "one-key")));
    const answered = [...together, ...again].filter((a) => a.status === 201);
    expect(
      answered.filter((a) => !a.replayed),
      "counted by one instance only",
    ).to.have.length(1);
    expect(again.every((a) => a.status === 201 && a.replayed)).to.equal(true);
    for (const a of answered) expect(a.json).to.deep.equal(answered[0].json);
    expect(await storedCheckins(agent.agentId)).to.deep.equal(["one-key"]);
  });

  it("serves a score written through one instance from the other two within a second (their caches follow NOTIFY)", async () => {
    const [writer, ...readers] = instances;
    const agent = await newAgent(writer.url);
    const before = await call(writer.url, "GET", `/v1/agents/${agent.agentId}/score`);
    expect(before.status).to.equal(200);
    // The readers have the claim's score: read (and cached) before the change.
    for (const reader of readers)
      expect((await call(reader.url, "GET", `/v1/agents/${agent.agentId}/score`)).json.id).to.equal(before.json.id);
    const penalty = await call(writer.url, "POST", "/v1/operator/penalties", {
      token: OPERATOR_TOKEN,
      body: { agentId: agent.agentId, code: "rate_abuse", points: 20, days: 30, reason: "instances test" },
    });
    expect(penalty.status).to.equal(201);
    const written = Date.now();
    const after = await call(writer.url, "GET", `/v1/agents/${agent.agentId}/score`);
    expect(after.json.id).to.not.equal(before.json.id);
    expect(after.json.total).to.equal(before.json.total - 20);
    const lags = await Promise.all(
      readers.map(async (reader) => {
        // Bounded: the issue asks for a second; the machine is shared, so the bound is five.
        for (;;) {
          const seen = await call(reader.url, "GET", `/v1/agents/${agent.agentId}/score`);
          if (seen.json.id === after.json.id) {
            expect(seen.json).to.deep.equal(after.json);
            return Date.now() - written;
          }
          expect(seen.json.id, "an older score, or none").to.equal(before.json.id);
          if (Date.now() - written > 5_000)
            throw new Error(`${reader.url} still serves score ${seen.json.id} 5 s after ${after.json.id} was written`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }),
    );
    console.log(`      the other instances served the new score ${lags.map((ms) => `${ms} ms`).join(" and ")} after it was written`);
    expect(Math.max(...lags)).to.be.at.most(5_000);
  });

  it(
    "shares one rate limit between instances on one Redis: three instances allow the limit once, not " +
      "three times (three vrai serve behind HAProxy: 5-20 s)",
    async () => {
      // Three more instances without the indexer, on a fresh key prefix in the machine's Redis. At 50 a
      // minute a client address gets a burst of 10 (src/app/run.ts), wherever its requests land.
      const env = {
        DATABASE_URL: testDb.url!,
        PORT: "0",
        OPERATOR_TOKEN,
        LOG_LEVEL: "info",
        RATE_LIMIT_PER_MINUTE: "50",
        RATE_LIMIT_REDIS_URL: "redis://127.0.0.1:6379",
        RATE_LIMIT_REDIS_PREFIX: `vrai-instances-test-${process.pid}-${Date.now()}`,
      };
      const shared = await Promise.all([startServe(env), startServe(env), startServe(env)]);
      try {
        const statuses: number[][] = [[], [], []];
        // In turn to each of the three, until the first 429: with a limit per instance, about 30 get through.
        for (let i = 0; i < 60 && !statuses.flat().includes(429); i++)
          statuses[i % 3].push((await call(shared[i % 3].url, "GET", "/v1/method")).status);
        const ok = statuses.flat().filter((status) => status === 200).length;
        expect(ok, statuses.map((s) => s.join(",")).join(" | ")).to.equal(10);
        expect(statuses.map((s) => s.filter((status) => status === 200).length)).to.deep.equal([4, 3, 3]);
        // Every instance now refuses the address.
        for (const instance of shared) expect((await call(instance.url, "GET", "/v1/method")).status).to.equal(429);
      } finally {
        await Promise.all(shared.map((s) => s.kill("SIGKILL")));
      }
    },
  );

  it("delivers each webhook event once though the three instances' workers all look for them (SKIP LOCKED, issue #28)", async () => {
    const receiver = await startHttpServer();
    try {
      // Each answer takes a little while, so the workers' takes overlap.
      receiver.route("POST", "/hook", () => ({ status: 200, delay: 20 }));
      const owner = await call(balancer.url, "POST", "/v1/owners", { body: {} });
      const made = await call(balancer.url, "POST", "/v1/webhooks", {
        token: owner.json.token,
        body: { url: `${receiver.url}/hook`, events: ["score.changed"] },
      });
      expect(made.status).to.equal(201);
      const pings = await Promise.all(
        Array.from({ length: 60 }, () =>
          call(balancer.url, "POST", `/v1/webhooks/${made.json.id}/test`, { token: owner.json.token, body: {} }),
        ),
      );
      expect(new Set(pings.map((p) => p.servedBy)).size, "made through every instance").to.equal(INSTANCES);
      for (const until = Date.now() + 60_000; receiver.requestsTo("/hook").length < 60 && Date.now() < until; ) {
        await new Promise((r) => setTimeout(r, 100));
      }
      // A little longer: a second send of any of them would come now.
      await new Promise((r) => setTimeout(r, 1000));
      const ids = receiver.requestsTo("/hook").map((r) => r.headers["webhook-id"]);
      // The delivery log, to tell on a failure which tries were made, when, and what they got.
      const log = async () =>
        JSON.stringify(
          (
            await testDb.db.query(
              `SELECT e.id AS event, a.attempt, a.at, a.status, a.latency_ms, a.error FROM webhook_attempts a
               JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.seq = d.event_seq
               WHERE d.endpoint_id = $1 AND (a.status IS NULL OR a.attempt > 1 OR a.latency_ms > 1000) ORDER BY a.at`,
              [made.json.id],
            )
          ).rows,
        );
      const events = new Set(ids).size;
      if (ids.length !== 60 || events !== 60) expect.fail(`${ids.length} requests, ${events} events: ${await log()}`);
      const { rows } = await testDb.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1",
        [made.json.id],
      );
      expect(rows[0].n, "one try each in the log").to.equal(60);
    } finally {
      await receiver.close();
    }
  });

  it("hands the indexer to a standby when the active instance is killed, indexing every event once", async () => {
    const did = executorId(chain.deployment.chainId, chain.deployment.contracts.IdentityRegistry.address, chainAgent);
    const proof = (n: number) =>
      chain.proofTx(chain.accounts[2], chainAgent, {
        success: n % 2 === 0,
        riskLevel: 1,
        policyViolations: 0,
        traceRoot: traceRoot(`instances-${n}`),
      });
    const sent: Hex[] = [];
    sent.push(...(await chain.send([proof(1)])));
    await recordsThroughBalancer(did, 1);
    const active = instances.filter((s) => s.output().includes("indexer lock acquired"));
    expect(active, "one instance indexes").to.have.length(1);
    const standbys = instances.filter((s) => s !== active[0]);
    for (const s of standbys) expect(s.output()).to.contain("another indexer holds the lock: standing by");

    // One event right before the kill (the active instance may or may not have indexed it), the rest after.
    sent.push(...(await chain.send([proof(2)])));
    await active[0].kill("SIGKILL");
    for (let n = 3; n <= 6; n++) sent.push(...(await chain.send([proof(n)])));
    await recordsThroughBalancer(did, 6);
    expect(
      standbys.filter((s) => s.output().includes("indexer lock acquired")),
      "one standby took over",
    ).to.have.length(1);

    const { rows } = await testDb.db.query<{ tx_hash: string; n: number }>(
      "SELECT tx_hash, count(*)::int AS n FROM chain_proof_records GROUP BY tx_hash",
    );
    expect(rows.map((r) => r.tx_hash).sort(), "every event, none missing").to.deep.equal([...sent].map((h) => h.toLowerCase()).sort());
    expect(
      rows.every((r) => r.n === 1),
      "none twice",
    ).to.equal(true);
  });

  it("keeps indexing when every lock connection is lost at once, as in a database failover: the instances stand by again and one takes the lock", async () => {
    const did = executorId(chain.deployment.chainId, chain.deployment.contracts.IdentityRegistry.address, chainAgent);
    const alive = instances.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
    expect(alive).to.have.length(INSTANCES - 1);
    const acquired = () => alive.map((s) => s.output().split("indexer lock acquired").length - 1).reduce((a, b) => a + b, 0);
    const acquiredBefore = acquired();
    const { rows: ended } = await testDb.db.query<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'vrai-indexer-%'",
    );
    expect(
      ended.filter((r) => r.ended),
      "the active instance's lock and the standby's",
    ).to.have.length(alive.length);
    const sent: Hex[] = [];
    for (let n = 7; n <= 9; n++)
      sent.push(
        ...(await chain.send([
          chain.proofTx(chain.accounts[2], chainAgent, {
            success: true,
            riskLevel: 0,
            policyViolations: 0,
            traceRoot: traceRoot(`instances-${n}`),
          }),
        ])),
      );
    await recordsThroughBalancer(did, 9);
    // A failure shows what each instance's indexer said last.
    const indexerLines = (s: ServeProcess) =>
      s
        .output()
        .split("\n")
        .filter((line) => line.includes("indexer"))
        .slice(-12);
    const said = alive.map((s, i) => [`instance ${i}:`, ...indexerLines(s)].join("\n")).join("\n");
    expect(acquired() - acquiredBefore, `one instance took the lock again\n${said}`).to.equal(1);
    for (const s of alive) expect(s.output()).to.not.contain("indexer stopped");
    const { rows } = await testDb.db.query<{ tx_hash: string; n: number }>(
      "SELECT tx_hash, count(*)::int AS n FROM chain_proof_records GROUP BY tx_hash",
    );
    expect(rows).to.have.length(9);
    expect(
      rows.every((r) => r.n === 1),
      "none twice",
    ).to.equal(true);
    for (const hash of sent) expect(rows.map((r) => r.tx_hash)).to.include(hash.toLowerCase());
  });
});
