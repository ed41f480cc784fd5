import { expect } from "chai";
import { rejectionMessage } from "../../test-helpers/rejection";
import type { DayAggregate } from "../days";
import { parseRfc3339 } from "../time";
import { buildScoreInputs, validateScoreInputs, type ScoreFacts, type ScoreInputs } from "./inputs";
import type { Penalty } from "./integrity";

const HEX = "a".repeat(64);
/** A well-formed inputs document (V9) at a midnight, claimed 15 days before. */
const DOC: ScoreInputs = {
  scoreType: "vrai",
  method: "0.2",
  agent: "agt_1",
  at: "2026-10-05T00:00:00Z",
  claimed_at: "2026-09-20T00:00:00Z",
  proofs: ["github", "domain"],
  penalties: [
    { id: "pen_1", code: "rate_abuse", points: 10, days: 30, added_at: "2026-10-01T00:00:00Z" },
    { id: "pen_2", code: "impersonation", points: 50, days: 180, added_at: "2026-10-02T00:00:00Z" },
  ],
  days: [
    { day: "2026-10-01", checkins: 2, on_time: 1, credit_s: 3600, coverage_s: 3600, digest: HEX },
    { day: "2026-10-02", checkins: 0, on_time: 0, credit_s: 0, coverage_s: 100, digest: "" },
  ],
  other_checkin_days: 0,
};

/** `DOC` changed by `change` (a copy). */
function edited(change: (doc: Record<string, any>) => void): unknown {
  const doc = structuredClone(DOC) as Record<string, any>;
  change(doc);
  return doc;
}

/** The message a document is rejected with (code invalid_inputs), or null when it is accepted. */
const rejection = (json: unknown) => rejectionMessage(() => validateScoreInputs(json), "invalid_inputs");

