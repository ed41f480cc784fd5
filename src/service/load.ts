import { monitorEventLoopDelay } from "node:perf_hooks";

const RESOLUTION_MS = 10;

/**
 * Detects overload for V3.3's automatic busy state. The service counts as overloaded while
 * either holds:
 * - more than `maxInFlight` requests are being served at once, or
 * - the event loop's mean delay over the last sample period (`sampleMs`) exceeds `maxLoopDelayMs`:
 *   the process is late all the time, not just once (a single GC pause or slow request is not overload).
 * Agents then get `next_heartbeat_s = 7200`, halving the check-in load without costing them credit.
 */
export function createLoadMonitor(options: { maxInFlight: number; maxLoopDelayMs: number; sampleMs?: number }): LoadMonitor {
  let inFlight = 0;
  let loopDelayMs = 0;
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  const timer = setInterval(() => {
    // The histogram records the time between its timer's ticks: lateness is what exceeds the resolution.
    loopDelayMs = histogram.count > 0 ? Math.max(0, histogram.mean / 1e6 - RESOLUTION_MS) : 0;
    histogram.reset();
  }, options.sampleMs ?? 1000);
  timer.unref();

  return {
    /** Marks a request started; call the returned function when it ends. */
    enter(): () => void {
      inFlight++;
      let left = false;
      return () => {
        if (!left) inFlight--;
        left = true;
      };
    },
    overloaded: (): boolean => inFlight > options.maxInFlight || loopDelayMs > options.maxLoopDelayMs,
    snapshot: () => ({ inFlight, loopDelayMs }),
    stop(): void {
      clearInterval(timer);
      histogram.disable();
    },
  };
}

/** V3.3 overload detection: requests in flight and how late the event loop runs. */
export type LoadMonitor = {
  /** Marks a request started; call the returned function when it ends. */
  enter(): () => void;
  overloaded(): boolean;
  snapshot(): { inFlight: number; loopDelayMs: number };
  stop(): void;
};
