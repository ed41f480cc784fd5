import { expect } from "chai";
import {
  BUSY_NEXT_HEARTBEAT_S,
  GRACE_S,
  MIN_INTERVAL_S,
  NEXT_HEARTBEAT_S,
  decideCheckin,
  deadlineOf,
  type CountedCheckin,
} from "./checkin";
import type { OutageWindow } from "./outage";

const P: CountedCheckin = { arrival: 1_000_000, nextHeartbeatS: NEXT_HEARTBEAT_S, onTime: true, excused: false, credit: 3600 };
const DEADLINE = P.arrival + NEXT_HEARTBEAT_S + GRACE_S;

function decide(arrival: number, windows: OutageWindow[] = [], extra: Partial<Parameters<typeof decideCheckin>[0]> = {}) {
  return decideCheckin({ arrival, previous: P, duplicateOf: null, windows, busy: false, ...extra });
}

function win(start: number, end: number | null, declaredAt = start, closedAt?: number): OutageWindow {
  return { id: `w${start}`, start, end, declaredAt, closedAt };
}

describe("check-in decisions (V3)", () => {
  it("counts the first check-in after a claim with credit 0 and on_time null (V3.4)", () => {
    expect(decideCheckin({ arrival: 5, previous: null, duplicateOf: null, windows: [], busy: false })).to.deep.equal({
      type: "counted",
      arrival: 5,
      nextHeartbeatS: 3600,
      onTime: null,
      excused: false,
      credit: 0,
    });
  });

  it("refuses a check-in 1,199 s after the previous one, with retry_after_s 1 (V3.2)", () => {
    expect(decide(P.arrival + 1199)).to.deep.equal({ type: "refused", retryAfterS: 1 });
  });

  it("counts a check-in 1,200 s after the previous one, on time with credit 1,200 (V3.2, V3.5)", () => {
    expect(decide(P.arrival + MIN_INTERVAL_S)).to.include({ type: "counted", onTime: true, excused: false, credit: 1200 });
  });

  it("answers a duplicate key with the original check-in, before any refusal (V3.1)", () => {
    const original = { ...P };
    expect(decide(P.arrival + 1, [], { duplicateOf: original })).to.deep.equal({ type: "duplicate", original });
  });

  it("gives next_heartbeat_s 7,200 while busy and 3,600 otherwise (V3.3)", () => {
    expect(decide(P.arrival + 3600, [], { busy: true })).to.include({ nextHeartbeatS: BUSY_NEXT_HEARTBEAT_S });
    expect(decide(P.arrival + 3600)).to.include({ nextHeartbeatS: NEXT_HEARTBEAT_S });
  });

  it("is on time exactly at the deadline p.arrival + p.next_heartbeat_s + 600 and late one second after (V3.5)", () => {
    expect(decide(DEADLINE)).to.include({ onTime: true, credit: DEADLINE - P.arrival });
    expect(decide(DEADLINE + 1)).to.include({ onTime: false, excused: false, credit: 0 });
  });

  it("uses the previous check-in's busy next_heartbeat_s for the deadline (V3.5)", () => {
    const busyPrev = { ...P, nextHeartbeatS: BUSY_NEXT_HEARTBEAT_S };
    expect(decide(P.arrival + 7800, [], { previous: busyPrev })).to.include({ onTime: true, credit: 7800 });
    expect(decide(P.arrival + 7801, [], { previous: busyPrev })).to.include({ onTime: false, credit: 0 });
  });
});

