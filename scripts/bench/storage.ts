/**
 * `npm run bench:storage -- --agents N --days D [--keep]`: how many bytes the store keeps per
 * agent-day (issue #18, "Storage and a million agents"), on a fresh PostgreSQL database filled by the
 * service's own code, never by SQL inserts.
 *
 * 1. Build: the real app (`startApiServer`, a manual clock, the proof verifiers pointed at a DNS
 *    server on 127.0.0.1) takes owners (ten agents each), claims, a wallet proof per owner, a domain
 *    proof for one agent in five, then D days of hourly check-ins of every agent through
 *    `checkins.checkIn` in process (all agents of a quarter-hour slot at once, so the SQL store's
 *    batching is used; one agent's check-ins are 3,600 s apart, V3.2), some missed so that
 *    reliabilities differ, and a penalty (V7) for one agent in twenty halfway through. The
 *    scheduler's `tick` runs at each simulated midnight, as the service runs it: the daily recompute
 *    and the day's tree (V9), its root anchored on an in-process Hardhat chain (a proof is served only
 *    once its day's root is mined), then every maintenance part it has (owner recomputes,
 *    proof re-checks, expired challenges, and check-in retention once it hooks in there). Each
 *    simulated hour ends with a plain VACUUM of the two tables every check-in updates (agents,
 *    agent_days): the autovacuum runs a real hour would have had (see the loop).
 * 2. Measure: plain `VACUUM ANALYZE` (not FULL: the sizes a running service has), then
 *    `pg_total_relation_size` (heap, indexes, TOAST) of every table and each of its partitions, in
 *    every schema. Counted: every table that grew from its empty size after the migrations, except
 *    the fixed-size ones in `FIXED_TABLES`; the breakdown names each table and whether it is counted.
 * 3. Verify what the savings must keep: `vrai recompute --verify` recomputes every stored score from
 *    its stored inputs byte for byte (V9), and `GET /v1/scores/{id}/proof` over HTTP serves the
 *    proof of sampled daily scores of several days: its leaf (version 2) is the score as the API serves
 *    it, re-rendered from its inputs (total, components, state), and the proof leads to its day's stored
 *    root, itself checked against the tree of that day's daily scores built again.
 *
 * The last line is `storage: <bytes> bytes per agent-day (<N> agents × <D> days, ...)`; the exit
 * code is 1 when a verification fails or the 2,000 × 30 target is missed, 2 on bad flags.
 * Environment: TEST_PG_ADMIN_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
 */
