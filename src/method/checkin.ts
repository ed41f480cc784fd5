import { mergeWindows, type Interval, type OutageWindow } from "./outage";

/** V3.3: `next_heartbeat_s` given to a counted check-in normally. */
export const NEXT_HEARTBEAT_S = 3600;
/** V3.3: `next_heartbeat_s` while the service is busy (operator switch or overload). */
export const BUSY_NEXT_HEARTBEAT_S = 7200;
/** V3.2: a check-in arriving less than 1,200 s after the previous counted one is refused. */
export const MIN_INTERVAL_S = 1200;
/** V3.5: grace added to `p.arrival + p.next_heartbeat_s` to form the deadline. */
export const GRACE_S = 600;

/** A counted check-in as stored: everything V3.5 fixes when it is counted (V3.6: never changes). */
export type CountedCheckin = {
  arrival: number;
  nextHeartbeatS: number;
  /** `null` for the first counted check-in after a claim (V3.4). */
  onTime: boolean | null;
  excused: boolean;
  credit: number;
};

/** The three outcomes of V3. */
export type CheckinDecision =
  | ({ type: "counted" } & CountedCheckin)
  | { type: "refused"; retryAfterS: number }
  | { type: "duplicate"; original: CountedCheckin };

/** What V3.5 uses of the previous counted check-in. */
export type PreviousCheckin = Pick<CountedCheckin, "arrival" | "nextHeartbeatS">;

/** Everything `decideCheckin` needs about one agent at the instant a request arrives. */
export type CheckinInput = {
  /** Arrival time from the service's clock (V1), Unix seconds. */
  arrival: number;
  /** Previous counted check-in of this agent since its latest claim (V3.4), or null; only its arrival and `next_heartbeat_s` matter. */
  previous: PreviousCheckin | null;
  /** Counted check-in of this agent with the same idempotency key since its latest claim (V3.1), or null. */
  duplicateOf: CountedCheckin | null;
  /**
   * Declared windows as known when the request is read. Windows declared later (V4.3) and ends set
   * after `arrival` (`closedAt > arrival`) are ignored here; a declaration or a close in the
   * arrival's own second is taken as made before the check-in, so one that comes after it (in
   * replay, later in the timeline) must not be passed: the stores hand over the windows as they
   * stand when the request is read.
   */
  windows: readonly OutageWindow[];
  /** Whether the service is busy at `arrival` (V3.3). */
  busy: boolean;
};

/** `p.arrival + p.next_heartbeat_s + 600` (V3.5). */
export function deadlineOf(previous: PreviousCheckin): number {
  return previous.arrival + previous.nextHeartbeatS + GRACE_S;
}

/**
 * V4.3: whether a check-in arriving at `arrival` with this `deadline` is excused by the windows
 * declared by then. Only windows that contain the deadline can matter (the merged window holding
 * the deadline contains it through one of its parts), so merging happens only when one does.
 */
export function isExcused(arrival: number, deadline: number, nextHeartbeatS: number, windows: readonly OutageWindow[]): boolean {
  let hit = false;
  for (let i = 0; i < windows.length; i++) {
    const w = windows[i];
    if (w.declaredAt > arrival || w.start > deadline) continue;
    const end = knownEnd(w, arrival);
    if (end === null || end >= deadline) {
      hit = true;
      break;
    }
  }
  if (!hit) return false;
  const known: Interval[] = [];
  for (const w of windows) if (w.declaredAt <= arrival) known.push({ start: w.start, end: knownEnd(w, arrival) });
  for (const m of mergeWindows(known)) {
    if (m.start <= deadline && (m.end === null || deadline <= m.end)) {
      return m.end === null || arrival <= m.end + nextHeartbeatS;
    }
  }
  return false;
}

function knownEnd(w: OutageWindow, arrival: number): number | null {
  // An open window's end is null either way.
  return w.closedAt != null && w.closedAt > arrival ? null : w.end;
}

/**
 * Decides one check-in request (V3–V4): duplicate first (V3.1), then refused under 1,200 s
 * (V3.2), else counted with its `next_heartbeat_s`, on-time/excused flags and credit (V3.3–V3.5).
 * Pure: the caller supplies the agent's state and the clock.
 * @example
 * decideCheckin({ arrival: 3600, previous: { arrival: 0, nextHeartbeatS: 3600, onTime: null, excused: false, credit: 0 },
 *   duplicateOf: null, windows: [], busy: false })
 * // { type: "counted", arrival: 3600, nextHeartbeatS: 3600, onTime: true, excused: false, credit: 3600 }
 */
export function decideCheckin(input: CheckinInput): CheckinDecision {
  const { arrival, previous } = input;
  if (input.duplicateOf !== null) return { type: "duplicate", original: input.duplicateOf };
  const nextHeartbeatS = input.busy ? BUSY_NEXT_HEARTBEAT_S : NEXT_HEARTBEAT_S;
  if (previous === null) return { type: "counted", arrival, nextHeartbeatS, onTime: null, excused: false, credit: 0 };
  const elapsed = arrival - previous.arrival;
  if (elapsed < MIN_INTERVAL_S) return { type: "refused", retryAfterS: MIN_INTERVAL_S - elapsed };
  const deadline = deadlineOf(previous);
  // V4.3 defines "excused" on its own two conditions, so a check-in that gets through inside a
  // window is excused even when it is also on time by the deadline alone.
  const excused = input.windows.length > 0 && isExcused(arrival, deadline, previous.nextHeartbeatS, input.windows);
  const onTime = excused || arrival <= deadline;
  return { type: "counted", arrival, nextHeartbeatS, onTime, excused, credit: onTime ? elapsed : 0 };
}