describe("inputs documents: one result, one document (V9)", () => {
  it("accepts a well-formed document, and the boundaries of each rule", () => {
    expect(rejection(DOC)).to.equal(null);
    expect(rejection(edited((d) => Object.assign(d, { claimed_at: d.at, days: [], other_checkin_days: 1 })))).to.equal(null);
    expect(rejection(edited((d) => (d.penalties[1].added_at = d.penalties[0].added_at)))).to.equal(null);
    expect(rejection(edited((d) => (d.other_checkin_days = 16)))).to.equal(null);
    expect(rejection(edited((d) => (d.days[0].on_time = 2)))).to.equal(null);
    expect(rejection(edited((d) => (d.days[1].coverage_s = 86_400)))).to.equal(null);
    expect(
      rejection(edited((d) => Object.assign(d, { claimed_at: "2026-09-19T12:00:00Z", days: [{ ...d.days[0], day: "2026-09-19" }] }))),
    ).to.equal(null);
  });

  for (const [what, json, message] of [
    ["an array", [DOC], "inputs: expected an object, got an array"],
    ["no method", edited((d) => delete d.method), "method: expected 0.2|0.1, missing"],
    ["an unknown field", edited((d) => (d.extra = 1)), "inputs.extra: unknown field"],
    ["a missing field", edited((d) => delete d.agent), "agent: missing"],
    ["another score type", edited((d) => (d.scoreType = "sdk-derived")), 'scoreType: expected vrai, got "sdk-derived"'],
    ["an empty agent", edited((d) => (d.agent = "")), 'agent: expected a non-empty string, got ""'],
    ["a day for at", edited((d) => (d.at = "2026-10-05")), 'at: expected a time YYYY-MM-DDTHH:MM:SSZ, got "2026-10-05"'],
    ["a numeric claimed_at", edited((d) => (d.claimed_at = 5)), "claimed_at: expected a non-empty string, got 5"],
    [
      "a claim after at",
      edited((d) => Object.assign(d, { claimed_at: "2026-10-05T00:00:01Z", days: [] })),
      "claimed_at: expected no later than at (2026-10-05T00:00:00Z), got 2026-10-05T00:00:01Z",
    ],
    ["proofs that are no list", edited((d) => (d.proofs = "github")), 'proofs: expected an array, got "github"'],
    ["an unknown proof kind", edited((d) => (d.proofs = ["passport"])), 'proofs[0]: expected github|wallet|domain|erc8004, got "passport"'],
    [
      "proofs out of order",
      edited((d) => (d.proofs = ["domain", "github"])),
      "proofs[1]: expected distinct kinds in the order github, wallet, domain, erc8004",
    ],
    [
      "a kind twice",
      edited((d) => (d.proofs = ["github", "github"])),
      "proofs[1]: expected distinct kinds in the order github, wallet, domain, erc8004",
    ],
    ["penalties that are no list", edited((d) => (d.penalties = {})), "penalties: expected an array, got an object"],
    ["a penalty that is no object", edited((d) => (d.penalties = [5])), "penalties[0]: expected an object, got 5"],
    ["a penalty's unknown field", edited((d) => (d.penalties[0].why = "x")), "penalties[0].why: unknown field"],
    ["a penalty without id", edited((d) => (d.penalties[1].id = "")), 'penalties[1].id: expected a non-empty string, got ""'],
    [
      "an unknown penalty code",
      edited((d) => (d.penalties[0].code = "spam")),
      'penalties[0].code: expected rate_abuse|rule_violation|impersonation, got "spam"',
    ],
    ["too few points", edited((d) => (d.penalties[0].points = 9)), "penalties[0].points: expected a whole number in 10..50, got 9"],
    ["too many days", edited((d) => (d.penalties[0].days = 181)), "penalties[0].days: expected a whole number in 30..180, got 181"],
    [
      "a penalty's bad time",
      edited((d) => (d.penalties[0].added_at = "x")),
      'penalties[0].added_at: expected a time YYYY-MM-DDTHH:MM:SSZ, got "x"',
    ],
    ["a penalty id twice", edited((d) => (d.penalties[1].id = "pen_1")), 'penalties[1].id: duplicate penalty id "pen_1"'],
    ["penalties out of order", edited((d) => d.penalties.reverse()), "penalties[1].added_at: expected penalties ordered by added_at"],
    ["days that are no list", edited((d) => (d.days = "2026-10-01")), 'days: expected an array, got "2026-10-01"'],
    ["a day's unknown field", edited((d) => (d.days[0].missed = 1)), "days[0].missed: unknown field"],
    ["no calendar day", edited((d) => (d.days[0].day = "2026-02-30")), 'days[0].day: expected a day YYYY-MM-DD, got "2026-02-30"'],
    ["a day that is no string", edited((d) => (d.days[0].day = 20261001)), "days[0].day: expected a non-empty string, got 20261001"],
    ["a digest that is no string", edited((d) => (d.days[0].digest = null)), "days[0].digest: expected a string, got null"],
    [
      "a day outside the window",
      edited((d) => (d.days[0].day = "2026-10-05")),
      "days[0].day: 2026-10-05 is not in the window of 2026-10-05T00:00:00Z (V1)",
    ],
    ["days out of order", edited((d) => d.days.reverse()), "days[1].day: expected distinct days, oldest first"],
    ["a day twice", edited((d) => (d.days[1] = { ...d.days[0] })), "days[1].day: expected distinct days, oldest first"],
    ["negative check-ins", edited((d) => (d.days[0].checkins = -1)), "days[0].checkins: expected a whole number >= 0, got -1"],
    ["more on time than check-ins", edited((d) => (d.days[0].on_time = 3)), "days[0].on_time: expected a whole number in 0..2, got 3"],
    ["a negative credit", edited((d) => (d.days[0].credit_s = -5)), "days[0].credit_s: expected a whole number >= 0, got -5"],
    [
      "more coverage than a day",
      edited((d) => (d.days[0].coverage_s = 86_401)),
      "days[0].coverage_s: expected a whole number in 0..86400, got 86401",
    ],
    ["no digest for check-ins", edited((d) => (d.days[0].digest = "")), "days[0].digest: expected 64 lowercase hex digits"],
    ["an uppercase digest", edited((d) => (d.days[0].digest = "A".repeat(64))), "days[0].digest: expected 64 lowercase hex digits"],
    ["a digest without check-ins", edited((d) => (d.days[1].digest = HEX)), 'days[1].digest: expected "" for a day without check-ins'],
    [
      "a credit without on-time check-ins",
      edited((d) => (d.days[0].on_time = 0)),
      "days[0].credit_s: expected 0 on a day without on-time check-ins",
    ],
    ["a day with nothing", edited((d) => (d.days[1].coverage_s = 0)), "days[1]: a day without check-ins or coverage is left out"],
    [
      "a day that ended at the claim",
      edited((d) => (d.days[0].day = "2026-09-19")),
      "days[0].day: 2026-09-19 ended before the claim and cannot hold check-ins (V2)",
    ],
    [
      "more other days than the claim spans",
      edited((d) => (d.other_checkin_days = 17)),
      "other_checkin_days: expected a whole number in 0..16, got 17",
    ],
  ] as const) {
    it(`rejects ${what}, naming the field`, () => {
      expect(rejection(json)).to.equal(message);
    });
  }
});

