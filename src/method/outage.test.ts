import { expect } from "chai";
import { MAX_LATE_DECLARATION_S, mergeWindows, validateOutageClose, validateOutageDeclaration } from "./outage";

const H = 3600;
const NOW = 1_000_000;

describe("outage declarations (V4.1)", () => {
  it("accepts a window declared while it lasts, open or with a future end", () => {
    expect(() => validateOutageDeclaration({ start: NOW - 100 * H, end: null, declaredAt: NOW })).not.to.throw();
    expect(() => validateOutageDeclaration({ start: NOW - H, end: NOW + H, declaredAt: NOW })).not.to.throw();
    expect(() => validateOutageDeclaration({ start: NOW - H, end: NOW, declaredAt: NOW })).not.to.throw();
  });

  it("accepts an ended window whose start is 47 h 59 min back", () => {
    expect(() => validateOutageDeclaration({ start: NOW - (47 * H + 59 * 60), end: NOW - H, declaredAt: NOW })).not.to.throw();
  });

  it("accepts an ended window whose start is exactly 48 h back", () => {
    expect(() => validateOutageDeclaration({ start: NOW - MAX_LATE_DECLARATION_S, end: NOW - H, declaredAt: NOW })).not.to.throw();
  });

  it("rejects an ended window whose start is 48 h 1 min back (outage_declared_too_late)", () => {
    expect(() => validateOutageDeclaration({ start: NOW - (48 * H + 60), end: NOW - H, declaredAt: NOW }))
      .to.throw(/48 h/)
      .with.property("code", "outage_declared_too_late");
  });

  it("rejects a window that has not started yet (outage_not_started)", () => {
    expect(() => validateOutageDeclaration({ start: NOW + 1, end: null, declaredAt: NOW }))
      .to.throw()
      .with.property("code", "outage_not_started");
  });

  it("rejects a window whose end is before its start (outage_end_before_start)", () => {
    expect(() => validateOutageDeclaration({ start: NOW - H, end: NOW - H - 1, declaredAt: NOW }))
      .to.throw()
      .with.property("code", "outage_end_before_start");
  });

  it("closes an open window once, and never before its start", () => {
    const open = { id: "w1", start: NOW - H, end: null, declaredAt: NOW - H };
    expect(() => validateOutageClose(open, NOW)).not.to.throw();
    expect(() => validateOutageClose(open, NOW - 2 * H))
      .to.throw()
      .with.property("code", "outage_end_before_start");
    expect(() => validateOutageClose({ ...open, end: NOW }, NOW + H))
      .to.throw()
      .with.property("code", "outage_already_closed");
  });

  it("judges a close whose end lies before declared_at as a declaration after the window ended (V4.1)", () => {
    const declaredAt = NOW;
    const open = (start: number) => ({ id: "w1", start, end: null, declaredAt });
    // The case: declared open with a start 100 h back, closed with an end 99 h back.
    expect(() => validateOutageClose(open(NOW - 100 * H), NOW - 99 * H))
      .to.throw(/more than 48 h/)
      .with.property("code", "outage_declared_too_late");
    // Boundary seconds: a start exactly 48 h before declared_at is accepted, one second more is not.
    expect(() => validateOutageClose(open(declaredAt - MAX_LATE_DECLARATION_S), declaredAt - 1)).not.to.throw();
    expect(() => validateOutageClose(open(declaredAt - MAX_LATE_DECLARATION_S - 1), declaredAt - 1))
      .to.throw()
      .with.property("code", "outage_declared_too_late");
    // A window lasts through its end instant: ending at declared_at itself, or later, is ending while it lasted.
    expect(() => validateOutageClose(open(NOW - 100 * H), declaredAt)).not.to.throw();
    expect(() => validateOutageClose(open(NOW - 100 * H), declaredAt + 5 * H)).not.to.throw();
  });

  it("rejects a declaration whose end is one second before declared_at and start 48 h 1 s back, accepts end = declared_at (V4.1)", () => {
    expect(() => validateOutageDeclaration({ start: NOW - MAX_LATE_DECLARATION_S - 1, end: NOW - 1, declaredAt: NOW }))
      .to.throw()
      .with.property("code", "outage_declared_too_late");
    expect(() => validateOutageDeclaration({ start: NOW - MAX_LATE_DECLARATION_S - 1, end: NOW, declaredAt: NOW })).not.to.throw();
  });

  it("names instants in RFC 3339 in its errors, not Unix seconds (F2)", () => {
    const t = Date.UTC(2026, 9, 1) / 1000;
    expect(() => validateOutageDeclaration({ start: t + 1, end: null, declaredAt: t })).to.throw(
      "outage starts at 2026-10-01T00:00:01Z, after it is declared (2026-10-01T00:00:00Z)",
    );
    expect(() => validateOutageDeclaration({ start: t - 100 * H, end: t - 99 * H, declaredAt: t })).to.throw(
      "outage ended at 2026-09-26T21:00:00Z, before it was declared (2026-10-01T00:00:00Z), and started at 2026-09-26T20:00:00Z, more than 48 h before that",
    );
    expect(() => validateOutageClose({ id: "w1", start: t, end: t + H, declaredAt: t }, t + 2 * H)).to.throw(
      "outage w1 is already closed (end 2026-10-01T01:00:00Z)",
    );
  });
});

