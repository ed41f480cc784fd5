/** Events as the use-cases record them (issue #28): built from their type's module, in the transaction of their change. */
import type { LatestScoreMove, NewEvent } from "../ports";
import { EVENT_MODULES, type EventData, type EventType } from "./kinds";
import { toRfc3339 } from "../../method";

/**
 * An event of `type` about `ownerId` (null for a type told to every owner) at `at`, its data checked
 * against its type's schema: a use-case that gives another shape fails its tests, not a receiver.
 * @example newEvent("penalty.revoked", "own_1", 1793613600, { penaltyId: "pen_1", agentId: "agt_1", reason: "appeal", revokedBy: "alice" })
 */
export function newEvent<T extends EventType>(type: T, ownerId: string | null, at: number, data: EventData<T>): NewEvent {
  const module = EVENT_MODULES[type];
  return { type, ownerId: module.audience === "every owner" ? null : ownerId, at, data: JSON.stringify(module.data.parse(data)) };
}

/** `score.changed` of each move whose total, band or state differs from the score it replaced (or that had none before it). */
export function scoreChangedEvents(moves: readonly LatestScoreMove[]): NewEvent[] {
  const events: NewEvent[] = [];
  for (const m of moves) {
    const p = m.previous;
    if (p !== null && p.total === m.current.total && p.band === m.current.band && p.state === m.current.state) continue;
    events.push(
      newEvent("score.changed", m.ownerId, m.at, {
        agentId: m.agentId,
        at: toRfc3339(m.at),
        trigger: m.trigger,
        ...m.current,
        previous: p,
      }),
    );
  }
  return events;
}
