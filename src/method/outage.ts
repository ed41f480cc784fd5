import { InvalidInputError } from "../errors";
import { toRfc3339 } from "./time";

/** V4.1: a window that has already ended may be declared only when its start lies at most 48 hours back. */
export const MAX_LATE_DECLARATION_S = 48 * 3600;

/**
 * A declared outage window (V4). `end: null` is an open window (`end = +infinity`, V4.3).
 * `closedAt` is the instant the end became known, when it was set by closing an open window;
 * absent or null means the end was known from `declaredAt`.
 */
export type OutageWindow = {
  id: string;
  start: number;
  end: number | null;
  declaredAt: number;
  closedAt?: number | null;
};

/** A window reduced to its interval; `end: null` stands for +infinity. */
export type Interval = { start: number; end: number | null };

/** Stable codes of the V4.1 rejections. */
export type OutageErrorCode = "outage_not_started" | "outage_end_before_start" | "outage_declared_too_late" | "outage_already_closed";

function reject(code: OutageErrorCode, message: string): never {
  throw new InvalidInputError(code, message, { status: code === "outage_already_closed" ? 409 : 400 });
}

/**
 * Checks a declaration against V4.1; a rejected declaration changes nothing. Messages name
 * instants in RFC 3339 (V1).
 * A window "lasts" at `t` when `start <= t <= end` (through its `end` instant); one that has ended
 * (`end < declaredAt`) is accepted only when `start >= declaredAt - 48h`.
 * @throws InvalidInputError `outage_not_started` | `outage_end_before_start` | `outage_declared_too_late`
 */
export function validateOutageDeclaration(d: { start: number; end: number | null; declaredAt: number }): void {
  if (d.start > d.declaredAt)
    reject("outage_not_started", `outage starts at ${toRfc3339(d.start)}, after it is declared (${toRfc3339(d.declaredAt)})`);
  if (d.end !== null && d.end < d.start)
    reject("outage_end_before_start", `outage ends at ${toRfc3339(d.end)}, before its start ${toRfc3339(d.start)}`);
  if (d.end !== null) rejectLateEnd(d.start, d.end, d.declaredAt, "outage");
}

/**
 * V4.1: a window that ended before `declaredAt` is a declaration made after it ended, at
 * `declaredAt`: rejected when it started more than 48 h before. Ending at `declaredAt` itself is
 * ending while it lasts (a window lasts through its `end` instant).
 */
function rejectLateEnd(start: number, end: number, declaredAt: number, what: string): void {
  if (end < declaredAt && start < declaredAt - MAX_LATE_DECLARATION_S) {
    reject(
      "outage_declared_too_late",
      `${what} ended at ${toRfc3339(end)}, before it was declared (${toRfc3339(declaredAt)}), and started at ${toRfc3339(start)}, more than 48 h before that`,
    );
  }
}

/**
 * Checks closing an open window by setting its `end` (V4.1); the caller records when (`closedAt`).
 * An end before the window's `declared_at` is judged as a declaration made after the window ended,
 * at `declared_at` (so closing cannot get round the 48 h rule).
 * @throws InvalidInputError `outage_already_closed` | `outage_end_before_start` | `outage_declared_too_late`
 */
export function validateOutageClose(window: OutageWindow, end: number): void {
  if (window.end !== null) {
    reject("outage_already_closed", `outage ${window.id} is already closed (end ${toRfc3339(window.end)})`);
  }
  if (end < window.start)
    reject("outage_end_before_start", `outage ${window.id} ends at ${toRfc3339(end)}, before its start ${toRfc3339(window.start)}`);
  rejectLateEnd(window.start, end, window.declaredAt, `outage ${window.id}`);
}

/**
 * V4.2: windows that overlap or touch (`a.end >= b.start`) count as one, `[min start, max end]`.
 * @returns disjoint intervals sorted by start; an open window absorbs everything after its start.
 * @example mergeWindows([{ start: 0, end: 10 }, { start: 10, end: 20 }]) // [{ start: 0, end: 20 }]
 */
export function mergeWindows(windows: readonly Interval[]): Interval[] {
  const sorted = [...windows].sort((a, b) => a.start - b.start);
  const merged: Interval[] = [];
  for (const w of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && (last.end === null || last.end >= w.start)) {
      if (last.end !== null && (w.end === null || w.end > last.end)) last.end = w.end;
    } else {
      merged.push({ start: w.start, end: w.end });
    }
  }
  return merged;
}
