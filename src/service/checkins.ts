import { checkinDayDeltas, dayNumber, decideCheckin, toRfc3339, type CountedCheckin } from "../method";
import type { Clock } from "./clock";
import { ConflictError } from "./errors";
import { newEvent } from "./events/record";
import type { AgentRow, CheckinWrites, StoredCheckin } from "./ports";

/** What a check-in request gets back (V3). */
export type CheckinOutcome =
  | ({ type: "counted" } & CountedCheckin)
  | { type: "duplicate"; original: CountedCheckin }
  | { type: "refused"; retryAfterS: number };

/**
 * Throws when the caller may not check in for the agent (the API checks its key, replay only that it
 * exists). Called on each attempt, with the agent as that attempt read it: a re-claim between two
 * attempts changes the key.
 */
export type Authenticate = (agent: AgentRow | null) => asserts agent is AgentRow;

/**
 * Called once, the first time `Authenticate` held, before anything is decided: the API charges the
 * request to the agent's budget there (issue #33) and refuses a second request with the same key in flight.
 * It may throw to refuse the request.
 */
export type Admitted = () => Promise<void>;

/** Whether `authenticate` accepts the caller for `agent`. */
function authenticates(authenticate: Authenticate, agent: AgentRow | null): agent is AgentRow {
  try {
    authenticate(agent);
    return true;
  } catch {
    return false;
  }
}

/** The check-in use-case (V3–V4). */
export type Checkins = {
  /**
   * Decides and records one check-in request of `agentId` arriving now; resolves after the commit.
   * @param authenticate throws when the caller may not check in for the agent
   * @param admitted what the caller does once it is authenticated, before the check-in is decided
   */
  checkIn(agentId: string, idempotencyKey: string, authenticate: Authenticate, admitted?: Admitted): Promise<CheckinOutcome>;
};

/**
 * Attempts before a request gives up with a 409. Every failed write means another request of the
 * agent was counted, after which the rest are refused (V3.2) or duplicates, so two attempts are
 * the most a request needs in practice; the bound only keeps a fault from looping.
 */
const MAX_ATTEMPTS = 16;

/**
 * Takes check-ins (V3–V4). Each request reads its agent's state, decides with the method's rules,
 * and writes only if the agent is still in the state it decided on: the write locks the agent's
 * row and checks its claim and previous counted check-in, so two requests of one agent are counted
 * one after the other, never both on the same previous one (V3.2), and one idempotency key counts
 * once (V3.1). A request that finds the agent changed decides again on the new state. The answer
 * is given only after the commit. The state may be the agent as the store remembers it (a store that
 * keeps agents in memory saves a round trip a check-in): a counted check-in decided on it stands only
 * if its write finds the agent, its key, the windows and the absence of a duplicate as the decision
 * took them; every other answer (a refusal, a duplicate, a failed key) is given on a state read now.
 * @param deps.busy whether the service is busy now (V3.3: operator switch or overload)
 */
export function createCheckins(deps: { store: CheckinWrites; clock: Clock; busy: () => boolean }): Checkins {
  const { store, clock } = deps;

  async function checkIn(
    agentId: string,
    idempotencyKey: string,
    authenticate: Authenticate,
    admitted?: Admitted,
  ): Promise<CheckinOutcome> {
    // Whether the next state must be read now rather than taken from the store's memory (see CheckinState.cached).
    let fresh = false;
    let admittedYet = false;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const state = await store.checkinState(agentId, idempotencyKey, fresh);
      fresh = true;
      const agent = state.agent;
      if (!state.cached) authenticate(agent);
      // A key that fails against the agent as remembered is judged again against the agent as it is now.
      else if (!authenticates(authenticate, agent)) continue;
      // A change while it runs is caught as any other: the write below finds the agent changed and decides again.
      if (!admittedYet) {
        admittedYet = true;
        if (admitted) await admitted();
      }
      // V1: the arrival is read after the state it is decided on; a write on a state that has
      // changed since is refused, so the counted arrivals of one agent are in commit order.
      const arrival = clock.now();
      const last = agent.last;
      const decision = decideCheckin({ arrival, previous: last, duplicateOf: state.duplicate, windows: state.windows, busy: deps.busy() });
      // Only a counted check-in is decided on a remembered state (its write checks what the decision used): a
      // refusal may be a duplicate (V3.1) the memory cannot know of.
      if (state.cached && decision.type !== "counted") continue;
      // A duplicate is answered only once the check-in it repeats is known to be kept (see confirmDurable);
      // one read from a server that no longer has it is decided again on a fresh state.
      if (decision.type === "duplicate" && state.duplicate) {
        if (await store.confirmDurable(state.duplicate)) return decision;
        continue;
      }
      if (decision.type !== "counted") return decision;

      // The day of arrival chains from the previous check-in's link when that arrived the same day (docs/inputs.md).
      const arrivalDayDigest = last !== null && dayNumber(last.arrival) === dayNumber(arrival) ? last.dayDigest : "";
      const deltas = checkinDayDeltas(decision, last === null ? null : last.arrival, arrivalDayDigest);
      const expected = {
        claimId: agent.claimId,
        lastArrival: last === null ? null : last.arrival,
        lateDeadline: agent.lateDeadline,
        keyHash: agent.keyHash,
        windowsRevision: state.windowsRevision,
      };
      // The first counted check-in after an agent.late ends the lapse (issue #28), in the same write.
      const back =
        agent.lateDeadline === null
          ? undefined
          : newEvent("agent.back", agent.ownerId, arrival, {
              agentId,
              arrival: toRfc3339(arrival),
              missedDeadline: toRfc3339(agent.lateDeadline),
            });
      const stored: StoredCheckin = {
        agentId,
        claimId: agent.claimId,
        idempotencyKey,
        arrival,
        nextHeartbeatS: decision.nextHeartbeatS,
        onTime: decision.onTime,
        excused: decision.excused,
        credit: decision.credit,
      };
      // False when the agent changed since its state was read (another request of it was counted, it was
      // re-claimed, marked late or given a new key, a window was declared or closed, or the key had been counted):
      // decide again on the state as it is now.
      if (await store.commitCheckin(expected, stored, deltas, back)) return decision;
    }
    throw new ConflictError(
      "checkin_contended",
      `the agent changed under ${MAX_ATTEMPTS} attempts to count this check-in; retry with the same Idempotency-Key`,
    );
  }

  return { checkIn };
}
