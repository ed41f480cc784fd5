/**
 * A server's latest-score cache as a read-through layer over the store's `LatestScores`: a read the
 * cache cannot answer goes to the store and its answer is kept. It is kept fresh by what this
 * process's store commits (`committed`, which `createSqlStore`'s `onScoresCommitted` tells) and, on
 * PostgreSQL, by the `NOTIFY vrai_scores` of every process's writes (migration 005); and filled at
 * start from the store a page at a time. The SQL code knows nothing of it.
 */
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { LatestScores, ScoreSummary } from "../service/ports";
import type { Db } from "./db";
import { createScoreCache, type ScoreCache, type ScoreCacheStats } from "./score-cache";
import type { LatestScorePages } from "./sql-store";

/** The latest-score cache of a running server: its figures, the first fill from the database, and a sample of its agents (`ScoreCache.sample`). */
export type ServerScoreCache = { stats(): ScoreCacheStats; warmed: Promise<void>; sample(n: number): string[] };

export type SyncedScoreCache = {
  /** The latest scores of `store`, through the cache. */
  over(store: LatestScores & LatestScorePages): LatestScores;
  /** Told the agents whose scores this process committed: their entries go, the next read takes the new ones. */
  committed(agentIds: readonly string[]): void;
  server: ServerScoreCache;
  /** Starts listening for other processes' writes and filling the cache (once the server can answer). */
  start(): void;
  stop(): Promise<void>;
};

/** Channel of migration 005's notifications: agents whose scores changed, or "*". */
const SCORES_CHANNEL = "vrai_scores";
/** Quiet time after another process changed many agents' scores before the cache fills again. */
const REWARM_AFTER_MS = 1000;
/** Agents' latest scores per read when filling the cache. */
const WARM_BATCH = 1000;
/** The same while scores are being asked for: a page is decoded in one go, and a short one holds requests up less. */
const WARM_BATCH_WHILE_ASKED = 100;
/** Scores kept between two turns of the event loop while the cache fills, so that requests are served meanwhile. */
const WARM_SLICE = 200;
/**
 * While scores are being asked for, the fill takes at most this share of the process's time: after each page it waits
 * (1 / share - 1) times as long as the page took to read, decode and keep. Filling a million agents keeps the process
 * busy for about 18 s, its garbage collections included; at full speed beside 2,000 reads a second it starved them
 * (answers a second or more late while it ran, issue #30).
 */
const WARM_MAX_SHARE = 0.25;
/**
 * ...and at most this share of the time the event loop had to spare meanwhile (`warmPauseMs`). A restarted server
 * answering 2,000 reads a second, its code not yet optimised and nearly every read a miss, has no time to spare: at a
 * fixed 25 % the p99 of its first second was 0.66 s at a million agents, against 0.14-0.29 s with no fill at all, and
 * the seconds after it were as much slower (issue #30).
 */
const WARM_SPARE_SHARE = 0.25;
/** ...and never less than this share, so that a server busy for good still fills its cache, slowly. */
const WARM_MIN_SHARE = 0.02;

/**
 * How long the fill waits after a page that took `pageMs` to read, decode and keep, while scores are being asked for:
 * so that it takes the share of the process's time given by `busy`, the share of the time the event loop was busy
 * with other work while the fill waited last (0 to 1): WARM_SPARE_SHARE of the time to spare, between WARM_MIN_SHARE
 * and WARM_MAX_SHARE.
 */
export function warmPauseMs(pageMs: number, busy: number): number {
  const spare = 1 - Math.min(1, Math.max(0, busy));
  const share = Math.min(WARM_MAX_SHARE, Math.max(WARM_MIN_SHARE, spare * WARM_SPARE_SHARE));
  return pageMs * (1 / share - 1);
}

/**
 * The share of time the event loop was busy (`performance.eventLoopUtilization`) between `start()` and `busy()`: what
 * else the process had to do while the fill waited.
 */
export type LoopLoad = { start(): void; busy(): number };

export function eventLoopLoad(): LoopLoad {
  let from = performance.eventLoopUtilization();
  return {
    start: () => {
      from = performance.eventLoopUtilization();
    },
    busy: () => performance.eventLoopUtilization(performance.eventLoopUtilization(), from).utilization,
  };
}

/** Scores count as being asked for while the last read through the cache is this recent. */
const ASKED_WITHIN_MS = 100;

/**
 * Waits at least `ms` by `performance.now()`. A timer alone may end early by that clock: it counts on libuv's loop time,
 * read from a coarse clock (4 ms steps on this machine) in whole milliseconds; it ended 11 ms early once under a CPU hog.
 */
async function pauseFor(ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) await new Promise((resolve) => setTimeout(resolve, left));
}

/**
 * Fills `cache` with the latest score of every agent that has one, in agent order, a page per read,
 * until every agent is in or the cache is full: once it has had to drop entries to make room,
 * reading more would only push out what was read, so it stops (the rest is read on demand). While
 * `asked()` says scores are being read, it gives way to them: a page at a time, with a pause after
 * each (`warmPauseMs`, from what else the event loop did while the fill last waited, by `load`); otherwise the next
 * page is asked for while this one is kept.
 * @returns how many agents' scores were offered
 */
