import { applyCheckinToDays, dayName, dayNumber, decideCheckin, deadlineOf, type CountedCheckin, type DayAggregate, type OutageWindow } from "../method";

const NO_WINDOWS: readonly OutageWindow[] = [];
import type { Clock } from "./clock";
import type { AgentRow, Store } from "./ports";

/** What a check-in request gets back (V3). */
export type CheckinOutcome =
  | ({ type: "counted" } & CountedCheckin)
  | { type: "duplicate"; original: CountedCheckin }
  | { type: "refused"; retryAfterS: number };

export type Checkins = ReturnType<typeof createCheckins>;

/**
 * Takes check-ins (V3–V4): the agent's row is locked for the whole decision, so two requests of
 * one agent are decided one after the other, and the answer is given only after the commit.
 * @param deps.busy whether the service is busy now (V3.3: operator switch or overload)
 * @param deps.authenticate checks the caller may check in for this agent, on the locked row
 */
export function createCheckins(deps: { store: Store; clock: Clock; busy: () => boolean }) {
  const { store, clock } = deps;

  /**
   * Decides and records one check-in request of `agentId` arriving now.
   * @param authenticate throws when the caller may not check in for the agent (given the locked row)
   */
  async function checkIn(
    agentId: string,
    idempotencyKey: string,
    authenticate: (agent: AgentRow | null) => asserts agent is AgentRow,
  ): Promise<CheckinOutcome> {
    return store.transaction(async (tx) => {
      // Issued together (one round trip on a pipelining store); the key is looked up by a statement of
      // its own that runs once the lock is held. Its answer is not used unless the caller authenticates.
      const [agent, duplicate] = await Promise.all([tx.getAgent(agentId, { lock: true }), tx.findCheckinByKey(agentId, idempotencyKey)]);
      authenticate(agent);
      // V1: the arrival is read once the agent is locked, so arrivals of one agent are in commit order.
      const arrival = clock.now();
      const last = agent.last;
      const previous: CountedCheckin | null = last === null ? null : { arrival: last.arrival, nextHeartbeatS: last.nextHeartbeatS, onTime: null, excused: false, credit: 0 };
      const windows = previous === null ? NO_WINDOWS : await tx.outagesFor(arrival, deadlineOf(previous));
      const decision = decideCheckin({ arrival, previous, duplicateOf: duplicate, windows, busy: deps.busy() });
      if (decision.type !== "counted") return decision;

      const counted: CountedCheckin = {
        arrival, nextHeartbeatS: decision.nextHeartbeatS, onTime: decision.onTime, excused: decision.excused, credit: decision.credit,
      };
      // V10: an on-time check-in covers the days from the previous arrival's to its own; otherwise only its own day changes.
      const firstDay = previous !== null && counted.onTime ? dayNumber(previous.arrival) : dayNumber(arrival);
      const wanted: string[] = [];
      for (let d = firstDay, lastDay = dayNumber(arrival); d <= lastDay; d++) wanted.push(dayName(d));
      const days = new Map<string, DayAggregate>();
      for (const d of await tx.getDays(agentId, agent.claimId, wanted)) days.set(d.day, d);
      const written = applyCheckinToDays(days, counted, previous === null ? null : previous.arrival);
      await tx.recordCheckin({ ...counted, agentId, claimId: agent.claimId, idempotencyKey }, written);
      return decision;
    });
  }

  return { checkIn };
}
