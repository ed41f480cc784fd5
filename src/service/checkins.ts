import { checkinDayDeltas, dayNumber, decideCheckin, type CountedCheckin } from "../method";
import type { Clock } from "./clock";
import { ConflictError } from "./errors";
import type { Awaitable } from "./awaitable";
import type { AgentRow, CheckinState, Store, StoredCheckin } from "./ports";

/** What a check-in request gets back (V3). */
export type CheckinOutcome =
  | ({ type: "counted" } & CountedCheckin)
  | { type: "duplicate"; original: CountedCheckin }
  | { type: "refused"; retryAfterS: number };

export type Checkins = ReturnType<typeof createCheckins>;

/**
 * Attempts before a request gives up with a 409. Every failed write means another request of the
 * agent was counted, after which the rest are refused (V3.2) or duplicates, so two attempts are
 * the most a request needs in practice; the bound only keeps a fault from looping.
 */
const MAX_ATTEMPTS = 16;

/** Throws when the caller may not check in for the agent (the API checks its key, replay only that it exists). */
type Authenticate = (agent: AgentRow | null) => asserts agent is AgentRow;

/**
 * Takes check-ins (V3–V4). Each request reads its agent's state, decides with the method's rules,
 * and writes only if the agent is still in the state it decided on: the write locks the agent's
 * row and checks its claim and previous counted check-in, so two requests of one agent are counted
 * one after the other, never both on the same previous one (V3.2), and one idempotency key counts
 * once (V3.1). A request that finds the agent changed decides again on the new state. The answer
 * is given only after the commit.
 * @param deps.busy whether the service is busy now (V3.3: operator switch or overload)
 */
export function createCheckins(deps: { store: Store; clock: Clock; busy: () => boolean }) {
  const { store, clock } = deps;

  /**
   * Decides and records one check-in request of `agentId` arriving now. With a store that answers
   * at once (the memory store of `vrai replay`), the whole check-in runs synchronously: no promise,
   * no turn of the event loop; with PostgreSQL it resolves after the commit.
   * @param authenticate throws when the caller may not check in for the agent
   */
  function checkIn(
    agentId: string,
    idempotencyKey: string,
    authenticate: Authenticate,
  ): Awaitable<CheckinOutcome> {
    return attempt(agentId, idempotencyKey, authenticate, 1);
  }

  // The steps are functions of the factory taking the request's parts as arguments, and a closure is
  // made only when a store answers with a promise: replay plays hundreds of thousands of check-ins a
  // second, where an object or a closure per check-in is most of the garbage (and tsx names every
  // named closure as it is made, with Object.defineProperty).
  function attempt(agentId: string, key: string, authenticate: Authenticate, n: number): Awaitable<CheckinOutcome> {
    if (n > MAX_ATTEMPTS) {
      throw new ConflictError("checkin_contended", `the agent changed under ${MAX_ATTEMPTS} attempts to count this check-in; retry with the same Idempotency-Key`);
    }
    const state = store.checkinState(agentId, key);
    return state instanceof Promise ? state.then((s) => decide(agentId, key, authenticate, n, s)) : decide(agentId, key, authenticate, n, state);
  }

  function decide(agentId: string, key: string, authenticate: Authenticate, n: number, state: CheckinState): Awaitable<CheckinOutcome> {
    const agent = state.agent;
    authenticate(agent);
    // V1: the arrival is read after the state it is decided on; a write on a state that has
    // changed since is refused, so the counted arrivals of one agent are in commit order.
    const arrival = clock.now();
    const last = agent.last;
    const decision = decideCheckin({ arrival, previous: last, duplicateOf: state.duplicate, windows: state.windows, busy: deps.busy() });
    if (decision.type !== "counted") return decision;

    // The day of arrival chains from the previous check-in's link when that arrived the same day (docs/inputs.md).
    const arrivalDayDigest = last !== null && dayNumber(last.arrival) === dayNumber(arrival) ? last.dayDigest : "";
    const deltas = checkinDayDeltas(decision, last === null ? null : last.arrival, arrivalDayDigest);
    const expected = { claimId: agent.claimId, lastArrival: last === null ? null : last.arrival };
    // A literal, not `{ ...counted, ... }`: an object spread with extra keys costs more than the rest of the check-in.
    const stored: StoredCheckin = {
      agentId, claimId: agent.claimId, idempotencyKey: key, arrival,
      nextHeartbeatS: decision.nextHeartbeatS, onTime: decision.onTime, excused: decision.excused, credit: decision.credit,
    };
    // When the write finds the agent changed (another request of it was counted, or it was re-claimed), decide again.
    const written = store.commitCheckin(expected, stored, deltas);
    if (written instanceof Promise) return written.then((ok) => (ok ? decision : attempt(agentId, key, authenticate, n + 1)));
    return written ? decision : attempt(agentId, key, authenticate, n + 1);
  }

  return { checkIn };
}
