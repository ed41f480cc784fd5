/** The API's Prometheus metrics: requests, their duration, check-in results, the busy state, the API listener's connections and the latest-score cache. */
import client from "prom-client";

/** The API listener's connections: open, and of those waiting for their client (src/app/listener.ts `ConnectionCounts`). */
export type ConnectionFigures = { open: number; waiting: number };

/** The daily anchoring's lag (src/service/anchoring.ts `status`): days not anchored yet, and seconds since the oldest one's tree was built. */
export type AnchoringFigures = { unanchoredDays: number; oldestAgeS: number };

/** Figures of the latest-score cache (src/store/score-cache.ts `ScoreCacheStats`). */
export type ScoreCacheFigures = { entries: number; bytes: number; hits: number; misses: number };

export type ApiMetrics = {
  registry: client.Registry;
  requests: client.Counter<"method" | "route" | "status">;
  duration: client.Histogram<"method" | "route">;
  checkinResults: client.Counter<"result">;
};

/**
 * A registry with the process's default metrics and the API's own.
 * @param sources.busy whether the service asks agents for 7200 s heartbeats now (V3.3)
 * @param sources.connections the API listener's connections now, once it listens
 * @param sources.scoreCache the latest-score cache's figures, when there is a cache
 * @param sources.anchoring the daily anchoring's lag (read from the store at each scrape)
 */
export function createApiMetrics(sources: {
  busy: () => boolean;
  connections?: () => ConnectionFigures;
  scoreCache?: () => ScoreCacheFigures;
  anchoring?: () => Promise<AnchoringFigures>;
}): ApiMetrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({
    name: "vrai_http_requests_total",
    help: "HTTP requests by route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const duration = new client.Histogram({
    name: "vrai_http_request_duration_seconds",
    help: "HTTP request duration by route",
    labelNames: ["method", "route"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const checkinResults = new client.Counter({
    name: "vrai_checkins_total",
    help: "Check-in requests by result",
    labelNames: ["result"],
    registers: [registry],
  });
  new client.Gauge({
    name: "vrai_busy",
    help: "1 while the service asks agents for 7200 s heartbeats (V3.3)",
    registers: [registry],
    collect() {
      this.set(sources.busy() ? 1 : 0);
    },
  });
  const { connections } = sources;
  if (connections) {
    new client.Gauge({
      name: "vrai_http_connections",
      help: "Connections the API's listener holds: open, and waiting for their client (idle, a request not all arrived, an answer not read)",
      labelNames: ["state"],
      registers: [registry],
      collect() {
        const now = connections();
        this.set({ state: "open" }, now.open);
        this.set({ state: "waiting" }, now.waiting);
      },
    });
  }
  if (sources.scoreCache) registerScoreCacheMetrics(registry, sources.scoreCache);
  if (sources.anchoring) registerAnchoringMetrics(registry, sources.anchoring);
  return { registry, requests, duration, checkinResults };
}

/**
 * The anchoring's lag as two gauges, from one read of the store per scrape (both gauges are collected together). A read
 * that fails (the database away) leaves the figures of the scrape before.
 */
function registerAnchoringMetrics(registry: client.Registry, read: () => Promise<AnchoringFigures>): void {
  let reading: Promise<AnchoringFigures | null> | null = null;
  const figures = () =>
    (reading ??= read()
      .catch(() => null)
      .finally(() => {
        reading = null;
      }));
  const gauges: Array<{ name: string; help: string; of: (f: AnchoringFigures) => number }> = [
    {
      name: "vrai_anchor_unanchored_days",
      help: "Days whose scores' tree is stored and whose root is not anchored on chain yet (0 when the anchoring is not behind)",
      of: (f) => f.unanchoredDays,
    },
    {
      name: "vrai_anchor_oldest_unanchored_age_seconds",
      help: "Seconds since the tree of the oldest day not anchored yet was built (0 when every day is anchored)",
      of: (f) => f.oldestAgeS,
    },
  ];
  for (const { name, help, of } of gauges) {
    new client.Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const now = await figures();
        if (now) this.set(of(now));
      },
    });
  }
}

/** The latest-score cache's size, and its hits and misses as counters (read from the cache's own counts). */
function registerScoreCacheMetrics(registry: client.Registry, stats: () => ScoreCacheFigures): void {
  new client.Gauge({
    name: "vrai_score_cache_entries",
    help: "Agents whose latest score is cached",
    registers: [registry],
    collect() {
      this.set(stats().entries);
    },
  });
  new client.Gauge({
    name: "vrai_score_cache_bytes",
    help: "Memory charged to the latest-score cache",
    registers: [registry],
    collect() {
      this.set(stats().bytes);
    },
  });
  const counted = { hits: 0, misses: 0 };
  const kinds: Array<"hits" | "misses"> = ["hits", "misses"];
  for (const kind of kinds) {
    new client.Counter({
      name: `vrai_score_cache_${kind}_total`,
      help: `Latest-score reads answered ${kind === "hits" ? "from" : "without"} the cache`,
      registers: [registry],
      collect() {
        const now = stats()[kind];
        this.inc(now - counted[kind]);
        counted[kind] = now;
      },
    });
  }
}
