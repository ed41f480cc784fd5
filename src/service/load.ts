import { monitorEventLoopDelay } from "node:perf_hooks";

/**
 * Detects overload for V3.3's automatic busy state. The service counts as overloaded while
 * either holds:
 * - more than `maxInFlight` requests are being served at once, or
 * - the event loop was held up longer than `maxLoopDelayMs` at some point of the last sample
 *   period (`sampleMs`): the process cannot keep up with its work.
 * Agents then get `next_heartbeat_s = 7200`, halving the check-in load without costing them credit.
 */
export function createLoadMonitor(options: { maxInFlight: number; maxLoopDelayMs: number; sampleMs?: number }) {
  let inFlight = 0;
  let loopDelayMs = 0;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const timer = setInterval(() => {
    loopDelayMs = histogram.max / 1e6;
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

export type LoadMonitor = ReturnType<typeof createLoadMonitor>;