describe("building an inputs document from the facts (V1, V7, V8, V9)", () => {
  const D = 86_400;
  const AT = parseRfc3339("2026-10-05T12:00:00Z"); // window 2026-09-05 .. 2026-10-04
  const CLAIMED = parseRfc3339("2026-08-01T00:00:00Z");
  const day = (name: string, checkins: number, coverageS = 0): DayAggregate => ({
    day: name,
    checkins,
    onTime: checkins,
    creditS: 3600 * checkins,
    coverageS,
    digest: checkins > 0 ? HEX : "",
  });
  const facts = (over: Partial<ScoreFacts> = {}): ScoreFacts => ({
    agent: "agt_1",
    method: "0.2",
    at: AT,
    claimedAt: CLAIMED,
    proofs: [],
    penalties: [],
    days: [],
    ...over,
  });

  it("lists the window's days with a check-in or coverage, oldest first, and counts the other days with a check-in up to the day of at", () => {
    const doc = buildScoreInputs(
      facts({
        days: [
          day("2026-10-04", 2), // the window's last day
          day("2026-10-06", 3), // after the day of at: not arrived by at
          day("2026-10-05", 1), // the day of at: another day (V8, 0.2)
          day("2026-09-04", 1), // the day before the window: another day
          day("2026-09-05", 1, 200), // the window's first day
          day("2026-09-20", 0, 500), // coverage only: listed, never a check-in day
          day("2026-09-21", 0, 0), // nothing: left out
          day("2026-09-01", 0, 700), // coverage only, outside the window: not a check-in day
        ],
      }),
    );
    expect(doc.days.map((d) => [d.day, d.checkins, d.coverage_s])).to.deep.equal([
      ["2026-09-05", 1, 200],
      ["2026-09-20", 0, 500],
      ["2026-10-04", 2, 0],
    ]);
    expect(doc.days[0]).to.deep.equal({ day: "2026-09-05", checkins: 1, on_time: 1, credit_s: 3600, coverage_s: 200, digest: HEX });
    expect(doc.other_checkin_days).to.equal(2);
    expect(() => validateScoreInputs(JSON.parse(JSON.stringify(doc)))).not.to.throw();
  });

  it("adds the earlier days with a check-in a caller counted to those it lists outside the window, the same document either way (V8)", () => {
    const history = [day("2026-08-01", 3), day("2026-08-02", 0, 900), day("2026-09-04", 1), day("2026-09-05", 1), day("2026-10-05", 1)];
    const whole = buildScoreInputs(facts({ days: history }));
    expect(whole.other_checkin_days).to.equal(3);
    // What a store reading from the window's first day gives: the days before it counted where they are kept.
    const fromWindow = buildScoreInputs(facts({ days: history.filter((d) => d.day >= "2026-09-05"), earlierCheckinDays: 2 }));
    expect(fromWindow).to.deep.equal(whole);
    for (const bad of [-1, 1.5, Number.NaN])
      expect(() => buildScoreInputs(facts({ earlierCheckinDays: bad })))
        .to.throw(/earlierCheckinDays must be a non-negative integer/)
        .with.property("code", "invalid_inputs");
  });

  it("takes each document's own window, whatever instant was built before (V1)", () => {
    const days = [day("2026-09-05", 1), day("2026-10-04", 1)];
    for (let round = 0; round < 2; round++) {
      expect(buildScoreInputs(facts({ days })).days.map((d) => d.day)).to.deep.equal(["2026-09-05", "2026-10-04"]);
      const nextDay = buildScoreInputs(facts({ at: AT + D, days }));
      expect(nextDay.days.map((d) => d.day)).to.deep.equal(["2026-10-04"]);
      expect(nextDay.other_checkin_days).to.equal(1);
    }
  });

  it("keeps the penalties active at at, ordered by added_at then id, as RFC 3339 times (V7)", () => {
    const penalty = (id: string, addedAt: number, revokedAt: number | null = null): Penalty => ({
      id,
      code: "rate_abuse",
      points: 10,
      days: 30,
      addedAt,
      revokedAt,
    });
    const doc = buildScoreInputs(
      facts({
        penalties: [
          penalty("b", AT - D),
          penalty("late", AT + 1),
          penalty("c", AT - 2 * D),
          penalty("a", AT - D),
          penalty("revoked", AT - D, AT),
          penalty("expired", AT - 30 * D),
          penalty("now", AT),
        ],
      }),
    );
    expect(doc.penalties.map((p) => p.id)).to.deep.equal(["c", "a", "b", "now"]);
    for (const given of [
      ["a", "b"],
      ["b", "a"],
    ]) {
      const tied = buildScoreInputs(facts({ penalties: given.map((id) => penalty(id, AT - D)) }));
      expect(tied.penalties.map((p) => p.id)).to.deep.equal(["a", "b"]);
    }
    expect(doc.penalties[0]).to.deep.equal({ id: "c", code: "rate_abuse", points: 10, days: 30, added_at: "2026-10-03T12:00:00Z" });
  });

  it("writes the instants in RFC 3339 and refuses a claim after at (V2, V9)", () => {
    const doc = buildScoreInputs(facts({ claimedAt: AT }));
    expect(doc).to.include({ at: "2026-10-05T12:00:00Z", claimed_at: "2026-10-05T12:00:00Z", scoreType: "vrai", agent: "agt_1" });
    expect(() => buildScoreInputs(facts({ claimedAt: AT + 1 })))
      .to.throw(`claimedAt ${AT + 1} is after at ${AT}`)
      .with.property("code", "invalid_inputs");
  });
});

