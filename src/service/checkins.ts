import { applyCheckinToDays, coverageByDay, decideCheckin, deadlineOf, utcDay, type CountedCheckin, type DayAggregate } from "../method";
import type { Clock } from "./clock";
import { NotFoundError } from "./errors";
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
      const agent = await tx.getAgent(agentId, { lock: true });
      authenticate(agent);
      // V1: the arrival is read once the agent is locked, so arrivals of one agent are in commit order.
      const arrival = clock.now();
      const duplicate = await tx.findCheckinByKey(agentId, idempotencyKey);
      const previous: CountedCheckin | null = agent.last && { ...agent.last, onTime: null, excused: false, credit: 0 };
      const windows = previous ? await tx.outagesFor(arrival, deadlineOf(previous)) : [];
      const decision = decideCheckin({ arrival, previous, duplicateOf: duplicate, windows, busy: deps.busy() });
      if (decision.type !== "counted") return decision;

      const { type: _counted, ...counted } = decision;
      const touched = previous && counted.onTime ? coverageByDay(previous.arrival, arrival).map((p) => p.day) : [];
      const days = new Map<string, DayAggregate>();
      for (const d of await tx.getDays(agentId, agent.claimId, [...touched, utcDay(arrival)])) days.set(d.day, d);
      const written = applyCheckinToDays(days, counted, previous?.arrival ?? null);
      await tx.recordCheckin({ ...counted, agentId, claimId: agent.claimId, idempotencyKey }, written);
      return decision;
    });
  }

  /** The previous counted check-in of an agent, for `GET` of its state. */
  async function lastCheckin(agentId: string): Promise<AgentRow["last"]> {
    const agent = await store.read.getAgent(agentId);
    if (!agent) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    return agent.last;
  }

  return { checkIn, lastCheckin };
}
