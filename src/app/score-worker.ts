/**
 * The worker thread of src/app/score-workers.ts: scores the daily recompute's pages (V9) as the calling thread
 * would (`addDailyScores` into a SQL store's batch) and sends the batch back. Pure computation: no store, no clock.
 */
import { parentPort } from "node:worker_threads";
import { BaseError } from "../errors";
import { addDailyScores } from "../service/score-rows";
import { createSqlScoreBatch, factRowsFromMessage, scoreBatchMessage } from "../store/scores";
import type { ScoreJob, ScoreJobAnswer } from "./score-workers";

parentPort?.on("message", (job: ScoreJob) => {
  let answer: ScoreJobAnswer;
  try {
    const batch = createSqlScoreBatch();
    addDailyScores(factRowsFromMessage(job.rows), job.at, job.method, batch);
    answer = { id: job.id, scores: scoreBatchMessage(batch) };
  } catch (error) {
    const e = error instanceof BaseError ? error : new BaseError("score_worker_failed", String((error as Error)?.message ?? error));
    answer = { id: job.id, error: { code: e.code, message: e.message, status: e.status } };
  }
  parentPort?.postMessage(answer);
});
