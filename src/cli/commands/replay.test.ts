import { expect } from "chai";
import fc from "fast-check";
import { runCli } from "../main";
import { memoryIo } from "../io";
import { parseReplayInput, replay } from "./replay";

const DAY = 86_400;
const T0 = Date.UTC(2026, 9, 1) / 1000; // 2026-10-01T00:00:00Z

async function replayLines(input: unknown): Promise<{ code: number; lines: any[]; out: string; err: string }> {
  const io = memoryIo(JSON.stringify(input));
  const code = await runCli(["replay"], io);
  return {
    code,
    lines: io.out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
    out: io.out,
    err: io.err,
  };
}

function hourlyAgent(agent: string, start: number, hours: number, owner = "o1") {
  const events: any[] = [{ at: start, type: "claim", agent, owner }];
  for (let h = 0; h < hours; h++) events.push({ at: start + 60 + h * 3600, type: "checkin", agent, key: `${agent}-${h}` });
  return events;
}

describe("vrai replay (F2)", () => {
  it("scores a newly claimed agent 200 (V8)", async () => {
    const { code, lines } = await replayLines({
      events: [
        { at: T0, type: "claim", agent: "a1", owner: "o1" },
        { at: T0 + 5, type: "score", agent: "a1" },
      ],
    });
    expect(code).to.equal(0);
    expect(lines[1]).to.include({ i: 1, total: 200, band: "200-399", state: "provisional", method: "0.2" });
    expect(lines[1].components.integrity.shield).to.deep.equal({ active: false });
  });

  it("gives Reliability 150 and an established state after 30 days of hourly on-time check-ins (V5, V8)", async () => {
    const events = hourlyAgent("a1", T0, 31 * 24);
    events.push({ at: T0 + 31 * DAY + 100, type: "score", agent: "a1" });
    const { lines } = await replayLines({ method: "0.2", events });
    const score = lines[lines.length - 1];
    expect(score.components.reliability.value).to.equal(150);
    expect(score.state).to.equal("established");
    expect(score.window).to.have.length(30);
    expect(lines.filter((l) => l.result === "counted")).to.have.length(31 * 24);
  });

  it("answers refused with retry_after_s and duplicates with the original check-in (V3.1, V3.2)", async () => {
    const { lines } = await replayLines({
      events: [
        { at: T0, type: "claim", agent: "a1", owner: "o1" },
        { at: T0 + 10, type: "checkin", agent: "a1", key: "k1" },
        { at: T0 + 10 + 1199, type: "checkin", agent: "a1", key: "k2" },
        { at: T0 + 10 + 1200, type: "checkin", agent: "a1", key: "k2" },
        { at: T0 + 10 + 1300, type: "checkin", agent: "a1", key: "k2" },
      ],
    });
    expect(lines[2]).to.deep.equal({ i: 2, result: "refused", retry_after_s: 1 });
    expect(lines[3]).to.deep.equal({ i: 3, result: "counted", next_heartbeat_s: 3600, on_time: true, excused: false, credit: 1200 });
    expect(lines[4]).to.deep.equal({ i: 4, result: "duplicate", next_heartbeat_s: 3600, on_time: true, excused: false, credit: 1200 });
  });

  it("applies busy, outages, proofs and penalties through the service's rules", async () => {
    const { lines } = await replayLines({
      events: [
        { at: T0, type: "claim", agent: "a1", owner: "o1" },
        { at: T0 + 1, type: "busy", on: true },
        { at: T0 + 2, type: "checkin", agent: "a1", key: "k1" },
        { at: T0 + 3, type: "busy", on: false },
        // The deadline T0+2+7200+600 falls inside this window; the agent is back within 7200 s of its end (V4.3).
        { at: T0 + 7000, type: "outage", id: "w1", start: T0 + 7000, end: null },
        { at: T0 + 9000, type: "outage_end", id: "w1", end: T0 + 9000 },
        { at: T0 + 12_000, type: "checkin", agent: "a1", key: "k2" },
        { at: T0 + 12_001, type: "outage", id: "w2", start: T0 + 100_000, end: null },
        { at: T0 + 12_002, type: "proof", id: "p1", owner: "o1", kind: "github" },
        { at: T0 + 12_003, type: "proof", id: "p2", owner: "o1", agent: "a1", kind: "domain" },
        { at: T0 + 12_004, type: "penalty", id: "x1", agent: "a1", code: "rule_violation", points: 30, days: 30 },
        { at: T0 + 12_005, type: "score", agent: "a1" },
        { at: T0 + 12_006, type: "proof_removed", id: "p2" },
        { at: T0 + 12_007, type: "penalty_revoked", id: "x1" },
        { at: T0 + 12_008, type: "penalty_revoked", id: "x1" },
        { at: T0 + 12_009, type: "score", agent: "a1" },
        { at: T0 + 12_010, type: "checkin", agent: "nobody", key: "k" },
      ],
    });
    expect(lines[2].next_heartbeat_s).to.equal(7200);
    expect(lines[6]).to.include({ result: "counted", on_time: true, excused: true, credit: 11_998 });
    expect(lines[7]).to.include({ result: "rejected" });
    expect(lines[7].error).to.contain("after it is declared");
    expect(lines[11].components.identity.value).to.equal(100 + 30 + 40);
    expect(lines[11].components.integrity.value).to.equal(70);
    expect(lines[14]).to.include({ result: "rejected" });
    expect(lines[15].components.identity.value).to.equal(130);
    expect(lines[15].components.integrity.value).to.equal(100);
    expect(lines[16]).to.include({ result: "rejected" });
  });

  it("writes every kind of line with the bytes of JSON.stringify, i first and the fields in F2's order", async () => {
    const { out } = await replayLines({
      events: [
        { at: T0, type: "claim", agent: "a1", owner: "o1" },
        { at: T0 + 10, type: "checkin", agent: "a1", key: "k1" },
        { at: T0 + 1209, type: "checkin", agent: "a1", key: "k2" },
        { at: T0 + 1300, type: "checkin", agent: "a1", key: "k1" },
        { at: T0 + 3000, type: "checkin", agent: "a1", key: "k3" },
        { at: T0 + 20_000, type: "checkin", agent: "a1", key: "k4" },
        { at: T0 + 20_001, type: "busy", on: true },
        { at: T0 + 20_002, type: "outage", id: "w1", start: T0 + 20_002, end: null },
        { at: T0 + 20_003, type: "outage", id: "w2", start: T0 + 90_000, end: null },
        { at: T0 + 20_004, type: "checkin", agent: 'no"body\\', key: "k" },
        { at: T0 + 20_005, type: "score", agent: "a1" },
      ],
    });
    const { i: scoreIndex, ...score } = JSON.parse(out.split("\n")[10]);
    expect(scoreIndex).to.equal(10);
    const expected = [
      { i: 0, result: "ok" },
      { i: 1, result: "counted", next_heartbeat_s: 3600, on_time: null, excused: false, credit: 0 },
      { i: 2, result: "refused", retry_after_s: 1 },
      { i: 3, result: "duplicate", next_heartbeat_s: 3600, on_time: null, excused: false, credit: 0 },
      { i: 4, result: "counted", next_heartbeat_s: 3600, on_time: true, excused: false, credit: 2990 },
      { i: 5, result: "counted", next_heartbeat_s: 3600, on_time: false, excused: false, credit: 0 },
      { i: 6, result: "ok" },
      { i: 7, result: "declared" },
      { i: 8, result: "rejected", error: "outage starts at 2026-10-02T01:00:00Z, after it is declared (2026-10-01T05:33:23Z)" },
      { i: 9, result: "rejected", error: 'agent no"body\\ is not claimed' },
      { i: 10, ...score },
    ];
    expect(out).to.equal(expected.map((line) => `${JSON.stringify(line)}\n`).join(""));
  });

  it("refuses bad input with exit 2 and one line: unknown type, time order, wrong field type, malformed JSON", async () => {
    const cases: Array<[string, string]> = [
      [JSON.stringify({ events: [{ at: T0, type: "teleport" }] }), "events[0].type"],
      [
        JSON.stringify({
          events: [
            { at: T0 + 5, type: "busy", on: true },
            { at: T0, type: "busy", on: false },
          ],
        }),
        "out of time order",
      ],
      [
        JSON.stringify({ events: [{ at: T0, type: "penalty", id: "x", agent: "a", code: "rate_abuse", points: "20", days: 30 }] }),
        "events[0].points",
      ],
      [JSON.stringify({ events: [{ at: "yesterday", type: "score", agent: "a" }] }), "events[0].at"],
      ["{ nope", "malformed JSON"],
    ];
    for (const [stdin, expected] of cases) {
      const io = memoryIo(stdin);
      expect(await runCli(["replay"], io)).to.equal(2);
      expect(io.out).to.equal("");
      expect(io.err.trim().split("\n")).to.have.length(1);
      expect(io.err).to.contain(expected);
    }
  });

  it("validates every check-in field as any other event's, naming the event and field (F2)", () => {
    const checkin = { at: T0, type: "checkin", agent: "a", key: "k" };
    const refused: Array<[string, string]> = [
      [JSON.stringify([{ ...checkin, extra: 1 }]), "events[0].extra: unknown field"],
      ['[{"__proto__": 1, "at": 0, "type": "checkin", "agent": "a", "key": "k"}]', "events[0].__proto__: unknown field"],
      [JSON.stringify([{ ...checkin, agent: "" }]), "events[0].agent: expected a non-empty string"],
      [JSON.stringify([{ ...checkin, key: 5 }]), "events[0].key: expected a non-empty string"],
      [JSON.stringify([{ at: T0, type: "checkin", agent: "a" }]), "events[0].key: expected a non-empty string"],
      [JSON.stringify([{ ...checkin, at: -1 }]), "events[0].at: expected a whole number >= 0, got -1"],
      [JSON.stringify([{ ...checkin, at: T0 + 0.5 }]), `events[0].at: expected a whole number >= 0, got ${T0 + 0.5}`],
      [
        JSON.stringify([checkin, { ...checkin, at: T0 - 1 }]),
        "events[1].at: events out of time order (2026-09-30T23:59:59Z is before the previous event's 2026-10-01T00:00:00Z)",
      ],
      [
        JSON.stringify([
          { at: T0, type: "busy", on: true },
          { ...checkin, at: "2026-09-30T23:59:59Z" },
        ]),
        "events[1].at: events out of time order",
      ],
      [JSON.stringify([[T0, "checkin", "a", "k"]]), "events[0]: expected an object"],
    ];
    for (const [events, message] of refused) {
      expect(() => parseReplayInput({ events: JSON.parse(events) }), events).to.throw(message);
    }
    // Accepted: Unix seconds as they are, RFC 3339 times converted, in order (equal times too), fields in any order.
    const accepted = parseReplayInput({
      events: [checkin, { key: "k2", agent: "a", type: "checkin", at: T0 }, { ...checkin, key: "k3", at: "2026-10-01T00:00:05Z" }],
    });
    expect(accepted.events).to.deep.equal([checkin, { ...checkin, key: "k2" }, { ...checkin, key: "k3", at: T0 + 5 }]);
  });

  it("hands its output over in new chunks of whole lines, of 64 KiB or more, a line longer than that alone", async () => {
    const events: any[] = hourlyAgent("a1", T0, 2000);
    // A rejected event whose error names a 100,000-character id: a line longer than a chunk.
    const longId = "x".repeat(100_000);
    events.push({ at: T0 + 2001 * 3600, type: "penalty_revoked", id: longId }, { at: T0 + 2001 * 3600, type: "score", agent: "a1" });
    const chunks: Uint8Array[] = [];
    await replay(parseReplayInput({ events }), (chunk) => void chunks.push(chunk));
    const texts = chunks.map((chunk) => Buffer.from(chunk).toString("utf8"));
    expect(texts.every((text) => text.endsWith("\n"))).to.equal(true);
    // Shorter than 64 KiB: the last chunk, and the lines before one too long to share a chunk, which goes alone.
    const long = texts.findIndex((text) => text.includes(longId));
    expect(texts[long].split("\n")).to.have.length(2);
    expect(chunks.every((chunk, k) => chunk.length >= 1 << 16 || k === chunks.length - 1 || k === long - 1)).to.equal(true);
    expect(chunks.length).to.be.greaterThan(4);
    expect(new Set(chunks.map((chunk) => chunk.buffer)).size).to.equal(chunks.length);
    // The chunks, read after the whole replay, are what the command prints.
    const { out, lines } = await replayLines({ events });
    expect(texts.join("")).to.equal(out);
    expect(lines).to.have.length(events.length);
    expect(lines[events.length - 2]).to.include({ result: "rejected" });
    expect(lines[events.length - 2].error).to.include(longId);
    expect(lines[1]).to.deep.equal({ i: 1, result: "counted", next_heartbeat_s: 3600, on_time: null, excused: false, credit: 0 });
  });

  it("is deterministic: the same timeline gives the same output bytes (property)", async () => {
    const event = fc.oneof(
      fc.record({
        type: fc.constant("checkin"),
        agent: fc.constantFrom("a1", "a2"),
        key: fc.constantFrom("k1", "k2", "k3", "k4", "k5", "k6"),
      }),
      fc.record({ type: fc.constant("busy"), on: fc.boolean() }),
      fc.record({ type: fc.constant("score"), agent: fc.constantFrom("a1", "a2") }),
      fc.record({
        type: fc.constant("penalty"),
        id: fc.constantFrom("x1", "x2"),
        agent: fc.constantFrom("a1", "a2"),
        code: fc.constant("rate_abuse"),
        points: fc.integer({ min: 10, max: 50 }),
        days: fc.integer({ min: 30, max: 180 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 20_000 }), event), { maxLength: 25 }), async (steps) => {
        let at = T0 + 10;
        const events: any[] = [
          { at: T0, type: "claim", agent: "a1", owner: "o1" },
          { at: T0, type: "claim", agent: "a2", owner: "o2" },
        ];
        for (const [gap, e] of steps) {
          at += gap;
          events.push({ at, ...e });
        }
        const first = await replayLines({ events });
        const second = await replayLines({ events });
        expect(first.code).to.equal(0);
        expect(second.out).to.equal(first.out);
        expect(first.lines).to.have.length(events.length);
      }),
      { numRuns: 40 },
    );
  });
});

