/**
 * `npm run bench:method`: single-threaded throughput of the method engine, each figure printed
 * beside its target from the issue. Inputs are generated in memory before timing; each benchmark
 * runs a few times and reports its best run. It measures what the `vrai` command runs: the
 * sources compiled into one file by esbuild, as `npm run build` compiles them (`npm run
 * bench:method` compiles this file so, then runs it), under node's default flags.
 */
import { performance } from "node:perf_hooks";
import {
  buildScoreInputs,
  canonicalScoreInputs,
  deriveScores,
  scoreFromInputs,
  sha256Hex,
  validateRecords,
  nextDayDigest,
  utcDay,
  parseRfc3339,
  type DayAggregate,
  type ProofRecord,
  type ScoreFacts,
} from "../../src/method";
import { parseReplayInput, replay, type ReplayEvent } from "../../src/cli/commands/replay";

type Benchmark = { name: string; unit: string; target: number; items: number; prepare(): () => void };

/** Deterministic generator (no Math.random: runs are comparable). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function bestOf(runs: number, items: number, work: () => void): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    work();
    best = Math.min(best, performance.now() - t0);
  }
  return (items / best) * 1000;
}

const RECORDS = 1_000_000;
const EXECUTORS = 20_000;

/** F1 derive over 1,000,000 parsed records: 20,000 executors, 1 in 10 self-reported-only, ~3 % duplicate txHashes. */
const derive: Benchmark = {
  name: "derive (validate + select + order + dedup + A3)",
  unit: "records/s",
  target: 1_000_000,
  items: RECORDS,
  prepare() {
    const rand = lcg(1);
    const levels = ["low", "medium", "high", "critical"] as const;
    const records: ProofRecord[] = [];
    for (let i = 0; i < RECORDS; i++) {
      const e = i % EXECUTORS;
      const selfOnly = e % 10 === 0;
      const dup = rand() < 0.03 && i > EXECUTORS;
      const n = dup ? i - EXECUTORS : i;
      records.push({
        txHash: `0x${n.toString(16).padStart(64, "0")}`,
        executor: `did:erc8004:8453:0x00000000000000000000000000000000000000aa:${e}`,
        success: rand() < 0.8,
        riskLevel: levels[Math.floor(rand() * 4)],
        policyViolations: rand() < 0.05 ? 1 : 0,
        verified: !selfOnly && rand() < 0.7,
        traceRoot: "0x5f3a9c0e7b1d4a2c8e6f0b9d3c7a1e5f2b8d4c6a0e9f7b3d1c5a8e2f4b6d0c9a",
        source: selfOnly ? "self-reported" : "onchain",
        ...(selfOnly ? {} : { blockNumber: 1_000_000 + Math.floor(n / 50), logIndex: n % 50 }),
      });
    }
    const input = { records };
    return () => void deriveScores(validateRecords(input));
  },
};

const AGENTS = 100_000;
const AT = parseRfc3339("2026-12-01T00:00:00Z");

/** Facts of an agent checking in every hour for 30 days, with proofs and a penalty. */
function hourlyFacts(i: number): ScoreFacts {
  const days: DayAggregate[] = [];
  for (let d = 31; d >= 1; d--) {
    const start = AT - d * 86_400;
    let digest: string | null = null;
    for (let h = 0; h < 24; h++) {
      const arrival = start + h * 3600 + (i % 600);
      digest = nextDayDigest(digest, { arrival, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 3600 });
    }
    days.push({ day: utcDay(start), checkins: 24, onTime: 24, creditS: 86_400, coverageS: 86_400, digest: digest as string });
  }
  return {
    agent: `agent-${i}`,
    method: "0.2",
    at: AT,
    claimedAt: AT - 40 * 86_400,
    proofs: [{ kind: "github" }, { kind: "erc8004" }],
    penalties: i % 10 === 0 ? [{ id: `x${i}`, code: "rate_abuse", points: 20, days: 30, addedAt: AT - 86_400, revokedAt: null }] : [],
    days,
  };
}

let sampleFacts: ScoreFacts[] | null = null;
function agentFacts(): ScoreFacts[] {
  // Day aggregates repeat across agents (only the digests would differ): 1,000 distinct agents reused.
  sampleFacts ??= Array.from({ length: 1000 }, (_, i) => hourlyFacts(i));
  return sampleFacts;
}

/** V9: build, canonicalise (RFC 8785) and hash the inputs of 100,000 hourly agents. */
const inputs: Benchmark = {
  name: "score inputs (build + RFC 8785 + SHA-256)",
  unit: "documents/s",
  target: 10_000,
  items: AGENTS,
  prepare() {
    const facts = agentFacts();
    return () => {
      for (let i = 0; i < AGENTS; i++)
        sha256Hex(canonicalScoreInputs(buildScoreInputs({ ...facts[i % facts.length], agent: `agent-${i}` })));
    };
  },
};

/** The same plus computing the result (what the daily recompute does per agent). */
const fullScore: Benchmark = {
  name: "full score (build + canonicalise + hash + compute)",
  unit: "scores/s",
  target: 10_000,
  items: AGENTS,
  prepare() {
    const facts = agentFacts();
    return () => {
      for (let i = 0; i < AGENTS; i++) scoreFromInputs(buildScoreInputs({ ...facts[i % facts.length], agent: `agent-${i}` }));
    };
  },
};

