/**
 * Webhooks and events (issue #28): an owner's endpoints, their secrets, pings, delivery log and
 * redeliveries, and `GET /v1/events`, the same JSON the endpoints are sent. The event types, their
 * schemas and words come from the table of event modules (src/service/events/kinds).
 */
import { z } from "zod";
import { toRfc3339 } from "../method";
import { EVENT_ENVELOPE_SCHEMA, EVENT_MODULES, SUBSCRIBABLE_EVENT_TYPES } from "../service/events/kinds";
import type { Webhooks } from "../service/webhooks/webhooks";
import type { AttemptRow, WebhookEndpointRow } from "../store/webhooks";
import { nextCursorSchema, pageQuery, ROWS_PAGE } from "./page-query";
import { defineRoute, errorResponse as e, idSchema, type Route } from "./route";

const at = (t: number | null) => (t === null ? null : toRfc3339(t));
const subscribable = z.enum(SUBSCRIBABLE_EVENT_TYPES);

const webhookResponse = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(z.string()).describe("the event types it is sent (a ping goes to it whatever they are)"),
  enabled: z.boolean(),
  disabledAt: z.string().nullable(),
  disabledReason: z
    .string()
    .nullable()
    .describe("why it is disabled: its owner, a 410 Gone, or every try failing for 5 days; PATCH enabled: true enables it again"),
  failingSince: z
    .string()
    .nullable()
    .describe("the first of the failed tries in a row still going on (5 days of them disable it); null after a success"),
  previousSecretExpiresAt: z.string().nullable().describe("until when the secret before the last rotation signs beside the current one"),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const withSecret = webhookResponse.extend({
  secret: z.string().describe("the signing secret (whsec_...), shown this once: keep it where your receiver reads it"),
});

const example = {
  id: "whk_1c2d3e4f5a6b7c8d",
  url: "https://hooks.example.com/vrai",
  description: "alerts",
  events: ["agent.late", "agent.back", "score.changed"],
  enabled: true,
  disabledAt: null,
  disabledReason: null,
  failingSince: null,
  previousSecretExpiresAt: null,
  createdAt: "2026-11-02T10:00:00Z",
  updatedAt: "2026-11-02T10:00:00Z",
};
const secretExample = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

function webhookJson(w: WebhookEndpointRow): z.input<typeof webhookResponse> {
  return {
    id: w.id,
    url: w.url,
    description: w.description,
    events: w.events,
    enabled: w.disabledAt === null,
    disabledAt: at(w.disabledAt),
    disabledReason: w.disabledReason,
    failingSince: at(w.failingSince),
    previousSecretExpiresAt: at(w.previousSecretUntil),
    createdAt: toRfc3339(w.createdAt),
    updatedAt: toRfc3339(w.updatedAt),
  };
}

const attemptResponse = z.object({
  deliveryId: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  attempt: z.number().int().describe("1 for the first try of the delivery"),
  at: z.string(),
  status: z.number().int().nullable().describe("the receiver's status; null when none came (timeout, connection failed, address refused)"),
  latencyMs: z.number().int(),
  error: z.string().nullable(),
  response: z.string().describe("at most 1 KiB of the answer's body"),
  delivery: z.object({
    state: z.enum(["pending", "delivered", "failed"]),
    nextAttemptAt: z.string().nullable(),
  }),
});

const attemptJson = (a: AttemptRow): z.input<typeof attemptResponse> => ({
  deliveryId: a.deliveryId,
  eventId: a.eventId,
  eventType: a.eventType,
  attempt: a.attempt,
  at: toRfc3339(a.at),
  status: a.status,
  latencyMs: a.latencyMs,
  error: a.error,
  response: a.response,
  delivery: { state: a.state, nextAttemptAt: at(a.nextAttemptAt) },
});

const idParams = z.object({ id: idSchema });
/** A delivery is due now: the worker sends it within its poll interval. */
const queued = { description: "queued", schema: z.object({ queued: z.literal(true) }) };
const url = z
  .string()
  .min(1)
  .max(8192)
  .describe("https:// (http:// only to a loopback name under vrai dev); at most MAX_WEBHOOK_URL_LENGTH characters");