/** Issue 14: the METHOD sentences where replay and an independent implementation disagreed, at their boundary seconds. */
describe("vrai replay: the rules to the letter (V2, V3.1, V4.1, V4.3, V6, F2)", () => {
  const H = 3600;
  const claim = (at: number, agent: string, owner: string) => ({ at, type: "claim", agent, owner });
  const checkin = (at: number, agent: string, key: string) => ({ at, type: "checkin", agent, key });
  const score = (at: number, agent: string) => ({ at, type: "score", agent });
  const firstCounted = { result: "counted", next_heartbeat_s: 3600, on_time: null, excused: false, credit: 0 };

  it("judges a key used before the latest claim afresh, in the claim's own second too (V2, V3.1)", async () => {
    const { code, lines } = await replayLines({
      events: [
        claim(T0, "a1", "o1"),
        checkin(T0 + 10, "a1", "k1"),
        checkin(T0 + 20, "a1", "k2"),
        // Re-claim by the same owner at T0 + 20: the key k2, used in this very second before it, is forgotten.
        claim(T0 + 20, "a1", "o1"),
        checkin(T0 + 20, "a1", "k2"),
        checkin(T0 + 21, "a1", "k2"),
        checkin(T0 + 22, "a1", "k1"),
        // Another owner's claim forgets them too.
        claim(T0 + 30, "a1", "o2"),
        checkin(T0 + 30, "a1", "k1"),
      ],
    });
    expect(code).to.equal(0);
    expect(lines[4]).to.deep.equal({ i: 4, ...firstCounted });
    expect(lines[5]).to.deep.equal({ i: 5, ...firstCounted, result: "duplicate" });
    expect(lines[6]).to.deep.equal({ i: 6, result: "refused", retry_after_s: 1198 });
    expect(lines[8]).to.deep.equal({ i: 8, ...firstCounted });
  });

  it("removes the agent's domain and ERC-8004 proofs at another owner's claim, keeps them at the same owner's (V2)", async () => {
    const { lines } = await replayLines({
      events: [
        claim(T0, "a1", "o1"),
        { at: T0 + 1, type: "proof", id: "g1", owner: "o1", kind: "github" },
        { at: T0 + 1, type: "proof", id: "d1", owner: "o1", agent: "a1", kind: "domain" },
        { at: T0 + 1, type: "proof", id: "e1", owner: "o1", agent: "a1", kind: "erc8004" },
        score(T0 + 1, "a1"),
        claim(T0 + 10, "a1", "o1"),
        score(T0 + 10, "a1"),
        score(T0 + 19, "a1"),
        claim(T0 + 20, "a1", "o2"),
        // The same second as the new owner's claim: the proofs are gone at that instant.
        score(T0 + 20, "a1"),
        { at: T0 + 20, type: "proof_removed", id: "d1" },
        { at: T0 + 21, type: "proof", id: "d2", owner: "o2", agent: "a1", kind: "domain" },
        score(T0 + 21, "a1"),
        // Back to o1: its github counts again; o2's domain is removed.
        claim(T0 + 30, "a1", "o1"),
        score(T0 + 30, "a1"),
      ],
    });
    const identity = (i: number) => lines[i].components.identity.value;
    expect([identity(4), identity(6), identity(7), identity(9), identity(12), identity(14)]).to.deep.equal([220, 220, 220, 100, 140, 130]);
    expect(lines[10]).to.deep.equal({ i: 10, result: "rejected", error: "proof d1 was already removed" });
  });

  it("rejects penalties, proofs and check-ins naming an agent never claimed; they do not wait for a later claim (V2)", async () => {
    const { code, lines } = await replayLines({
      events: [
        claim(T0, "a1", "o1"),
        { at: T0 + 5, type: "penalty", id: "x1", agent: "a9", code: "rate_abuse", points: 20, days: 30 },
        { at: T0 + 5, type: "proof", id: "d1", owner: "o1", agent: "a9", kind: "domain" },
        checkin(T0 + 5, "a9", "k1"),
        claim(T0 + 5, "a9", "o1"),
        checkin(T0 + 5, "a9", "k1"),
        score(T0 + 5, "a9"),
        // The ids of the rejected events were never taken.
        { at: T0 + 6, type: "penalty", id: "x1", agent: "a9", code: "rate_abuse", points: 20, days: 30 },
        { at: T0 + 6, type: "penalty_revoked", id: "x1" },
      ],
    });
    expect(code).to.equal(0);
    expect(lines[1]).to.deep.equal({ i: 1, result: "rejected", error: "agent a9 does not exist" });
    expect(lines[2]).to.deep.equal({ i: 2, result: "rejected", error: "agent a9 does not exist" });
    expect(lines[3]).to.deep.equal({ i: 3, result: "rejected", error: "agent a9 is not claimed" });
    expect(lines[5]).to.deep.equal({ i: 5, ...firstCounted });
    expect(lines[6]).to.include({ total: 200 });
    expect(lines[6].components.identity.proofs).to.deep.equal([]);
    expect(lines[6].components.integrity.penalties).to.deep.equal([]);
    expect(lines[7]).to.deep.equal({ i: 7, result: "ok" });
    expect(lines[8]).to.deep.equal({ i: 8, result: "ok" });
  });

  it("takes an agent-level proof only from the owner of the latest claim, and an owner-level proof naming no agent (V6)", async () => {
    const { code, lines } = await replayLines({
      events: [
        claim(T0, "a1", "o1"),
        { at: T0 + 1, type: "proof", id: "g1", owner: "o1", agent: "a1", kind: "github" },
        { at: T0 + 1, type: "proof", id: "w1", owner: "o1", agent: "a1", kind: "wallet" },
        { at: T0 + 1, type: "proof", id: "d1", owner: "o1", kind: "domain" },
        { at: T0 + 1, type: "proof", id: "e1", owner: "o1", kind: "erc8004" },
        { at: T0 + 1, type: "proof", id: "d2", owner: "o2", agent: "a1", kind: "domain" },
        claim(T0 + 2, "a1", "o2"),
        { at: T0 + 2, type: "proof", id: "d3", owner: "o1", agent: "a1", kind: "domain" },
        { at: T0 + 2, type: "proof", id: "d4", owner: "o2", agent: "a1", kind: "domain" },
        { at: T0 + 2, type: "proof", id: "g2", owner: "o2", kind: "github" },
        score(T0 + 2, "a1"),
      ],
    });
    expect(code).to.equal(0);
    const rejected = (i: number) => lines[i].result === "rejected" && lines[i].error;
    expect(rejected(1)).to.equal("a github proof belongs to the owner and counts for all its agents: leave agent out");
    expect(rejected(2)).to.equal("a wallet proof belongs to the owner and counts for all its agents: leave agent out");
    expect(rejected(3)).to.equal("a domain proof belongs to one agent: name the agent (agent)");
    expect(rejected(4)).to.equal("a erc8004 proof belongs to one agent: name the agent (agent)");
    expect(rejected(5)).to.equal("agent a1 belongs to another owner: only the owner of its latest claim proves it");
    expect(rejected(7)).to.equal("agent a1 belongs to another owner: only the owner of its latest claim proves it");
    expect([lines[8], lines[9]]).to.deep.equal([
      { i: 8, result: "ok" },
      { i: 9, result: "ok" },
    ]);
    expect(lines[10].components.identity.value).to.equal(100 + 40 + 30);
  });

  it("judges closing a window with an end before its declared_at as a declaration after it ended (V4.1)", async () => {
    const T = T0 + 10 * 86_400;
    const open = (id: string, start: number) => ({ at: T, type: "outage", id, start, end: null });
    const close = (id: string, end: number) => ({ at: T + 60, type: "outage_end", id, end });
    const { lines } = await replayLines({
      events: [
        open("w100", T - 100 * H),
        open("w48", T - 48 * H),
        open("w48+1", T - 48 * H - 1),
        open("wEnd", T - 48 * H - 1),
        close("w100", T - 99 * H),
        close("w48", T - 1),
        close("w48+1", T - 1),
        close("wEnd", T),
        close("w100", T - 99 * H + 1),
      ],
    });
    expect(lines.slice(0, 4).map((l) => l.result)).to.deep.equal(["declared", "declared", "declared", "declared"]);
    expect(lines[4]).to.deep.equal({
      i: 4,
      result: "rejected",
      error:
        "outage w100 ended at 2026-10-06T21:00:00Z, before it was declared (2026-10-11T00:00:00Z), " +
        "and started at 2026-10-06T20:00:00Z, more than 48 h before that",
    });
    expect(lines[5]).to.deep.equal({ i: 5, result: "ok" });
    expect(lines[6]).to.include({ result: "rejected" });
    expect(lines[6].error).to.contain("2026-10-08T23:59:59Z, more than 48 h");
    // A window lasts through its end instant: ending at declared_at is ending while it lasted.
    expect(lines[7]).to.deep.equal({ i: 7, result: "ok" });
    // The rejected close changed nothing: the window is still open.
    expect(lines[8]).to.include({ result: "rejected" });
  });

  it("excuses through a window's end instant and not a second later; a declaration after a check-in in its second does not excuse it (V4.3)", async () => {
    // p at T0 + 10: deadline D = T0 + 10 + 3600 + 600.
    const D = T0 + 4210;
    const run = async (tail: unknown[]) =>
      (await replayLines({ events: [claim(T0, "a1", "o1"), checkin(T0 + 10, "a1", "k0"), ...tail] })).lines.slice(2);
    const window = (end: number | null) => ({ at: T0 + 100, type: "outage", id: "w1", start: T0 + 100, end });
    const excused = (arrival: number) => ({
      result: "counted",
      next_heartbeat_s: 3600,
      on_time: true,
      excused: true,
      credit: arrival - (T0 + 10),
    });
    const late = { result: "counted", next_heartbeat_s: 3600, on_time: false, excused: false, credit: 0 };
    // Window ending at the deadline: back by end + next_heartbeat_s is excused, one second later is late.
    expect((await run([window(D), checkin(D + 3600, "a1", "k1")]))[1]).to.deep.equal({ i: 3, ...excused(D + 3600) });
    expect((await run([window(D), checkin(D + 3601, "a1", "k1")]))[1]).to.deep.equal({ i: 3, ...late });
    // Window ending one second before the deadline: it does not hold it.
    expect((await run([window(D - 1), checkin(D + 1, "a1", "k1")]))[1]).to.deep.equal({ i: 3, ...late });
    // Declared in the check-in's second: before it in the timeline it excuses, after it it does not.
    const declaredAt = D + 100;
    const declare = { at: declaredAt, type: "outage", id: "w2", start: T0 + 100, end: null };
    expect((await run([declare, checkin(declaredAt, "a1", "k1")]))[1]).to.deep.equal({ i: 3, ...excused(declaredAt) });
    expect((await run([checkin(declaredAt, "a1", "k1"), declare]))[0]).to.deep.equal({ i: 2, ...late });
    // Closed in the check-in's second: before it the known end counts, after it the window was open when counted.
    const closeAt = { at: D + 3700, type: "outage_end", id: "w1", end: D };
    expect((await run([window(null), closeAt, checkin(D + 3700, "a1", "k1")]))[2]).to.deep.equal({ i: 4, ...late });
    expect((await run([window(null), checkin(D + 3700, "a1", "k1"), closeAt]))[1]).to.deep.equal({ i: 3, ...excused(D + 3700) });
  });

  it("answers rejected for what the service refuses, and changes nothing; exit 2 only for what is not an F2 document (F2)", async () => {
    const penalty = (id: string, fields: Record<string, unknown>) => ({
      at: T0 + 1,
      type: "penalty",
      id,
      agent: "a1",
      code: "rate_abuse",
      points: 20,
      days: 30,
      ...fields,
    });
    const { code, lines } = await replayLines({
      events: [
        claim(T0, "a1", "o1"),
        penalty("x1", { code: "spam" }),
        penalty("x2", { points: 9 }),
        penalty("x3", { points: 51 }),
        penalty("x4", { points: 10.5 }),
        penalty("x5", { points: -1 }),
        penalty("x6", { days: 29 }),
        penalty("x7", { days: 181 }),
        penalty("x8", { points: 10, days: 180 }),
        penalty("x9", { points: 50, days: 30 }),
        penalty("x8", {}),
        { at: T0 + 1, type: "penalty_revoked", id: "nope" },
        { at: T0 + 1, type: "proof", id: "p1", owner: "o1", kind: "passport" },
        { at: T0 + 1, type: "proof", id: "p2", owner: "o1", kind: "github" },
        { at: T0 + 1, type: "proof", id: "p2", owner: "o1", kind: "wallet" },
        { at: T0 + 1, type: "proof_removed", id: "nope" },
        { at: T0 + 1, type: "outage", id: "w1", start: T0, end: null },
        { at: T0 + 1, type: "outage", id: "w1", start: T0, end: null },
        { at: T0 + 1, type: "outage_end", id: "nope", end: T0 + 1 },
        score(T0 + 1, "a1"),
      ],
    });
    expect(code).to.equal(0);
    const results = lines.slice(1, 19).map((l) => (l.result === "rejected" ? l.error : l.result));
    expect(results).to.deep.equal([
      "penalty code must be one of rate_abuse, rule_violation, impersonation",
      "penalty points must be a whole number from 10 to 50, got 9",
      "penalty points must be a whole number from 10 to 50, got 51",
      "penalty points must be a whole number from 10 to 50, got 10.5",
      "penalty points must be a whole number from 10 to 50, got -1",
      "penalty days must be a whole number from 30 to 180, got 29",
      "penalty days must be a whole number from 30 to 180, got 181",
      "ok",
      "ok",
      "penalty x8 already exists",
      "penalty nope does not exist",
      'proof kind must be one of github, wallet, domain, erc8004, got "passport"',
      "ok",
      "proof p2 already exists",
      "proof nope does not exist",
      "declared",
      "outage w1 already exists",
      "outage nope does not exist",
    ]);
    expect(lines[19].components.integrity.value).to.equal(100 - 10 - 50);
    expect(lines[19].components.identity.value).to.equal(130);

    const notDocuments: Array<[unknown, string]> = [
      [{ events: [penalty("x", { days: undefined })] }, "events[0].days: expected a number, got nothing"],
      [{ events: [penalty("x", { points: "20" })] }, 'events[0].points: expected a number, got "20"'],
      [{ events: [{ at: T0, type: "proof", id: "p", owner: "o", kind: 5 }] }, "events[0].kind: expected a non-empty string, got 5"],
      [
        { events: [{ at: T0, type: "proof", id: "p", owner: "o", agent: null, kind: "domain" }] },
        "events[0].agent: expected a non-empty string, got null",
      ],
      [{ events: [{ at: T0, type: "spam" }] }, "events[0].type"],
    ];
    for (const [input, message] of notDocuments) {
      const result = await replayLines(input);
      expect(result.code, message).to.equal(2);
      expect(result.out).to.equal("");
      expect(result.err).to.contain(message);
    }
  });
});
