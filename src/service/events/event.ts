/**
 * What an event module holds (issue #28): one kind of event the service tells owners of, in one place.
 * The table of events (`./kinds/index.ts`) has one module per type; the webhook routes (which types
 * an endpoint may ask for), the API document (`GET /v1/events` and the OpenAPI `webhooks`), the SDK's
 * types and the README's list are derived from it. An event is the same JSON everywhere (`EventEnvelope`):
 * the body of its webhook and an item of `GET /v1/events`.
 */
import type { z } from "zod";

/** Who is told of an event of a kind: the owner it concerns, or every owner (a declared outage concerns all). */
export type EventAudience = "owner" | "every owner";

/** The module of event type `T`, whose `data` is `D`. */
export type EventModule<T extends string = string, D extends z.ZodObject = z.ZodObject> = {
  readonly type: T;
  /** When it is sent and what it says, in a sentence or two, for the API document and the README. */
  readonly summary: string;
  readonly audience: EventAudience;
  /** Its `data`: what a receiver reads (camelCase, times in RFC 3339 as everywhere in the API). */
  readonly data: D;
  /** An example of its `data`, for the API document. */
  readonly example: z.input<D>;
};

/** Any event module, as code that works for every type sees it. */
export type AnyEventModule = EventModule<string, z.ZodObject>;

/** Declares an event module; the types of its data and example come from its schema. */
export const defineEvent = <const T extends string, D extends z.ZodObject>(module: EventModule<T, D>): EventModule<T, D> => module;

/** An event as a receiver gets it, from a webhook or from `GET /v1/events`: its id (the `webhook-id`), type, time and data. */
export type EventEnvelope = { id: string; type: string; timestamp: string; data: unknown };