/** These run in this order, each timed best of 3; the replay benchmark (replayBenchmark) follows them. */
const BENCHMARKS: Benchmark[] = [derive, inputs, fullScore];

function report(name: string, rate: number, unit: string, target: number): void {
  const verdict = rate >= target ? "ok" : "BELOW TARGET";
  console.log(
    `${name.padEnd(52)} ${Math.round(rate).toLocaleString("en-US").padStart(12)} ${unit.padEnd(12)} ` +
      `target ${target.toLocaleString("en-US").padStart(10)}  ${verdict}`,
  );
}

const REPLAY_AGENTS = 1_000;
const REPLAY_HOURS = 30 * 24;
/**
 * Replays timed, the best reported and every one printed. A replay takes 2-3 s, and on this machine
 * the same replay runs at anything from about 210,000 to 430,000 check-ins/s from one run to the
 * next, in one process too (the host's other load); the fastest run is the one it disturbed least.
 */
const REPLAY_RUNS = 5;

/**
 * F2 replay of 1,000 agents x 30 days of hourly check-ins (720,000 check-ins) through the service's
 * own code (claims, check-ins awaited one at a time, day aggregates) on the memory store, one score
 * per agent at the end.
 * The rate counts check-ins. A run validates the parsed JSON (`parseReplayInput`, as derive's line
 * validates its records) and plays it, producing every output line in the chunks the command writes;
 * reading the file and `JSON.parse` are not in it (one more run, printed below the line, has JSON.parse).
 */
async function replayBenchmark(): Promise<void> {
  // The file `vrai replay` would read, and what JSON.parse makes of it: the only copy of the timeline kept.
  const text = replayTimelineText();
  const json: unknown = JSON.parse(text);
  const validate: number[] = [];
  const play: number[] = [];
  for (let run = 0; run < REPLAY_RUNS; run++) {
    const started = performance.now();
    const input = parseReplayInput(json);
    const validated = performance.now();
    let bytes = 0;
    // What `vrai replay` does after JSON.parse, short of the write: the chunks of UTF-8 stdout would get.
    await replay(input, (chunk) => {
      bytes += chunk.length;
    });
    validate.push(validated - started);
    play.push(performance.now() - validated);
    if (input.events.length !== REPLAY_AGENTS * (REPLAY_HOURS + 2) || bytes === 0)
      throw new Error("the replay timeline did not parse or play whole");
  }
  // Once more from the text, JSON.parse included: the whole command short of reading the file and writing stdout.
  const started = performance.now();
  await replay(parseReplayInput(JSON.parse(text)), () => undefined);
  const fromText = performance.now() - started;

  const rate = (ms: number) => ((REPLAY_AGENTS * REPLAY_HOURS) / ms) * 1000;
  const rates = (ms: number[]) => ms.map(rate).sort((x, y) => y - x);
  const list = (r: number[]) => r.map((x) => Math.round(x).toLocaleString("en-US")).join(", ");
  const whole = rates(validate.map((ms, run) => ms + play[run]));
  // The floor since check-ins run the service's plain async code on the memory store too (issue 13).
  report("replay (validate + play: 1,000 agents x 30 days hourly)", whole[0], "check-ins/s", 150_000);
  console.log(`  validate + play, each run, fastest first: ${list(whole)} check-ins/s`);
  console.log(`  play alone, each run, fastest first:      ${list(rates(play))} check-ins/s`);
  console.log(
    `  from the JSON text (${(text.length / 2 ** 20).toFixed(0)} MiB, JSON.parse included), one run: ` +
      `${Math.round(rate(fromText)).toLocaleString("en-US")} check-ins/s`,
  );
}

/** The F2 input of 1,000 agents checking in hourly for 30 days, scored at the end, as JSON text. */
function replayTimelineText(): string {
  const t0 = Date.UTC(2026, 9, 1) / 1000;
  const events: ReplayEvent[] = [];
  for (let a = 0; a < REPLAY_AGENTS; a++) events.push({ at: t0, type: "claim", agent: `a${a}`, owner: `o${a % 100}` });
  // Agent a checks in at second a % 60 of minute 1 of each hour; in time order, as F2 requires.
  for (let h = 0; h < REPLAY_HOURS; h++) {
    for (let second = 0; second < 60; second++) {
      for (let a = second; a < REPLAY_AGENTS; a += 60)
        events.push({ at: t0 + 60 + h * 3600 + second, type: "checkin", agent: `a${a}`, key: `k${h}` });
    }
  }
  const end = t0 + REPLAY_HOURS * 3600 + 3600;
  for (let a = 0; a < REPLAY_AGENTS; a++) events.push({ at: end, type: "score", agent: `a${a}` });
  return JSON.stringify({ method: "0.2", events });
}

async function main(): Promise<void> {
  console.log(`method benchmarks, one thread, node ${process.version} (as vrai runs: compiled by esbuild, node's default flags)`);
  for (const b of BENCHMARKS) report(b.name, bestOf(3, b.items, b.prepare()), b.unit, b.target);
  await replayBenchmark();
}

void main();
