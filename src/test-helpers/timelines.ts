/**
 * Random timelines of one agent for the property tests of the rules and of the service (issue #30): a claim,
 * then check-in requests, busy switches, outage declarations and closes, each at its own second; and what the
 * pure rules (src/method) make of one, the model the service's answers are held to.
 */
import fc from "fast-check";
import {
  DAY_S,
  parseRfc3339,
  playCheckins,
  validateOutageClose,
  validateOutageDeclaration,
  type CheckinDecision,
  type CountedCheckin,
  type DayAggregate,
  type OutageWindow,
} from "../method";
import { BaseError } from "../errors";

export type TimelineEvent =
  | { at: number; type: "checkin"; key: string }
  | { at: number; type: "busy"; on: boolean }
  | { at: number; type: "outage"; id: string; start: number; end: number | null }
  | { at: number; type: "outage_end"; id: string; end: number };

/** Events strictly in time order after `claimedAt`, and `end`, an instant after the last one (to score at). */
export type Timeline = { claimedAt: number; events: TimelineEvent[]; end: number };

/** What the rules answer to an event: a check-in's decision (V3), an operator's event accepted or rejected with its code (V4.1). */
export type TimelineAnswer = CheckinDecision | { type: "ok" } | { type: "rejected"; code: string };

const H = 3600;
/** Timelines start on this day (a claim at some second of it). */
const FIRST_DAY = parseRfc3339("2026-10-01T00:00:00Z");

/** Seconds between two events: under 1,200 s (V3.2 refusals), within the deadline, late, and days of silence. */
const gapArb = fc.oneof(
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 1199 }) },
  { weight: 6, arbitrary: fc.integer({ min: 1200, max: 4200 }) },
  { weight: 2, arbitrary: fc.integer({ min: 4201, max: 12 * H }) },
  { weight: 1, arbitrary: fc.integer({ min: 12 * H, max: 4 * DAY_S }) },
);

/** One event before it is placed in time; `key: null` is a key of its own, the others repeat (V3.1). */
const stepArb = fc.record({
  gap: gapArb,
  event: fc.oneof(
    {
      weight: 12,
      arbitrary: fc.record({ type: fc.constant("checkin" as const), key: fc.constantFrom(null, null, null, "k0", "k1", "k2") }),
    },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("busy" as const), on: fc.boolean() }) },
    {
      weight: 3,
      // From an hour in the future (rejected) to 52 h back (rejected once ended, V4.1); ends before the start are rejected too.
      arbitrary: fc.record({
        type: fc.constant("outage" as const),
        startBack: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: -H, max: 6 * H }) }, fc.integer({ min: 6 * H, max: 52 * H })),
        length: fc.option(fc.integer({ min: -H, max: 30 * H }), { nil: null }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        type: fc.constant("outage_end" as const),
        pick: fc.nat(),
        endAfterStart: fc.integer({ min: -H, max: 40 * H }),
      }),
    },
  ),
});

/**
 * A timeline of up to `maxEvents` events, claimed at some second of 2026-10-01 (UTC).
 * @example fc.assert(fc.property(timelineArb(), (t) => modelTimeline(t).days.length >= 0))
 */
export function timelineArb(options: { maxEvents?: number } = {}): fc.Arbitrary<Timeline> {
  return fc
    .record({
      claimSecond: fc.integer({ min: 0, max: DAY_S - 1 }),
      steps: fc.array(stepArb, { maxLength: options.maxEvents ?? 40, size: "medium" }),
      scoreAfter: fc.integer({ min: 1, max: 3 * DAY_S }),
    })
    .map(({ claimSecond, steps, scoreAfter }) => {
      const claimedAt = FIRST_DAY + claimSecond;
      const events: TimelineEvent[] = [];
      const outages: Array<{ id: string; start: number }> = [];
      let at = claimedAt;
      steps.forEach(({ gap, event }, i) => {
        at += gap;
        if (event.type === "checkin") events.push({ at, type: "checkin", key: event.key ?? `key-${i}` });
        else if (event.type === "busy") events.push({ at, type: "busy", on: event.on });
        else if (event.type === "outage") {
          const start = at - event.startBack;
          outages.push({ id: `w${i}`, start });
          events.push({ at, type: "outage", id: `w${i}`, start, end: event.length === null ? null : start + event.length });
        } else if (outages.length > 0) {
          const closed = outages[event.pick % outages.length];
          events.push({ at, type: "outage_end", id: closed.id, end: closed.start + event.endAfterStart });
        }
      });
      return { claimedAt, events, end: at + scoreAfter };
    });
}

/** `timeline` `offsetS` seconds later, its outage ids prefixed (timelines played one after the other on one store). */
export function shiftTimeline(timeline: Timeline, offsetS: number, idPrefix: string): Timeline {
  const events = timeline.events.map((e): TimelineEvent => {
    if (e.type === "checkin" || e.type === "busy") return { ...e, at: e.at + offsetS };
    if (e.type === "outage_end") return { ...e, at: e.at + offsetS, id: idPrefix + e.id, end: e.end + offsetS };
    return { ...e, at: e.at + offsetS, id: idPrefix + e.id, start: e.start + offsetS, end: e.end === null ? null : e.end + offsetS };
  });
  return { claimedAt: timeline.claimedAt + offsetS, events, end: timeline.end + offsetS };
}

/** The code of an error the API would answer with a 4xx; anything else is thrown again. */
export function rejectionCode(error: unknown): string {
  if (error instanceof BaseError && error.status < 500) return error.code;
  throw error;
}

/**
 * What the pure rules make of a timeline: each event's answer, the windows declared (V4, as they stand at the
 * end: each with `declaredAt` and, once closed, `closedAt`), the counted check-ins and the day aggregates (V5, V10).
 */
export function modelTimeline(timeline: Timeline): {
  answers: TimelineAnswer[];
  windows: OutageWindow[];
  counted: CountedCheckin[];
  days: DayAggregate[];
} {
  const windows = new Map<string, OutageWindow>();
  const requests: Array<{ arrival: number; key: string; busy: boolean }> = [];
  const checkinAt: number[] = [];
  const answers: TimelineAnswer[] = [];
  let busy = false;
  const judged = (check: () => void): TimelineAnswer => {
    try {
      check();
      return { type: "ok" };
    } catch (error) {
      return { type: "rejected", code: rejectionCode(error) };
    }
  };
  for (const e of timeline.events) {
    if (e.type === "checkin") {
      checkinAt.push(answers.length);
      answers.push({ type: "ok" });
      requests.push({ arrival: e.at, key: e.key, busy });
    } else if (e.type === "busy") {
      busy = e.on;
      answers.push({ type: "ok" });
    } else if (e.type === "outage") {
      const window: OutageWindow = { id: e.id, start: e.start, end: e.end, declaredAt: e.at, closedAt: null };
      answers.push(judged(() => validateOutageDeclaration(window)));
      if (answers[answers.length - 1].type === "ok") windows.set(e.id, window);
    } else {
      const window = windows.get(e.id);
      if (window === undefined) answers.push({ type: "rejected", code: "outage_not_found" });
      else {
        answers.push(judged(() => validateOutageClose(window, e.end)));
        if (answers[answers.length - 1].type === "ok") Object.assign(window, { end: e.end, closedAt: e.at });
      }
    }
  }
  // Every window as it stands at the end: decideCheckin leaves out what was declared or closed after each arrival (V4.3).
  const played = playCheckins(requests, [...windows.values()]);
  played.decisions.forEach((decision, i) => {
    answers[checkinAt[i]] = decision;
  });
  return { answers, windows: [...windows.values()], counted: played.counted, days: played.days };
}