export async function warmScoreCache(
  pages: LatestScorePages,
  cache: ScoreCache,
  asked: () => boolean = () => false,
  load: LoopLoad = eventLoopLoad(),
): Promise<number> {
  const { evictions } = cache.stats();
  // `began`: when the page is asked for, before the store is called: the call's own synchronous part (the driver's, or a
  // collection meanwhile) is the page's time too. Measured from after it, a pause came out 39 ms short of its test once.
  type Batch = { mark: number; size: number; page: Promise<ScoreSummary[]>; began: number };
  const batch = (after: string): Batch => {
    const began = performance.now();
    const mark = cache.mark();
    const size = asked() ? WARM_BATCH_WHILE_ASKED : WARM_BATCH;
    const page = pages.latestScoresAfter(after, size);
    // Awaited in turn below; this keeps a failure meanwhile from going unhandled.
    page.catch(() => undefined);
    return { mark, size, page, began };
  };
  let offered = 0;
  // Until the fill has waited once, the loop counts as busy: a server started under load has nothing to spare.
  let busy = 1;
  for (let next: Batch | null = batch(""); next !== null; ) {
    const { mark, size, began }: Batch = next;
    const page: ScoreSummary[] = await next.page;
    const after: string | null = page.length === size ? page[page.length - 1].agentId : null;
    next = after !== null && !asked() ? batch(after) : null;
    for (let i = 0; i < page.length; i++) {
      if (i > 0 && i % WARM_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
      cache.offerRead(page[i].agentId, page[i], mark);
    }
    offered += page.length;
    const stats = cache.stats();
    if (stats.entries === 0 || stats.evictions > evictions) return offered;
    if (after !== null && next === null) {
      if (asked()) {
        const pageMs = performance.now() - began;
        load.start();
        await pauseFor(warmPauseMs(pageMs, busy));
        busy = load.busy();
      }
      next = batch(after);
    }
  }
  return offered;
}

/**
 * The latest-score cache of one server over `db`. On PostgreSQL other processes may write scores:
 * the cache is used only while this process listens for their notifications, and refilled after
 * a lost connection (whatever was missed meanwhile was dropped with everything else).
 * PGlite belongs to this process alone, so its cache is always on.
 */
export function createSyncedScoreCache(db: Db, maxBytes: number, logger: Logger): SyncedScoreCache {
  const cache = createScoreCache({ maxBytes, enabled: db.listen === undefined });
  let store: (LatestScores & LatestScorePages) | undefined;
  let firstWarm: () => void = () => undefined;
  const warmed = new Promise<void>((resolve) => (firstWarm = resolve));
  let warming = false;
  let warmAgain = false;
  let rewarm: NodeJS.Timeout | undefined;
  /** Fills the cache from the table; asked again while filling, it fills once more afterwards. */
  const warm = () => {
    if (store === undefined) return firstWarm();
    if (warming) {
      warmAgain = true;
      return;
    }
    warming = true;
    // A server's first fill runs at full speed: a balancer sends it no traffic until it is ready, which waits for this
    // fill (`GET /v1/ready`, src/app/server.ts); a read that comes all the same makes it give way from the next page.
    warmScoreCache(store, cache, asked)
      .then(
        (agents) => logger.info({ agents, ...cache.stats() }, "score cache filled"),
        (error: unknown) => logger.warn({ err: error }, "score cache not filled; scores are read from the database until they are cached"),
      )
      .finally(() => {
        warming = false;
        firstWarm();
        if (warmAgain) {
          warmAgain = false;
          warm();
        }
      });
  };
  let listener: { close(): Promise<void> } | undefined;
  /** When a score was last read through the cache (performance.now()). */
  let lastAsked = Number.NEGATIVE_INFINITY;
  const asked = () => performance.now() - lastAsked < ASKED_WITHIN_MS;
  return {
    over(given) {
      store = given;
      return {
        latestScoreSummary(agentId) {
          lastAsked = performance.now();
          const cached = cache.get(agentId);
          if (cached !== undefined) return Promise.resolve({ agentExists: true, score: cached });
          const mark = cache.mark();
          return given.latestScoreSummary(agentId).then((answer) => {
            // Agents that do not exist are not cached: creating one commits no score that would drop the entry.
            if (answer.agentExists) cache.offerRead(agentId, answer.score, mark);
            return answer;
          });
        },
      };
    },
    committed: (agentIds) => cache.invalidate(agentIds),
    server: { stats: () => cache.stats(), warmed, sample: (n) => cache.sample(n) },
    start() {
      listener = db.listen?.(SCORES_CHANNEL, {
        notify(payload, fromThisDb) {
          // This process's own writes were told through `committed` as they committed.
          if (fromThisDb) return;
          if (payload !== "*") return cache.invalidate(payload.split(","));
          // Many agents at once (another instance's daily recompute): everything goes, and the cache fills again once
          // such notifications have stopped for a while.
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
