/**
 * The table of events (issue #28): one module per type, and what the service derives from it (the
 * types an endpoint may ask for, the API document, the README's list). A new type is its module in
 * this folder, a line here, and the use-case that records it in the transaction of its change.
 */
import { z } from "zod";
import type { AnyEventModule } from "../event";
import { agentBack } from "./agent-back";
import { agentLate } from "./agent-late";
import { agentUnclaimed } from "./agent-unclaimed";
import { claimChanged } from "./claim-changed";
import { outageClosed } from "./outage-closed";
import { outageDeclared } from "./outage-declared";
import { penaltyAdded } from "./penalty-added";
import { penaltyRevoked } from "./penalty-revoked";
import { ping } from "./ping";
import { proofAdded } from "./proof-added";
import { proofCheckFailed } from "./proof-check-failed";
import { proofRemoved } from "./proof-removed";
import { scoreChanged } from "./score-changed";

/** Every event module, keyed by its type, in the order the README lists them. */
export const EVENT_MODULES = {
  "score.changed": scoreChanged,
  "agent.late": agentLate,
  "agent.back": agentBack,
  "proof.check_failed": proofCheckFailed,
  "proof.removed": proofRemoved,
  "proof.added": proofAdded,
  "penalty.added": penaltyAdded,
  "penalty.revoked": penaltyRevoked,
  "outage.declared": outageDeclared,
  "outage.closed": outageClosed,
  "claim.changed": claimChanged,
  "agent.unclaimed": agentUnclaimed,
  ping,
} as const satisfies { [T in string]: AnyEventModule & { readonly type: T } };

export type EventType = keyof typeof EVENT_MODULES;

/** The data of an event of type `T`, as its use-case gives it. */
export type EventData<T extends EventType> = z.input<(typeof EVENT_MODULES)[T]["data"]>;

/** Every type, in the table's order. */
export const EVENT_TYPES = Object.keys(EVENT_MODULES) as [EventType, ...EventType[]];

/** The types an endpoint may ask for: all but `ping`, which goes to an endpoint only when its owner tests it. */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((type) => type !== "ping") as [EventType, ...EventType[]];

/** The event of module `m` as receivers get it (`EventEnvelope`), with its data's schema. */
const envelopeOf = (m: AnyEventModule) =>
  z
    .object({
      id: z.string().describe("the event's id: the webhook-id of every try of its delivery"),
      type: z.literal(m.type),
      timestamp: z.string().describe("when it happened (V1): deliveries are not in order, this is"),
      data: m.data,
    })
    .meta({ title: m.type, description: m.summary });
const [first, ...others] = Object.values(EVENT_MODULES).map(envelopeOf);

/** An event as receivers get it, told apart by `type`: the body of its webhook and an item of `GET /v1/events`. */
export const EVENT_ENVELOPE_SCHEMA = z.discriminatedUnion("type", [first, ...others]);
