import { expect } from "chai";
import { nextDayDigest } from "./days";
import { playCheckins } from "./play";
import { dayStart } from "./time";

const T0 = dayStart("2026-11-02") + 22 * 3600;

describe("playing one agent's check-ins through the rules (V3, V10)", () => {
  it("answers a repeated key with its original, refuses under 1,200 s, and counts only what was counted", () => {
    const { decisions, counted } = playCheckins([
      { arrival: T0, key: "a" },
      { arrival: T0 + 600, key: "b" },
      { arrival: T0 + 700, key: "a" },
      { arrival: T0 + 3600 },
      { arrival: T0 + 3700, key: "b" },
    ]);
    expect(decisions.map((d) => d.type)).to.deep.equal(["counted", "refused", "duplicate", "counted", "refused"]);
    expect(decisions[2]).to.deep.equal({ type: "duplicate", original: counted[0] });
    // A request without a key is never anyone's duplicate.
    expect(counted.map((c) => c.arrival)).to.deep.equal([T0, T0 + 3600]);
    expect(counted[0]).to.deep.equal({ arrival: T0, nextHeartbeatS: 3600, onTime: null, excused: false, credit: 0 });
  });

  it("gives 7,200 s to a check-in while busy, 3,600 s otherwise (V3.3)", () => {
    const { counted } = playCheckins([{ arrival: T0, busy: true }, { arrival: T0 + 7800 }, { arrival: T0 + 9000, busy: false }]);
    expect(counted.map((c) => [c.nextHeartbeatS, c.onTime, c.credit])).to.deep.equal([
      [7200, null, 0],
      [3600, true, 7800],
      [3600, true, 1200],
    ]);
  });

  it("returns the days oldest first, each chained from its own first check-in (V10)", () => {
    const { days, counted } = playCheckins([{ arrival: T0 }, { arrival: T0 + 3600 }, { arrival: T0 + 7200 }]);
    expect(days.map((d) => [d.day, d.checkins, d.coverageS])).to.deep.equal([
      ["2026-11-02", 2, 7200],
      // An arrival exactly at midnight: its interval ends the day before.
      ["2026-11-03", 1, 0],
    ]);
    expect(days[0].digest).to.equal(nextDayDigest(nextDayDigest(null, counted[0]), counted[1]));
    expect(days[1].digest).to.equal(nextDayDigest(null, counted[2]));
  });
});