describe("excused check-ins (V4.3)", () => {
  const late = DEADLINE + 3000;

  it("excuses a late check-in whose deadline is exactly the window's start", () => {
    expect(decide(late, [win(DEADLINE, DEADLINE + 4000, DEADLINE)])).to.include({ onTime: true, excused: true, credit: late - P.arrival });
  });

  it("excuses a late check-in whose deadline is exactly the window's end", () => {
    expect(decide(late, [win(DEADLINE - 4000, DEADLINE)])).to.include({ onTime: true, excused: true });
  });

  it("does not excuse when the deadline is one second before the window starts (already late)", () => {
    expect(decide(late, [win(DEADLINE + 1, DEADLINE + 4000, DEADLINE + 1)])).to.include({ onTime: false, excused: false, credit: 0 });
  });

  it("excuses at end + next_heartbeat_s exactly and not one second past it", () => {
    const w = win(DEADLINE - 100, DEADLINE + 100);
    expect(decide(DEADLINE + 100 + NEXT_HEARTBEAT_S, [w])).to.include({ excused: true, onTime: true });
    expect(decide(DEADLINE + 100 + NEXT_HEARTBEAT_S + 1, [w])).to.include({ excused: false, onTime: false, credit: 0 });
  });

  it("excuses any check-in while the window is still open", () => {
    expect(decide(DEADLINE + 86_400 * 3, [win(DEADLINE - 10, null)])).to.include({
      excused: true,
      credit: 3600 + 600 + 10 + 86_400 * 3 - 10,
    });
  });

  it("ignores a window declared after the check-in arrived: its credit stays 0", () => {
    expect(decide(late, [win(DEADLINE - 100, DEADLINE + 100, late + 1)])).to.include({ excused: false, credit: 0 });
    expect(decide(late, [win(DEADLINE - 100, DEADLINE + 100, late)])).to.include({ excused: true });
  });

  it(
    "takes a window it is given declared in the arrival's second as declared before: " +
      "the caller gives only those it holds when the request is read (V4.3)",
    () => {
      // What a declaration in the same second after the check-in does (replay.test.ts plays both orders): it is not given, so the
      // check-in is late.
      expect(decide(late, [])).to.include({ onTime: false, excused: false, credit: 0 });
      expect(decide(late, [win(DEADLINE - 100, null, late)])).to.include({ onTime: true, excused: true, credit: late - P.arrival });
    },
  );

  it("treats a window closed after the arrival as still open at the arrival", () => {
    const arrival = DEADLINE + 5000;
    const closed = (closedAt: number) => win(DEADLINE - 100, DEADLINE + 100, DEADLINE - 100, closedAt);
    expect(decide(arrival, [closed(arrival + 1)])).to.include({ excused: true });
    expect(decide(arrival, [closed(arrival)])).to.include({ excused: false });
  });

  it("uses the merged window's end for windows that touch (V4.2)", () => {
    const a = win(DEADLINE - 100, DEADLINE + 100);
    const b = win(DEADLINE + 100, DEADLINE + 5000, DEADLINE + 100);
    expect(decide(DEADLINE + 5000 + NEXT_HEARTBEAT_S, [b, a])).to.include({ excused: true });
    expect(decide(DEADLINE + 100 + NEXT_HEARTBEAT_S + 1, [a])).to.include({ excused: false });
  });

  it("marks an on-time check-in inside a window as excused too (V4.3 defines excused by its two conditions)", () => {
    expect(decide(DEADLINE - 10, [win(DEADLINE - 20, null)])).to.include({
      onTime: true,
      excused: true,
      credit: DEADLINE - 10 - P.arrival,
    });
  });
});

describe("excused check-ins: which windows count (V4.2, V4.3)", () => {
  const p = { arrival: 0, nextHeartbeatS: NEXT_HEARTBEAT_S };
  const deadline = NEXT_HEARTBEAT_S + GRACE_S;
  const decide = (arrival: number, windows: OutageWindow[]) =>
    decideCheckin({ arrival, previous: p, duplicateOf: null, windows, busy: false });

  it("does not merge in a window declared after the check-in, even one touching a window that holds the deadline", () => {
    const held = { id: "w1", start: deadline - 10, end: deadline, declaredAt: 100 };
    const arrival = deadline + NEXT_HEARTBEAT_S + 1;
    const later = { id: "w2", start: deadline, end: arrival + 100, declaredAt: arrival + 1 };
    expect(decide(arrival, [held, later])).to.include({ onTime: false, excused: false });
    expect(decide(arrival, [held, { ...later, declaredAt: arrival }])).to.include({ onTime: true, excused: true });
  });

  it("judges the merged window that holds the deadline, not an earlier one", () => {
    const early = { id: "w0", start: 10, end: 20, declaredAt: 10 };
    const holding = { id: "w1", start: deadline - 5, end: deadline + 5, declaredAt: 100 };
    expect(decide(deadline + 5 + NEXT_HEARTBEAT_S, [early, holding])).to.include({ onTime: true, excused: true });
    expect(decide(deadline + 6 + NEXT_HEARTBEAT_S, [early, holding])).to.include({ onTime: false, excused: false });
  });
});

describe("check-in decisions before 1970 (V1: whole Unix seconds, negative ones too)", () => {
  it("decides a timeline before the epoch as the same timeline after it", () => {
    for (const shift of [0, -10_000_000]) {
      const p = { arrival: 1_000_000 + shift, nextHeartbeatS: NEXT_HEARTBEAT_S };
      const deadline = deadlineOf(p);
      // A window closed before the check-in (closedAt null: its end was known when declared) excuses until end + 3,600 s only.
      const closed: OutageWindow = { id: "w", start: deadline - 100, end: deadline + 100, declaredAt: deadline - 100, closedAt: null };
      const decide = (arrival: number) => decideCheckin({ arrival, previous: p, duplicateOf: null, windows: [closed], busy: false });
      expect(decide(deadline + 100 + NEXT_HEARTBEAT_S), String(shift)).to.include({ onTime: true, excused: true });
      expect(decide(deadline + 101 + NEXT_HEARTBEAT_S), String(shift)).to.include({ onTime: false, excused: false, credit: 0 });
    }
  });
});
