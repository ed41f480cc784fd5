/**
 * The daily recompute's pages scored on a worker thread (`PageScorer`, issue #30): the calling thread reads a page's
 * rows, sends them, and writes the batch that comes back, while the worker computes the next page. The worker's young
 * generation is sized for that work: a page's inputs documents and canonical texts are garbage within the page, and
 * with V8's default 16 MiB semi-space the collector copied them over and over (a third of a thread's time at a
 * million agents). The API's thread keeps node's defaults.
 */
import fs from "node:fs";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { BaseError } from "../errors";
import type { MethodVersion } from "../method";
import type { AgentFactRows, ScoreBatch } from "../service/ports";
import type { PageScorer } from "../service/score-rows";
import { factRowsMessage, scoreBatchFromMessage, type FactRowsMessage, type ScoreBatchMessage } from "../store/scores";

/** A page sent to the worker. */
export type ScoreJob = { id: number; at: number; method: MethodVersion; rows: FactRowsMessage };
/** The worker's answer to job `id`: the page's batch, or the error scoring it threw. */
export type ScoreJobAnswer =
  | { id: number; scores: ScoreBatchMessage }
  | { id: number; error: { code: string; message: string; status: number } };

/** Pages shorter than this are scored on the calling thread (a rerun's last few agents, tests). */
const MIN_ROWS = 200;
/**
 * The worker's young generation (V8 keeps it in two semi-spaces and a large-object space of a third each): 64 MiB
 * semi-spaces, against the default 16. Measured at a million agents (scripts/bench/service.ts), the recompute took
 * 154 s at the default and 111 s at 64 MiB on the calling thread.
 */
const YOUNG_GENERATION_MB = 3 * 64;

/**
 * The worker's script: dist/score-worker.cjs beside the bundled `vrai` (scripts/build.ts), or this directory's
 * TypeScript under tsx (tests, benches), which the worker loads through tsx's require hook. `dir`: the directory this
 * code runs from (dist/ once bundled).
 */
export function workerScript(dir = __dirname): { file: string; execArgv: string[] } {
  const built = path.join(dir, "score-worker.cjs");
  if (fs.existsSync(built)) return { file: built, execArgv: [] };
  return { file: path.join(dir, "score-worker.ts"), execArgv: ["--require", require.resolve("tsx/cjs")] };
}

/**
 * A page scorer on one worker thread, started at its first page; `close` ends it. A page whose scoring throws
 * fails with that error (its code kept); a worker that dies fails the pages it held, and the next page starts another.
 * @example createScoring({ store, clock, pageScorers: () => createScoreWorkers("0.2") })
 */
export function createScoreWorkers(method: MethodVersion, options: { minRows?: number } = {}): PageScorer {
  let worker: Worker | null = null;
  let nextId = 0;
  const waiting = new Map<number, { resolve(batch: ScoreBatch): void; reject(error: unknown): void }>();

  const failAll = (error: unknown) => {
    for (const w of waiting.values()) w.reject(error);
    waiting.clear();
  };
  const start = (): Worker => {
    const { file, execArgv } = workerScript();
    const w = new Worker(file, { execArgv, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
    w.on("message", (answer: ScoreJobAnswer) => {
      const job = waiting.get(answer.id);
      if (!job) return;
      waiting.delete(answer.id);
      if ("error" in answer) job.reject(new BaseError(answer.error.code, answer.error.message, { status: answer.error.status }));
      else job.resolve(scoreBatchFromMessage(answer.scores));
    });
    const lost = (error: unknown) => {
      if (worker === w) worker = null;
      failAll(error);
    };
    w.on("error", lost);
    w.on("exit", (code) => lost(new BaseError("score_worker_exited", `the score worker exited (code ${code}) with pages unscored`)));
    return w;
  };

  return {
    minRows: options.minRows ?? MIN_ROWS,
    score(rows: readonly AgentFactRows[], at: number) {
      worker ??= start();
      const id = nextId++;
      const job: ScoreJob = { id, at, method, rows: factRowsMessage(rows) };
      const answer = new Promise<ScoreBatch>((resolve, reject) => waiting.set(id, { resolve, reject }));
      worker.postMessage(job);
      return answer;
    },
    async close() {
      const ending = worker;
      worker = null;
      await ending?.terminate();
    },
  };
}