describe("merging windows (V4.2)", () => {
  it("merges windows that touch into one", () => {
    expect(
      mergeWindows([
        { start: 10, end: 20 },
        { start: 0, end: 10 },
      ]),
    ).to.deep.equal([{ start: 0, end: 20 }]);
  });

  it("merges overlapping windows to [min start, max end] and keeps apart those with a gap", () => {
    expect(
      mergeWindows([
        { start: 0, end: 30 },
        { start: 5, end: 10 },
        { start: 31, end: 40 },
      ]),
    ).to.deep.equal([
      { start: 0, end: 30 },
      { start: 31, end: 40 },
    ]);
  });

  it("lets an open window absorb every later window", () => {
    expect(
      mergeWindows([
        { start: 5, end: null },
        { start: 0, end: 6 },
        { start: 100, end: 200 },
      ]),
    ).to.deep.equal([{ start: 0, end: null }]);
  });

  it("does not change its input", () => {
    const input = [
      { start: 0, end: 10 },
      { start: 5, end: 20 },
    ];
    mergeWindows(input);
    expect(input).to.deep.equal([
      { start: 0, end: 10 },
      { start: 5, end: 20 },
    ]);
  });
});

describe("outage rejections (V4.1): status and boundaries", () => {
  it("answers 400 for a declaration it rejects and 409 for closing a closed window", () => {
    expect(() => validateOutageDeclaration({ start: 10, end: null, declaredAt: 9 }))
      .to.throw()
      .with.property("status", 400);
    expect(() => validateOutageClose({ id: "w", start: 0, end: 5, declaredAt: 0 }, 6))
      .to.throw("outage w is already closed (end 1970-01-01T00:00:05Z)")
      .with.property("status", 409);
  });

  it("accepts a window starting at its declaration and one ending at its start, and names both instants when the end is earlier", () => {
    expect(() => validateOutageDeclaration({ start: 50 * H, end: null, declaredAt: 50 * H })).to.not.throw();
    expect(() => validateOutageDeclaration({ start: 50 * H, end: 50 * H, declaredAt: 50 * H })).to.not.throw();
    expect(() => validateOutageDeclaration({ start: 50 * H, end: 50 * H - 1, declaredAt: 50 * H })).to.throw(
      "outage ends at 1970-01-03T01:59:59Z, before its start 1970-01-03T02:00:00Z",
    );
    expect(() => validateOutageClose({ id: "w", start: 50 * H, end: null, declaredAt: 50 * H }, 50 * H)).to.not.throw();
    expect(() => validateOutageClose({ id: "w", start: 50 * H, end: null, declaredAt: 50 * H }, 50 * H - 1)).to.throw(
      "outage w ends at 1970-01-03T01:59:59Z, before its start 1970-01-03T02:00:00Z",
    );
    expect(() => validateOutageClose({ id: "w", start: 0, end: null, declaredAt: 50 * H }, 50 * H - 1)).to.throw(/^outage w ended at /);
  });

  it("keeps the later end when a window inside another is merged", () => {
    expect(
      mergeWindows([
        { start: 0, end: 10 },
        { start: 2, end: 10 },
        { start: 3, end: 5 },
      ]),
    ).to.deep.equal([{ start: 0, end: 10 }]);
  });
});
