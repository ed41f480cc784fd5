import { decideCheckin, type CheckinDecision, type CountedCheckin } from "./checkin";
import { applyCheckinToDays, type DayAggregate } from "./days";
import type { OutageWindow } from "./outage";

/**
 * Plays one agent's check-in requests since its latest claim through the V3–V4 rules and the day
 * aggregates, as the service does one request at a time. For tests, examples and benchmarks.
 * @param requests arrivals in time order, each with an optional idempotency key and busy flag
 * @example playCheckins([{ arrival: 0 }, { arrival: 3600 }]).days[0].creditS // 3600
 */
export function playCheckins(
  requests: ReadonlyArray<{ arrival: number; key?: string; busy?: boolean }>,
  windows: readonly OutageWindow[] = [],
): { decisions: CheckinDecision[]; days: DayAggregate[]; counted: CountedCheckin[] } {
  const days = new Map<string, DayAggregate>();
  const keys = new Map<string, CountedCheckin>();
  const decisions: CheckinDecision[] = [];
  const counted: CountedCheckin[] = [];
  let previous: CountedCheckin | null = null;
  for (const r of requests) {
    const duplicateOf = r.key === undefined ? null : (keys.get(r.key) ?? null);
    const decision = decideCheckin({ arrival: r.arrival, previous, duplicateOf, windows, busy: r.busy ?? false });
    decisions.push(decision);
    if (decision.type !== "counted") continue;
    const { type: _counted, ...checkin } = decision;
    applyCheckinToDays(days, checkin, previous === null ? null : previous.arrival);
    if (r.key !== undefined) keys.set(r.key, checkin);
    counted.push(checkin);
    previous = checkin;
  }
  // The map holds the days in day order: a counted check-in touches only days from its previous one's on.
  return { decisions, days: [...days.values()], counted };
}