describe("inputs documents: digests (V9)", () => {
  it("takes a digest of exactly 64 lowercase hex digits, any of them", () => {
    expect(rejection(edited((d) => (d.days[0].digest = "0123456789abcdef".repeat(4))))).to.equal(null);
    for (const digest of ["a".repeat(63), "a".repeat(65), `${"a".repeat(64)}\n`, `x${"a".repeat(64)}`, `${"0".repeat(63)}g`]) {
      expect(rejection(edited((d) => (d.days[0].digest = digest))), digest).to.equal("days[0].digest: expected 64 lowercase hex digits");
    }
  });
});

describe("the first document of a process (V1)", () => {
  it("has the window of its own at when the module has built nothing before", () => {
    // A copy of the module as a new process loads it: nothing remembered from earlier documents.
    const path = require.resolve("./inputs");
    const loaded = require.cache[path];
    delete require.cache[path];
    try {
      const fresh = require("./inputs") as typeof import("./inputs");
      const at = parseRfc3339("2026-10-05T12:00:00Z");
      const day: DayAggregate = { day: "2026-09-05", checkins: 1, onTime: 0, creditS: 0, coverageS: 0, digest: HEX };
      const doc = fresh.buildScoreInputs({
        agent: "a",
        method: "0.2",
        at,
        claimedAt: at - 40 * 86_400,
        proofs: [],
        penalties: [],
        days: [day],
      });
      expect(doc.days.map((d) => d.day)).to.deep.equal(["2026-09-05"]);
    } finally {
      require.cache[path] = loaded;
    }
  });
});
