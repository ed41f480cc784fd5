/**
 * A started server's request path run before it reports ready (issue #30). V8 first runs a function's bytecode and
 * optimises it only once it has run for a while, so a new process answers its first thousand-odd requests several
 * times slower than it will a second later: at 2,000 reads a second its first second's p99 was 0.5-1.2 s with a full
 * cache. And it optimises for what it has seen: code warmed on a few agents' scores was thrown away and compiled again
 * (on the machine's other core, beside the traffic) once reads of other agents came. So before `GET /v1/ready` says
 * 200, the server sends itself reads of the routes a balancer brings most, of agents from all over its cache, over
 * HTTP on a listener of its own on 127.0.0.1, made as the API's is (`listen`): node's parser and writer, the listener's
 * connection bookkeeping, Express, the route table, the cache and the JSON all run as they will for traffic, every so
 * often on a new connection, as a balancer opens them. The app it is sent to is built like the API's, with rate
 * limits, metrics and a log of its own (`startApiServer`), so none of those counts it; V8 keeps what it learnt per
 * function, so the API's app is as warm, provided the objects it met have the shapes the API's will: the warm-up app's
 * requests and responses are made with the API app's prototypes and constructors (`withPrototypesOf`, `listen`).
 */
import http from "node:http";
import { performance } from "node:perf_hooks";
import { listen, type PrototypedHandler, type ServerLimits } from "./listener";

/** What a warm-up did: its requests, how many answered 2xx, how many agents' scores it read, and how long it took. */
export type WarmUpRun = { requests: number; ok: number; agents: number; ms: number };

/** Requests a warm-up sends (`vrai serve`'s WARM_UP_REQUESTS): about 2 s at start; figures in the README's restart table. */
export const WARM_UP_REQUESTS = 3000;
/** Requests in flight at once, each on a kept-alive connection of its own. */
const WARM_UP_CONNECTIONS = 8;
/** Every this many requests of a connection, its last (`Connection: close`): the next opens a new one. */
const REQUESTS_PER_CONNECTION = 25;
/** The directory page it reads: its scores are read when no agents are given. */
const DIRECTORY_PAGE = 100;
/** Agents whose scores it reads, spread over the latest-score cache (`ScoreCache.sample`). */
export const WARM_UP_AGENTS = 1000;
/** A request not answered within this is given up (the next one goes on), so that no request can hold the warm-up. */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Serves `app` on 127.0.0.1 for as long as the warm-up takes and sends it `requests` GETs: the directory's first page,
 * then `GET /v1/method` and the scores of `agentIds` in turn, or without those the scores the page links to (only the
 * method's when no agent is scored yet). Stops sending once `signal` aborts (the server is closing).
 */
export async function warmUp(
  app: http.RequestListener,
  {
    limits,
    requests = WARM_UP_REQUESTS,
    agentIds = [],
    signal,
  }: { limits: ServerLimits; requests?: number; agentIds?: readonly string[]; signal?: AbortSignal },
): Promise<WarmUpRun> {
  const started = performance.now();
  const server = await listen(app, { host: "127.0.0.1", port: 0, limits });
  const agent = new http.Agent({ keepAlive: true, maxSockets: WARM_UP_CONNECTIONS });
  let ok = 0;
  const get = (path: string, last = false) =>
    new Promise<string>((resolve) => {
      const req = http.get(`${server.url}${path}`, { agent, headers: last ? { connection: "close" } : {} }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          if (res.statusCode !== undefined && res.statusCode < 300) ok++;
          resolve(Buffer.concat(chunks).toString("utf8"));
        });
        res.on("error", () => resolve(""));
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error("warm-up request timed out")));
      req.on("error", () => resolve(""));
    });
  try {
    const linked = scoreLinks(await get(`/v1/agents?limit=${DIRECTORY_PAGE}`));
    const scores = agentIds.length > 0 ? agentIds.map((id) => `/v1/agents/${encodeURIComponent(id)}/score`) : linked;
    const paths = ["/v1/method", ...scores];
    let sent = 1;
    const next = async (): Promise<void> => {
      for (let own = 1; sent < requests && !signal?.aborted; own++)
        await get(paths[sent++ % paths.length], own % REQUESTS_PER_CONNECTION === 0);
    };
    await Promise.all(Array.from({ length: WARM_UP_CONNECTIONS }, next));
    return { requests: sent, ok, agents: scores.length, ms: performance.now() - started };
  } finally {
    agent.destroy();
    await server.close();
  }
}

/**
 * `app` made to give its requests and responses `of`'s prototypes (Express reads `app.request` and `app.response` at each
 * request), so that they have the shapes V8 will meet in `of`'s: with prototypes of its own, each request's shape was
 * another, and what the warm-up had optimised was thrown away at the API's first requests ("wrong map"), compiled again
 * beside its traffic (issue #30). Only Express's own reading of its settings (`req.app`) goes to `of`, built alike.
 */
export function withPrototypesOf<T extends PrototypedHandler>(of: PrototypedHandler, app: T): T {
  app.request = of.request as T["request"];
  app.response = of.response as T["response"];
  return app;
}

/** The score links of a directory page (`links.score` of each agent); none from anything else. */
function scoreLinks(page: string): string[] {
  try {
    const { agents } = JSON.parse(page) as { agents?: Array<{ links?: { score?: unknown } }> };
    return (agents ?? []).map((a) => a.links?.score).filter((link): link is string => typeof link === "string");
  } catch {
    return [];
  }
}
