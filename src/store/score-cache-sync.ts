/** Keeps a server's latest-score cache in step with the database it caches. */
import type { Logger } from "pino";
import type { Db } from "./db";
import { createScoreCache, type ScoreCache, type ScoreCacheStats } from "./score-cache";
import { warmScoreCache } from "./sql-store";

/** The latest-score cache of a running server: its figures, and the first fill from the database. */
export type ServerScoreCache = { stats(): ScoreCacheStats; warmed: Promise<void> };

export type SyncedScoreCache = {
  cache: ScoreCache;
  server: ServerScoreCache;
  /** Starts listening for other processes' writes and filling the cache (once the server can answer). */
  start(): void;
  stop(): Promise<void>;
};

/** Channel of migration 005's notifications: agents whose scores changed, or "*". */
const SCORES_CHANNEL = "vrai_scores";
/** Quiet time after another process changed many agents' scores before the cache fills again. */
const REWARM_AFTER_MS = 1000;

/**
 * The latest-score cache of one server over `db`. On PostgreSQL other processes may write scores:
 * the cache is used only while this process listens for their notifications, and refilled after
 * a lost connection (whatever was missed meanwhile was dropped with everything else).
 * PGlite belongs to this process alone, so its cache is always on.
 */
export function createSyncedScoreCache(db: Db, maxBytes: number, logger: Logger): SyncedScoreCache {
  const cache = createScoreCache({ maxBytes, enabled: db.listen === undefined });
  let firstWarm: () => void = () => undefined;
  const warmed = new Promise<void>((resolve) => (firstWarm = resolve));
  let warming = false;
  let warmAgain = false;
  let rewarm: NodeJS.Timeout | undefined;
  /** Fills the cache from the table; asked again while filling, it fills once more afterwards. */
  const warm = () => {
    if (warming) return void (warmAgain = true);
    warming = true;
    warmScoreCache(db, cache).then(
      (agents) => logger.info({ agents, ...cache.stats() }, "score cache filled"),
      (error: unknown) => logger.warn({ err: error }, "score cache not filled; scores are read from the database until they are cached"),
    ).finally(() => {
      warming = false;
      firstWarm();
      if (warmAgain) {
        warmAgain = false;
        warm();
      }
    });
  };
  let listener: { close(): Promise<void> } | undefined;
  return {
    cache,
    server: { stats: () => cache.stats(), warmed },
    start() {
      listener = db.listen?.(SCORES_CHANNEL, {
        notify(payload, fromThisDb) {
          // This process's own writes reached the cache as they committed.
          if (fromThisDb) return;
          if (payload !== "*") return cache.invalidate(payload.split(","));
          // Many agents at once (another instance's daily recompute): everything goes, and the cache
          // fills again once such notifications have stopped for a while.
          cache.invalidate("all");
          clearTimeout(rewarm);
          rewarm = setTimeout(warm, REWARM_AFTER_MS).unref();
        },
        listening(on) {
          cache.setEnabled(on);
          if (on) warm();
          else logger.warn("score change notifications lost; the score cache is off until they are heard again");
        },
      });
      if (!listener) warm();
    },
    async stop() {
      clearTimeout(rewarm);
      await listener?.close();
    },
  };
}