const description = z.string().trim().max(200);

/** The routes of webhooks and events. */
export function webhookRoutes(webhooks: Webhooks): Route[] {
  return [
    defineRoute({
      method: "post",
      path: "/v1/webhooks",
      operationId: "createWebhook",
      tag: "webhooks",
      auth: "owner",
      summary:
        "Add a webhook endpoint: a URL, the events it is sent and a description. Its signing secret (Standard Webhooks, whsec_...) is returned this once.",
      body: z.object({ url, events: z.array(subscribable).min(1), description: description.optional() }).strict(),
      bodyExample: { url: example.url, events: ["agent.late", "agent.back", "score.changed"], description: "alerts" },
      responses: {
        201: { description: "created", schema: withSecret, example: { ...example, secret: secretExample } },
        400: e("a field is not valid: a URL that is not https:// (webhook_url_invalid), an unknown event type"),
        401: e("no valid owner token"),
        409: e("limit_reached: as many endpoints as MAX_WEBHOOKS_PER_OWNER, or a URL longer than MAX_WEBHOOK_URL_LENGTH"),
        422: e("webhook_forbidden_address: the URL's host is, or resolves to, an address that is not public"),
      },
    }).handle(async ({ ownerId, body }) => {
      const { endpoint, secret } = await webhooks.create(ownerId, body);
      return { status: 201, body: { ...webhookJson(endpoint), secret } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/webhooks",
      operationId: "listWebhooks",
      tag: "webhooks",
      auth: "owner",
      summary: "Your webhook endpoints in id order, a page at a time (nextCursor).",
      query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({ webhooks: z.array(webhookResponse), nextCursor: nextCursorSchema }),
          example: { webhooks: [example], nextCursor: null },
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        401: e("no valid owner token"),
      },
    }).handle(async ({ ownerId, query }) => {
      const { items, nextCursor } = await webhooks.list(ownerId, query);
      return { status: 200, body: { webhooks: items.map(webhookJson), nextCursor } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/webhooks/:id",
      operationId: "getWebhook",
      tag: "webhooks",
      auth: "owner",
      summary: "One of your endpoints: whether it is enabled, and why not (a 410, or 5 days of failed tries).",
      params: idParams,
      responses: { 200: { description: "ok", schema: webhookResponse, example }, 404: e("no such webhook of yours") },
    }).handle(async ({ ownerId, params }) => ({ status: 200, body: webhookJson(await webhooks.get(ownerId, params.id)) })),
    defineRoute({
      method: "patch",
      path: "/v1/webhooks/:id",
      operationId: "updateWebhook",
      tag: "webhooks",
      auth: "owner",
      summary:
        "Change an endpoint's URL, events or description, or enable it again (enabled: true: the deliveries that waited go out) or disable it.",
      params: idParams,
      body: z
        .object({
          url: url.optional(),
          events: z.array(subscribable).min(1).optional(),
          description: description.nullable().optional(),
          enabled: z.boolean().optional(),
        })
        .strict()
        .refine((b) => Object.keys(b).length > 0, "name at least one of url, events, description, enabled"),
      bodyExample: { enabled: true },
      responses: {
        200: { description: "changed", schema: webhookResponse, example },
        400: e("a field is not valid"),
        404: e("no such webhook of yours"),
        409: e("limit_reached: a URL longer than MAX_WEBHOOK_URL_LENGTH"),
        422: e("webhook_forbidden_address"),
      },
    }).handle(async ({ ownerId, params, body }) => ({ status: 200, body: webhookJson(await webhooks.update(ownerId, params.id, body)) })),
    defineRoute({
      method: "delete",
      path: "/v1/webhooks/:id",
      operationId: "deleteWebhook",
      tag: "webhooks",
      auth: "owner",
      summary: "Delete an endpoint, with its deliveries and their log; answers the endpoint as it was.",
      params: idParams,
      responses: { 200: { description: "deleted", schema: webhookResponse, example }, 404: e("no such webhook of yours") },
    }).handle(async ({ ownerId, params }) => ({ status: 200, body: webhookJson(await webhooks.remove(ownerId, params.id)) })),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/:id/rotate-secret",
      operationId: "rotateWebhookSecret",
      tag: "webhooks",
      auth: "owner",
      summary:
        "A new signing secret, returned this once. For 24 hours every delivery is signed with both (two v1 signatures in webhook-signature), so " +
        "the receiver can switch without missing one.",
      params: idParams,
      body: z.object({}).strict(),
      responses: {
        200: {
          description: "rotated",
          schema: withSecret,
          example: { ...example, secret: secretExample, previousSecretExpiresAt: "2026-11-03T10:00:00Z" },
        },
        404: e("no such webhook of yours"),
      },
    }).handle(async ({ ownerId, params }) => {
      const { endpoint, secret } = await webhooks.rotateSecret(ownerId, params.id);
      return { status: 200, body: { ...webhookJson(endpoint), secret } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/:id/test",
      operationId: "testWebhook",
      tag: "webhooks",
      auth: "owner",
      summary: "Send a ping event to the endpoint (whatever events it asked for); it shows in its delivery log like any delivery.",
      params: idParams,
      body: z.object({}).strict(),
      responses: {
        202: queued,
        404: e("no such webhook of yours"),
        409: e("webhook_disabled: enable it first"),
      },
    }).handle(async ({ ownerId, params }) => {
      await webhooks.test(ownerId, params.id);
      return { status: 202, body: { queued: true } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/webhooks/:id/deliveries",
      operationId: "listWebhookDeliveries",
      tag: "webhooks",
      auth: "owner",
      summary:
        "The endpoint's delivery log: every finished try (event, attempt, time, status, latency, at most 1 KiB of the answer) and where its " +
        "delivery stands, newest first, a page at a time.",
      params: idParams,
      query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({ deliveries: z.array(attemptResponse), nextCursor: nextCursorSchema }),
          example: {
            deliveries: [
              {
                deliveryId: "dlv_4b3a29181706f5e4d3c2",
                eventId: "evt_7f08d4e23165651c4721",
                eventType: "agent.late",
                attempt: 1,
                at: "2026-11-02T10:10:04Z",
                status: 200,
                latencyMs: 84,
                error: null,
                response: "ok",
                delivery: { state: "delivered", nextAttemptAt: null },
              },
            ],
            nextCursor: null,
          },
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        404: e("no such webhook of yours"),
      },
    }).handle(async ({ ownerId, params, query }) => {
      const { items, nextCursor } = await webhooks.deliveries(ownerId, params.id, query);
      return { status: 200, body: { deliveries: items.map(attemptJson), nextCursor } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/webhooks/:id/deliveries/:deliveryId/redeliver",
      operationId: "redeliverWebhookDelivery",
      tag: "webhooks",
      auth: "owner",
      summary: "Send a delivery again, now: the same event, with the same webhook-id.",
      params: z.object({ id: idSchema, deliveryId: idSchema }),
      body: z.object({}).strict(),
      responses: {
        202: queued,
        404: e("no such webhook of yours, or no such delivery of it"),
        409: e("webhook_disabled: enable it first"),
      },
    }).handle(async ({ ownerId, params }) => {
      await webhooks.redeliver(ownerId, params.id, params.deliveryId);
      return { status: 202, body: { queued: true } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/events",
      operationId: "listEvents",
      tag: "webhooks",
      auth: "owner",
      summary:
        "Your events of the last 30 days, newest first, a page at a time: the same JSON your endpoints are sent, to catch up on missed " +
        "deliveries. Kept from your first webhook endpoint on.",
      query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({ events: z.array(EVENT_ENVELOPE_SCHEMA), nextCursor: nextCursorSchema }),
          example: {
            events: [
              {
                id: "evt_7f08d4e23165651c4721",
                type: "agent.late",
                timestamp: "2026-11-02T10:10:00Z",
                data: EVENT_MODULES["agent.late"].example,
              },
            ],
            nextCursor: null,
          },
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        401: e("no valid owner token"),
      },
    }).handle(async ({ ownerId, query }) => {
      const { items, nextCursor } = await webhooks.events(ownerId, query);
      return { status: 200, body: { events: items, nextCursor } };
    }),
  ];
}
