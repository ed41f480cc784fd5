import { InvalidInputError } from "../errors";

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
 * Checks a declaration against V4.1; a rejected declaration changes nothing.
 * A window "lasts" at `t` when `start <= t <= end`; one that has ended (`end < declaredAt`)
 * is accepted only when `start >= declaredAt - 48h`.
 * @throws InvalidInputError `outage_not_started` | `outage_end_before_start` | `outage_declared_too_late`
 */
export function validateOutageDeclaration(d: { start: number; end: number | null; declaredAt: number }): void {
  if (d.start > d.declaredAt) reject("outage_not_started", `outage starts at ${d.start}, after it is declared (${d.declaredAt})`);
  if (d.end !== null && d.end < d.start) reject("outage_end_before_start", `outage ends at ${d.end}, before its start ${d.start}`);
  if (d.end !== null && d.end < d.declaredAt && d.start < d.declaredAt - MAX_LATE_DECLARATION_S) {
    reject("outage_declared_too_late", `outage ended before it was declared and started more than 48 h before (${d.declaredAt - d.start} s)`);
  }
}

/**
 * Checks closing an open window by setting its `end` (V4.1); the caller records when (`closedAt`).
 * @throws InvalidInputError `outage_already_closed` | `outage_end_before_start`
 */
export function validateOutageClose(window: OutageWindow, end: number): void {
  if (window.end !== null) {
    reject("outage_already_closed", `outage ${window.id} is already closed (end ${window.end})`);
  }
  if (end < window.start) reject("outage_end_before_start", `outage ${window.id} ends at ${end}, before its start ${window.start}`);
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
