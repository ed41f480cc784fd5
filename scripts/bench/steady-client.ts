/**
 * The client of `bench:service`'s restart phase and its floors (issue #30), in a process of its own that loads nothing
 * but node:http: GET requests at a steady rate from the moment it is told to start, each on one of at most 100
 * keep-alive connections. Run inside the bench's own process, whose heap holds the whole app's modules, the client's
 * major collections took 5-9 ms, twice in a row at times, and its event loop stood still 10-15 ms: the slow seconds of
 * the restart runs were those pauses of the client, while the server collected nothing over 3 ms (measured). This
 * process's heap is a few megabytes. It still records its own pauses (`stalls`), printed beside the figures.
 *
 * Protocol (IPC): the parent forks it, sends `{ paths, rate }` (the requests in order) and waits for `"loaded"`, which the
 * client sends once it has warmed its own code (`warmUp`); then sends `{ url, rate }` and receives the `SteadyResult`,
 * after which this process exits.
 */
import http from "node:http";
import { type PerformanceEntry, PerformanceObserver, performance } from "node:perf_hooks";

/** What one run measured; times in ms from its first request. */
export type SteadyResult = {
  ok: number;
  other: number;
  errors: number;
  errorCodes: Array<[string, number]>;
  latencies: number[];
  sentAt: number[];
  /** The client's own pauses: collections over STALL_GC_MS and event-loop waits over STALL_LOOP_MS, with when. */
  stalls: string[];
};

/** A collection of the client's own longer than this is listed in `stalls`. */
const STALL_GC_MS = 3;
/** A wait of the client's schedule (it wakes every 1 ms) longer than this is listed in `stalls`. */
const STALL_LOOP_MS = 8;
/** Connections at most: as many as the steady schedule needs; a request finding them all busy waits for one. */
const MAX_SOCKETS = 100;
/** A request not answered within this is given up and counted as an error. */
const REQUEST_TIMEOUT_MS = 10_000;

/** Sends `paths` to `url` in order, `rate` a second (one every 1000 / rate ms, caught up each millisecond). */
async function run(url: string, rate: number, paths: readonly string[]): Promise<SteadyResult> {
  const out: SteadyResult = { ok: 0, other: 0, errors: 0, errorCodes: [], latencies: [], sentAt: [], stalls: [] };
  const codes = new Map<string, number>();
  // With a timeout of its own, node's agent also honours the server's `Keep-Alive: timeout=5` and drops a connection left
  // idle 1 s before the server would close it; without one it keeps it for good and may send a request on a connection
  // the server is closing that moment: ECONNRESET, 5 of 40,000 requests in one restart run.
  const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, timeout: 60_000 });
  const t0 = performance.now();
  const at = (t: number) => `${((t - t0) / 1000).toFixed(2)} s`;
  const collections = new PerformanceObserver((list) => {
    for (const entry of list.getEntries() as PerformanceEntry[])
      if (entry.duration > STALL_GC_MS) out.stalls.push(`${at(entry.startTime)} collection ${entry.duration.toFixed(1)} ms`);
  });
  collections.observe({ entryTypes: ["gc"] });
  const send = (path: string) =>
    new Promise<void>((resolve) => {
      const sentAt = performance.now();
      const req = http.get(`${url}${path}`, { agent }, (res) => {
        res.resume();
        res.on("end", () => {
          if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) out.ok++;
          else out.other++;
          out.latencies.push(performance.now() - sentAt);
          out.sentAt.push(sentAt - t0);
          resolve();
        });
      });
      req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error("timeout")));
      req.on("error", (error: NodeJS.ErrnoException) => {
        out.errors++;
        const code = error.code ?? error.message;
        codes.set(code, (codes.get(code) ?? 0) + 1);
        resolve();
      });
    });
  const answered: Promise<void>[] = [];
  let woke = t0;
  for (let sent = 0; sent < paths.length; ) {
    const now = performance.now();
    if (now - woke > STALL_LOOP_MS) out.stalls.push(`${at(woke)} event loop ${(now - woke).toFixed(0)} ms`);
    woke = now;
    const due = Math.min(paths.length, Math.floor(((now - t0) * rate) / 1000) + 1);
    for (; sent < due; sent++) answered.push(send(paths[sent]));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(answered);
  agent.destroy();
  collections.disconnect();
  out.errorCodes = [...codes];
  return out;
}

/** Requests of the client's own warm-up (`warmUp`), at the rate it is then asked for. */
const WARM_UP_REQUESTS = 2_000;

/**
 * Runs the client's own code before it measures anything: WARM_UP_REQUESTS requests at `rate` to an empty server in this
 * process, on loopback, over connections of their own (`run` makes its agent each time, so the measured run opens new
 * ones, as it would to a restarted server). A client started cold paused its own event loop 9-19 ms in its first 50 ms
 * (its http code compiled then), and those pauses were the p99 of the restart's first second, also against an empty
 * server: the client's time, not the server's (issue #30).
 */
async function warmUp(rate: number): Promise<void> {
  const server = http.createServer((_req, res) => res.end("{}"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await run(
    `http://127.0.0.1:${port}`,
    rate,
    Array.from({ length: WARM_UP_REQUESTS }, () => "/"),
  );
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

if (require.main === module) {
  let paths: string[] = [];
  process.on("message", async (m: { paths?: string[]; rate?: number; url?: string }) => {
    if (m.paths && m.rate !== undefined) {
      paths = m.paths;
      await warmUp(m.rate);
      process.send?.("loaded");
    } else if (m.url !== undefined && m.rate !== undefined) {
      const result = await run(m.url, m.rate, paths);
      process.send?.(result, () => process.exit(0));
    }
  });
}