import crypto from "node:crypto";
import { Resolver } from "node:dns/promises";
import { performance } from "node:perf_hooks";
import pg from "pg";
import pino from "pino";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../../src/app/server";
import { anchorRegistryAbi } from "../../src/chain/abi/anchorRegistry";
import {
  buildScoreTree,
  componentLeafValue,
  processScoreProof,
  scoreLeafFromJson,
  scoreLeafHash,
  scoreLeafToJson,
  scoreLeafV2,
} from "../../src/chain/score-tree";
import { parseFlags } from "../../src/cli/flags";
import { memoryIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/main";
import { InvalidInputError } from "../../src/errors";
import { DAY_S, dayStart, utcDay, type ScoreResult } from "../../src/method";
import type { Authenticate } from "../../src/service/checkins";
import { createManualClock } from "../../src/service/clock";
import { createAnchorRepository } from "../../src/store/anchors";
import { createPgDb } from "../../src/store/db";
import { startTestChain } from "../../src/test-helpers/chain";
import { startDnsServer } from "../../src/test-helpers/dns-server";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const USAGE = "bench:storage -- --agents N --days D [--keep]";
const OPERATOR_TOKEN = "operator-bench-storage-token-0123";

/** The issue's target: at most this many bytes per agent-day at TARGET_AGENTS × TARGET_DAYS. */
const TARGET_BYTES = 2_000;
const TARGET_AGENTS = 2_000;
const TARGET_DAYS = 30;

/** The first simulated day; the setup happens one minute into it. */
const START_DAY = "2026-11-01";
const AGENTS_PER_OWNER = 10;
/** One agent in DOMAIN_EVERY has a domain proof, one in PENALTY_EVERY a penalty, one in FLAKY_EVERY misses many check-ins. */
const DOMAIN_EVERY = 5;
const PENALTY_EVERY = 20;
const FLAKY_EVERY = 10;
/** Share of its hourly check-ins a steady agent misses, and a flaky one. */
const MISS_STEADY = 0.02;
const MISS_FLAKY = 0.3;
/**
 * An hour is cut into this many slots; agent i checks in at slot i mod SLOTS of every hour, so its check-ins are 3,600 s apart
 * (V3.2: refused under 1,200 s).
 */
const SLOTS = 4;
/** Owners set up at once (each claims its agents one after the other: a claim locks its owner). */
const SETUP_IN_FLIGHT = 32;
/** Check-ins in flight at once: enough for the store to batch, few enough to bound memory. */
const IN_FLIGHT = 512;
/** Agents whose daily scores' proofs are read over HTTP, and days sampled for each. */
const PROOF_AGENTS = 8;
const PROOF_DAYS = 5;

/**
 * Tables whose size does not grow with agents or days (bookkeeping, operator settings, the
 * indexer's chain state, which this bench does not feed): shown in the breakdown, never counted.
 */
const FIXED_TABLES = new Set(["schema_migrations", "settings", "operators", "outages", "indexer_checkpoints", "indexer_blocks"]);

/** `heapFree`: of `bytes`, the heap's free and dead space (pgstattuple_approx), reusable but not given back by a plain VACUUM; null without pgstattuple. */
export type TableSize = {
  name: string;
  bytes: number;
  heapFree: number | null;
  rows: number;
  partitions: number;
  counted: boolean;
  why: string;
};

export type StorageBenchResult = {
  agents: number;
  days: number;
  bytesPerAgentDay: number;
  tables: TableSize[];
  /** Scores `vrai recompute --verify` checked (all of them), and the daily-score proofs read over HTTP and checked. */
  verified: { scores: number; proofs: number; days: number };
  /** The last line printed. */
  summary: string;
  /** False when a verification failed or the target was missed. */
  ok: boolean;
};

type DailyScore = { id: number; day: string; sha256: string; method: string; total: number; result: ScoreResult };

type Agent = { id: string; authenticate: Authenticate; flaky: boolean };

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Runs `fn` on every item with at most `limit` running at once. */
async function forEachConcurrently<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A pseudo-random number in [0, 1) fixed by `parts`: every run with the same flags misses the same check-ins. */
function chance(...parts: Array<string | number>): number {
  return crypto.createHash("sha256").update(parts.join(":")).digest().readUInt32BE(0) / 2 ** 32;
}

function parseOptions(argv: readonly string[]): { agents: number; days: number; keep: boolean } {
  const { values, positionals } = parseFlags(
    argv,
    { agents: { type: "string" }, days: { type: "string" }, keep: { type: "boolean" } },
    USAGE,
  );
  if (positionals.length > 0) throw new InvalidInputError("usage", `unknown argument ${positionals[0]} (usage: npm run ${USAGE})`);
  const whole = (name: string, text: string | undefined, max: number) => {
    if (text === undefined) throw new InvalidInputError("usage", `--${name} is required (usage: npm run ${USAGE})`);
    if (!/^[1-9]\d*$/.test(text) || Number(text) > max)
      throw new InvalidInputError("usage", `--${name}: expected a whole number from 1 to ${fmt(max)}, got ${text}`);
    return Number(text);
  };
  return { agents: whole("agents", values.agents, 1_000_000), days: whole("days", values.days, 400), keep: values.keep ?? false };
}

/** A table's name in the breakdown: schema-qualified outside `public`. */
const TABLE_NAME = "CASE WHEN n.nspname = 'public' THEN c.relname ELSE n.nspname || '.' || c.relname END";

/**
 * Every table `c` of every user schema (plain, partitioned or materialized view), joined to each of
 * its parts `p`: the table itself and its partitions at any depth.
 */
const TABLES_WITH_PARTS = `
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
       AND c.relkind IN ('r', 'p', 'm') AND NOT c.relispartition
       AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
      -- pg_partition_tree lists nothing for a table that is not partitioned: hence the table itself besides.
      CROSS JOIN LATERAL (SELECT c.oid UNION SELECT t.relid::oid FROM pg_partition_tree(c.oid) t) AS part(oid)
      JOIN pg_class p ON p.oid = part.oid`;

/** Every table of every user schema, with its partitions' heap, indexes and TOAST summed, and its rows (as ANALYZE estimates them). */
async function tableSizes(client: pg.Client): Promise<Map<string, { bytes: number; rows: number; partitions: number }>> {
  const { rows } = await client.query<{ name: string; bytes: string; rows: string; partitions: string }>(`
    SELECT ${TABLE_NAME} AS name,
           sum(pg_total_relation_size(p.oid))::bigint AS bytes,
           -- A partitioned parent's reltuples (set by ANALYZE) is the sum of its partitions': counted once, in them.
           coalesce(sum(greatest(p.reltuples, 0)) FILTER (WHERE p.relkind <> 'p'), 0)::bigint AS rows,
           count(*) FILTER (WHERE p.oid <> c.oid) AS partitions
      ${TABLES_WITH_PARTS}
     GROUP BY 1`);
  return new Map(rows.map((r) => [r.name, { bytes: Number(r.bytes), rows: Number(r.rows), partitions: Number(r.partitions) }]));
}

/**
 * The free and dead space in each table's heap (partitions summed), from pgstattuple_approx: what a
 * VACUUM FULL would give back of the heap (indexes not included). Empty when the extension is not installed.
 */
async function heapFreeSpace(client: pg.Client): Promise<Map<string, number>> {
  try {
    await client.query("CREATE EXTENSION IF NOT EXISTS pgstattuple");
  } catch {
    return new Map();
  }
  const { rows } = await client.query<{ name: string; free: string }>(`
    SELECT ${TABLE_NAME} AS name, sum(s.approx_free_space + s.dead_tuple_len)::bigint AS free
      ${TABLES_WITH_PARTS}
      CROSS JOIN LATERAL pgstattuple_approx(p.oid) s
     WHERE p.relkind = 'r'
     GROUP BY 1`);
  return new Map(rows.map((r) => [r.name, Number(r.free)]));
}

/** What the check-in tables hold at the end: the retention rule in force shows as the oldest day kept. */
async function checkinsKept(client: pg.Client, tables: TableSize[]): Promise<string> {
  const { rows } = await client.query<{ oldest: string | null; n: string }>("SELECT min(arrival) AS oldest, count(*) AS n FROM checkins");
  const partitions = tables.find((t) => t.name === "checkins")?.partitions ?? 0;
  const oldest = rows[0].oldest === null ? "none" : utcDay(Number(rows[0].oldest));
  return `check-ins kept: ${fmt(Number(rows[0].n))} from ${oldest} on, ${partitions} partitions`;
}

/** Owners, claims, wallet and domain proofs: the shapes real scores have (V6). */
async function setUp(server: ApiServer, dns: { setTxt(name: string, records: string[]): void }, n: number): Promise<Agent[]> {
  const { service, proofs } = server;
  const owners = Array.from({ length: Math.ceil(n / AGENTS_PER_OWNER) }, (_, o) => o);
  const agents: Agent[] = new Array(n);
  await forEachConcurrently(owners, SETUP_IN_FLIGHT, async (o) => {
    const owner = await service.accounts.createOwner();
    const wallet = privateKeyToAccount(generatePrivateKey());
    const challenge = await proofs.issueChallenge(owner.ownerId, { kind: "wallet", subject: wallet.address });
    const signature = await wallet.signMessage({ message: challenge.message });
    await proofs.submitProof(owner.ownerId, challenge.id, { address: wallet.address, signature, signatureType: "eip191" });
    for (let i = o * AGENTS_PER_OWNER; i < Math.min(n, (o + 1) * AGENTS_PER_OWNER); i++) {
      const claim = await service.accounts.claimNewAgent(owner.ownerId, { name: `bench agent ${i}` });
      const key = claim.agentKey;
      agents[i] = { id: claim.agentId, authenticate: (agent) => service.accounts.checkAgentKey(agent, key), flaky: i % FLAKY_EVERY === 0 };
      if (i % DOMAIN_EVERY === 0) {
        const domain = `agent-${i}.bench-storage.example`;
        const c = await proofs.issueChallenge(owner.ownerId, { kind: "domain", subject: domain, agentId: claim.agentId });
        dns.setTxt(`_vrai.${domain}`, [c.token]);
        await proofs.submitProof(owner.ownerId, c.id, { domain, method: "dns" });
      }
    }
  });
  return agents;
}

/**
 * Reads the proofs of sampled daily scores over HTTP (`GET /v1/scores/{id}/proof`) and checks each
 * one: its leaf is the score's [agent, day, method, sha256], and the proof leads from the leaf to the
 * root the anchoring stored for that day (`dayRoot`). Every sampled agent must have a daily score on
 * every sampled day. Returns how many proofs and days passed, and what went wrong.
 */
async function verifyProofs(
  url: string,
  agents: Agent[],
  days: string[],
  dayRoot: (day: string) => Promise<Hex | null>,
): Promise<{ proofs: number; days: number; problems: string[] }> {
  const problems: string[] = [];
  const picks = Math.min(PROOF_DAYS, days.length);
  const sampledDays = [
    ...new Set(Array.from({ length: picks }, (_, k) => days[Math.round((k * (days.length - 1)) / Math.max(1, picks - 1))])),
  ];
  const roots = new Map<string, Hex | null>();
  for (const day of sampledDays) {
    roots.set(
      day,
      await dayRoot(day).catch((error: Error) => {
        problems.push(error.message);
        return null;
      }),
    );
  }
  const provenDays = new Set<string>();
  const step = Math.max(1, Math.floor(agents.length / PROOF_AGENTS));
  let proofs = 0;
  for (let i = 0; i < agents.length && i / step < PROOF_AGENTS; i += step) {
    const agent = agents[i];
    const scores: DailyScore[] = [];
    for (let cursor: string | null = ""; cursor !== null; ) {
      const list = await fetch(
        `${url}/v1/agents/${agent.id}/scores?from=${days[0]}&to=${days[days.length - 1]}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      );
      if (list.status !== 200) {
        problems.push(`GET /v1/agents/${agent.id}/scores answered ${list.status}`);
        break;
      }
      const page = (await list.json()) as { scores: DailyScore[]; nextCursor: string | null };
      scores.push(...page.scores);
      cursor = page.nextCursor;
    }
    for (const day of sampledDays) {
      const score = scores.find((s) => s.day === day);
      if (!score) {
        problems.push(`agent ${agent.id} has no daily score of ${day}`);
        continue;
      }
      const res = await fetch(`${url}/v1/scores/${score.id}/proof`);
      if (res.status !== 200) {
        problems.push(`GET /v1/scores/${score.id}/proof answered ${res.status}: ${await res.text()}`);
        continue;
      }
      const p = (await res.json()) as { leaf: Hex; leafValues: unknown[]; proof: Hex[]; root: Hex; day: string };
      // The score as served, re-rendered from its inputs; no agent here holds an ERC-8004 proof.
      const { identity, reliability, integrity } = score.result.components;
      const expected = scoreLeafToJson(
        scoreLeafV2({
          agentId: agent.id,
          day,
          method: score.method,
          sha256: score.sha256,
          total: score.total,
          identity: componentLeafValue(identity),
          reliability: componentLeafValue(reliability),
          integrity: componentLeafValue(integrity),
          established: score.result.state === "established",
          erc8004Subject: null,
        }),
      );
      if (JSON.stringify(p.leafValues) !== JSON.stringify(expected))
        problems.push(`score ${score.id}: leaf values ${JSON.stringify(p.leafValues)}, expected ${JSON.stringify(expected)}`);
      else if (scoreLeafHash(scoreLeafFromJson(p.leafValues)) !== p.leaf)
        problems.push(`score ${score.id}: the leaf is not the hash of its values`);
      else if (processScoreProof(p.leaf, p.proof) !== roots.get(day))
        problems.push(
          `score ${score.id}: the proof leads to ${processScoreProof(p.leaf, p.proof)}, not to ${day}'s stored root ${roots.get(day)}`,
        );
      else if (p.root !== roots.get(day) || p.day !== day)
        problems.push(`score ${score.id}: answered root ${p.root} of ${p.day}, the stored root of ${day} is ${roots.get(day)}`);
      else {
        proofs++;
        provenDays.add(day);
      }
    }
  }
  return { proofs, days: provenDays.size, problems };
}

/**
 * The benchmark: builds, measures and verifies as the header says, printing through `log`.
 * @throws InvalidInputError `usage` on bad flags (nothing is created)
 */
export async function runStorageBench(argv: readonly string[], log: (line: string) => void = console.log): Promise<StorageBenchResult> {
  const { agents: n, days: d, keep } = parseOptions(argv);
  const started = performance.now();
  let stageStarted = started;
  const stage = (name: string) => {
    const now = performance.now();
    log(`stage ${name}: ${fmt((now - stageStarted) / 1000, 1)} s`);
    stageStarted = now;
  };
  const dbName = `vrai_bench_storage_${crypto.randomBytes(4).toString("hex")}`;
  const dbUrl = ADMIN_URL.replace(/\/[^/]*$/, `/${dbName}`);
  const root = new pg.Client({ connectionString: ADMIN_URL });
  await root.connect();
  await root.query(`CREATE DATABASE ${dbName}`);
  log(`database ${dbName}; ${fmt(n)} agents × ${fmt(d)} days (${fmt(n * d * 24)} check-in slots); figures on a shared machine are noisy`);
  const admin = new pg.Client({ connectionString: dbUrl });
  const db = createPgDb(dbUrl, { max: 20 });
  const dns = await startDnsServer();
  const resolver = new Resolver();
  resolver.setServers([dns.address]);
  const clock = createManualClock(dayStart(START_DAY) + 60);
  let server: ApiServer | null = null;
  const chain = await startTestChain();
  try {
    await admin.connect();
    // Each day's root anchored as the service anchors it, by an account holding the anchorer role.
    const registry = (await chain.deployContract("AnchorRegistry", [chain.accounts[0].address])).address;
    const role = await chain.publicClient.readContract({ address: registry, abi: anchorRegistryAbi, functionName: "ANCHORER_ROLE" });
    await chain.publicClient.waitForTransactionReceipt({
      hash: await chain.walletClient.writeContract({
        address: registry,
        abi: anchorRegistryAbi,
        functionName: "grantRole",
        args: [role, chain.accounts[1].address],
      }),
    });
    server = await startApiServer({
      anchorWriter: { publicClient: chain.publicClient, walletClient: chain.walletClients[1], contract: registry },
      db,
      operatorToken: OPERATOR_TOKEN,
      clock,
      logger: pino({ level: "silent" }),
      checkReplies: false,
      // Domain proofs are read from the DNS server on 127.0.0.1, nothing else: no retry waits.
      proofSources: { resolveTxt: (name) => resolver.resolveTxt(name), sleep: async () => undefined, retry: { tries: 3, baseDelayMs: 1 } },
      // The scheduler's ticks drain the owner recomputes, as a server without the worker does.
      ownerRecomputeWorker: false,
      limits: { openChallenges: 20, agents: AGENTS_PER_OWNER },
    });
    await admin.query("VACUUM ANALYZE");
    const empty = await tableSizes(admin);
    const { service, scheduler } = server;
    const agents = await setUp(server, dns, n);
    await scheduler.tick();
    stage(
      `setup (${fmt(Math.ceil(n / AGENTS_PER_OWNER))} owners with a wallet proof, ${fmt(n)} claims, ${fmt(Math.ceil(n / DOMAIN_EVERY))} domain proofs)`,
    );

    // The tick after the setup computed START_DAY, at its 00:00, before any claim: the daily scores are of the days after it.
    const scoredDays: string[] = [];
    let counted = 0;
    // Milliseconds spent in each kind of work of the simulated days.
    const spent = { checkins: 0, daily: 0, penalties: 0, vacuum: 0 };
    const timed = async (kind: keyof typeof spent, work: () => Promise<void>) => {
      const t = performance.now();
      await work();
      spent[kind] += performance.now() - t;
    };
    for (let day = 0; day < d; day++) {
      const date = utcDay(dayStart(START_DAY) + day * DAY_S);
      const before = { counted, checkins: spent.checkins };
      for (let hour = 0; hour < 24; hour++) {
        for (let slot = 0; slot < SLOTS; slot++) {
          // Two minutes into the slot: after the setup's claims, and after the midnight tick.
          clock.set(dayStart(date) + hour * 3600 + (slot * 3600) / SLOTS + 120);
          const due = agents.filter((a, i) => i % SLOTS === slot && chance(i, date, hour) >= (a.flaky ? MISS_FLAKY : MISS_STEADY));
          await timed("checkins", () =>
            forEachConcurrently(due, IN_FLIGHT, async (agent) => {
              const outcome = await service.checkins.checkIn(agent.id, crypto.randomUUID(), agent.authenticate);
              if (outcome.type !== "counted") throw new Error(`check-in of ${agent.id} at ${clock.now()} was ${outcome.type}, not counted`);
              counted++;
            }),
          );
        }
        // An hour of the service's life is a second or two here. In a real hour every agent's row is updated
        // once (all of agents' rows dead: autovacuum takes it within a minute), and the dead versions of
        // agent_days are an hour old, so the next read of their page prunes them (heap-only updates,
        // migration 013). Here neither has time to happen, so each simulated hour gets a plain VACUUM of
        // both: it marks the dead versions as free space, it never shrinks a file.
        await timed("vacuum", async () => void (await admin.query("VACUUM agents, agent_days")));
        if (day === Math.floor(d / 2) && hour === 12) {
          await timed("penalties", async () => {
            for (let i = 0; i < n; i += PENALTY_EVERY) {
              await service.operator.addPenalty({
                agentId: agents[i].id,
                code: "rule_violation",
                points: 10 + (i % 41),
                days: 30,
                reason: "bench",
              });
            }
          });
        }
      }
      // Midnight: the scheduler's tick, the daily recompute of the new day (its window ends with `date`)
      // and its tree (V9), then the maintenance parts. The service ticks every minute; what its other
      // parts do here (owner recomputes, proof re-checks, expired challenges, retention) is due at most daily.
      const next = utcDay(dayStart(date) + DAY_S);
      clock.set(dayStart(next));
      const dailyBefore = spent.daily;
      await timed("daily", () => scheduler.tick());
      scoredDays.push(next);
      const rate = (counted - before.counted) / ((spent.checkins - before.checkins) / 1000);
      log(
        `day ${day + 1}/${d} (${date}): ${fmt(counted - before.counted)} check-ins counted at ${fmt(rate)} /s; ` +
          `midnight tick (daily recompute and tree of ${next}) ${fmt(spent.daily - dailyBefore)} ms`,
      );
    }
    stage(
      `days (${fmt(counted)} check-ins counted in ${fmt(spent.checkins / 1000, 1)} s, ${fmt(counted / (spent.checkins / 1000))} /s; ` +
        `midnight ticks ${fmt(spent.daily / 1000, 1)} s, penalties ${fmt(spent.penalties / 1000, 1)} s, ` +
        `hourly VACUUM of agents and agent_days ${fmt(spent.vacuum / 1000, 1)} s)`,
    );

    await admin.query("VACUUM ANALYZE");
    const sizes = await tableSizes(admin);
    const free = await heapFreeSpace(admin);
    const tables: TableSize[] = [...sizes].map(([name, s]) => {
      const grew = s.bytes > (empty.get(name)?.bytes ?? 0);
      const counted = grew && !FIXED_TABLES.has(name);
      const why = FIXED_TABLES.has(name) ? "fixed size" : grew ? "grows" : "did not grow";
      return { name, ...s, heapFree: free.get(name) ?? null, counted, why };
    });
    tables.sort((a, b) => Number(b.counted) - Number(a.counted) || b.bytes - a.bytes || a.name.localeCompare(b.name));
    const agentDays = n * d;
    const total = tables.filter((t) => t.counted).reduce((sum, t) => sum + t.bytes, 0);
    const bytesPerAgentDay = total / agentDays;
    stage("VACUUM ANALYZE and sizes");

    const io = memoryIo();
    const verifyCode = await runCli(["recompute", "--verify", "--database-url", dbUrl], io);
    const verdict = JSON.parse(io.out.trim().split("\n").pop() ?? "{}") as { checked?: number; mismatches?: number };
    const storedScores = Number((await admin.query<{ n: string }>("SELECT count(*) AS n FROM scores")).rows[0].n);
    const recomputeOk =
      verifyCode === 0 && verdict.mismatches === 0 && verdict.checked === storedScores && storedScores >= n * scoredDays.length;
    stage(
      `vrai recompute --verify (${fmt(verdict.checked ?? 0)} of ${fmt(storedScores)} stored scores, ` +
        `${fmt(verdict.mismatches ?? NaN)} mismatches, exit ${verifyCode})`,
    );
    if (!recomputeOk) log(io.out.split("\n").slice(0, 10).join("\n"));

    const anchors = createAnchorRepository(db);
    const proofCheck = await verifyProofs(server.url, agents, scoredDays, async (day) => {
      // The root the midnight tick stored, which must be the root of the day's daily scores built again here.
      const stored = (await anchors.getDay(day))?.root ?? null;
      const leaves = await admin.query<{
        agent_id: string;
        method: string;
        sha256: string;
        total: number;
        identity: number;
        reliability: number;
        integrity: number;
        established: boolean;
      }>(
        `SELECT agent_id, method, sha256, total, identity_points AS identity, reliability_points AS reliability, integrity_points AS integrity, established
         FROM scores WHERE trigger = 'daily' AND day = $1 ORDER BY id`,
        [day],
      );
      const rebuilt = buildScoreTree(leaves.rows.map((r) => scoreLeafV2({ ...r, agentId: r.agent_id, day, erc8004Subject: null }))).root;
      if (stored !== rebuilt) throw new Error(`day ${day}: stored root ${stored}, the day's daily scores make ${rebuilt}`);
      return stored;
    });
    const proofsOk = proofCheck.problems.length === 0 && proofCheck.proofs > 0;
    stage(
      `GET /v1/scores/{id}/proof (${fmt(proofCheck.proofs)} proofs of ${proofCheck.days} days checked against their day's root, ` +
        `${proofCheck.problems.length} problems)`,
    );
    for (const p of proofCheck.problems.slice(0, 10)) log(`  proof problem: ${p}`);

    const w = Math.max(...tables.map((t) => t.name.length), 5);
    log("");
    log(`storage after plain VACUUM ANALYZE (not FULL), pg_total_relation_size: heap + indexes + TOAST, all partitions`);
    log(
      `("heap free": free and dead heap space in those bytes, pgstattuple_approx: what a VACUUM FULL would give back of the heap, indexes not included)`,
    );
    log(
      `${"table".padEnd(w)}  ${"bytes".padStart(13)}  ${"heap free".padStart(13)}  ${"rows".padStart(11)}  ` +
        `${"parts".padStart(5)}  ${"B/agent-day".padStart(11)}  counted`,
    );
    for (const t of tables) {
      log(
        `${t.name.padEnd(w)}  ${fmt(t.bytes).padStart(13)}  ${(t.heapFree === null ? "n/a" : fmt(t.heapFree)).padStart(13)}  ` +
          `${fmt(t.rows).padStart(11)}  ${String(t.partitions).padStart(5)}  ${fmt(t.bytes / agentDays, 1).padStart(11)}  ` +
          `${t.counted ? "yes" : `no (${t.why})`}`,
      );
    }
    const totalFree = tables.filter((t) => t.counted).reduce((sum, t) => sum + (t.heapFree ?? 0), 0);
    log(
      `${"total counted".padEnd(w)}  ${fmt(total).padStart(13)}  ${fmt(totalFree).padStart(13)}  ` +
        `${"".padStart(11)}  ${"".padStart(5)}  ${fmt(bytesPerAgentDay, 1).padStart(11)}`,
    );
    log("");
    const atTarget = n === TARGET_AGENTS && d === TARGET_DAYS;
    const targetOk = !atTarget || bytesPerAgentDay <= TARGET_BYTES;
    if (atTarget)
      log(`target <= ${fmt(TARGET_BYTES)} bytes per agent-day at ${fmt(TARGET_AGENTS)} × ${TARGET_DAYS}: ${targetOk ? "PASS" : "FAIL"}`);
    log(
      `verification: recompute --verify ${recomputeOk ? "PASS" : "FAIL"}, proofs ${proofsOk ? "PASS" : "FAIL"}; ` +
        `total ${fmt((performance.now() - started) / 1000, 1)} s`,
    );
    const largest = tables
      .filter((t) => t.counted)
      .slice(0, 3)
      .map((t) => `${t.name} ${fmt(t.bytes / agentDays)}`)
      .join(", ");
    const retention = await checkinsKept(admin, tables);
    const summary =
      `storage: ${Math.round(bytesPerAgentDay)} bytes per agent-day ` +
      `(${n} agents × ${d} days, ${tables.filter((t) => t.counted).length} tables counted; largest ${largest}; ` +
      `heap free space ${fmt(totalFree / agentDays)} of it; ${retention}; ` +
      `verified ${verdict.checked ?? 0} scores and ${proofCheck.proofs} proofs${recomputeOk && proofsOk ? "" : ": VERIFICATION FAILED"})`;
    log(summary);
    return {
      agents: n,
      days: d,
      bytesPerAgentDay,
      tables,
      summary,
      verified: { scores: recomputeOk ? (verdict.checked ?? 0) : 0, proofs: proofCheck.proofs, days: proofCheck.days },
      ok: recomputeOk && proofsOk && targetOk,
    };
  } finally {
    await server?.close();
    await chain.close();
    await db.close();
    await dns.close();
    await admin.end().catch(() => undefined);
    if (keep) log(`kept database ${dbName} (${dbUrl})`);
    else await root.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await root.end();
  }
}

if (require.main === module) {
  runStorageBench(process.argv.slice(2))
    .then((result) => {
      process.exitCode = result.ok ? 0 : 1;
    })
    .catch((error: unknown) => {
      if (error instanceof InvalidInputError) {
        console.error(`bench:storage: ${error.message}`);
        process.exitCode = 2;
        return;
      }
      console.error(error);
      process.exitCode = 1;
    });
}
