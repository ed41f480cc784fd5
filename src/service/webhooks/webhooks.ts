/**
 * What an owner does with webhooks (issue #28): endpoints (a URL, the events it is sent, a
 * description), their signing secrets (shown once, at creation and rotation; the old one signs beside
 * the new for 24 hours), a ping, the delivery log and redelivery, and the events themselves, read back.
 */
import type { z } from "zod";
import { toRfc3339 } from "../../method";
import type { EventRow, WebhookEndpointRow, WebhooksTx } from "../../store/webhooks";
import type { Clock } from "../clock";
import { ConflictError, NotFoundError } from "../errors";
import type { EventEnvelope } from "../events/event";
import { EVENT_ENVELOPE_SCHEMA } from "../events/kinds";
import { newEvent } from "../events/record";
import { keysetPage, parseKeyset, type CursorList, type KeysetPage } from "../keyset";
import { limitReached } from "../limits";
import type { EventsTx, Transactions } from "../ports";
import type { PageAsked } from "../reads";
import { generateId, ID_PATTERN } from "../secrets";
import { generateSigningSecret, type SecretBox } from "./secret-box";
import { checkEndpointUrl, type UrlPolicy } from "./url";
import type { AttemptRow } from "../../store/webhooks";

/** What one owner may keep (issue #28, like the other per-owner limits). */
export type WebhookLimits = {
  /** Endpoints of one owner (MAX_WEBHOOKS_PER_OWNER). */
  endpoints: number;
  /** Characters of an endpoint's URL (MAX_WEBHOOK_URL_LENGTH). */
  urlLength: number;
};

/** MAX_WEBHOOKS_PER_OWNER and MAX_WEBHOOK_URL_LENGTH when not configured. */
export const DEFAULT_WEBHOOK_LIMITS: WebhookLimits = { endpoints: 20, urlLength: 2048 };

/** How long a rotated secret goes on signing beside the new one. */
export const ROTATION_OVERLAP_S = 86_400;
/** How far back `GET /v1/events` reads, and how long events are kept. */
export const EVENTS_KEPT_S = 30 * 86_400;

/** An endpoint's settings, as its owner gives them. */
export type EndpointInput = { url: string; events: readonly string[]; description?: string | null };

export type Webhooks = {
  /** A new endpoint and its signing secret, which is never shown again. */
  create(ownerId: string, input: EndpointInput): Promise<{ endpoint: WebhookEndpointRow; secret: string }>;
  /** The owner's endpoints in id order, a page at a time. */
  list(ownerId: string, page: PageAsked): Promise<KeysetPage<WebhookEndpointRow>>;
  get(ownerId: string, id: string): Promise<WebhookEndpointRow>;
  /** Changes an endpoint; `enabled: true` enables a disabled one again (its waiting deliveries go out), `false` disables it. */
  update(ownerId: string, id: string, changes: Partial<EndpointInput> & { enabled?: boolean }): Promise<WebhookEndpointRow>;
  /** Deletes an endpoint with its deliveries and their log; returns it as it was. */
  remove(ownerId: string, id: string): Promise<WebhookEndpointRow>;
  /** A new signing secret, shown once; the previous one signs beside it until `previousSecretUntil`. */
  rotateSecret(ownerId: string, id: string): Promise<{ endpoint: WebhookEndpointRow; secret: string }>;
  /** Sends a `ping` to the endpoint, whatever events it asked for (a delivery like any other, in its log). */
  test(ownerId: string, id: string): Promise<void>;
  /** The endpoint's delivery log: its tries, newest first, a page at a time. */
  deliveries(ownerId: string, id: string, page: PageAsked): Promise<KeysetPage<AttemptRow>>;
  /** Sends a delivery of the endpoint again, with the same event and `webhook-id`. */
  redeliver(ownerId: string, id: string, deliveryId: string): Promise<void>;
  /** The owner's events of the last 30 days, newest first, a page at a time: what its endpoints were sent. */
  events(ownerId: string, page: PageAsked): Promise<KeysetPage<z.output<typeof EVENT_ENVELOPE_SCHEMA>>>;
};

/**
 * An event as receivers get it: the body of its webhook and an item of `GET /v1/events`, the same JSON.
 * @example eventEnvelope({ seq: 1, id: "evt_1", ownerId: "own_1", type: "ping", at: 0, data: '{"webhookId":"whk_1","message":"hi"}' })
 * // { id: "evt_1", type: "ping", timestamp: "1970-01-01T00:00:00Z", data: { webhookId: "whk_1", message: "hi" } }
 */
export function eventEnvelope(row: EventRow): EventEnvelope {
  return { id: row.id, type: row.type, timestamp: toRfc3339(row.at), data: JSON.parse(row.data) as unknown };
}

const SEQ_KEY = /^([1-9]\d{0,15})$/;
const ID_KEY = /^(.+)$/;
const LISTS = {
  endpoints: (ownerId: string): CursorList => ({ kind: "webhooks", of: ownerId }),
  attempts: (endpointId: string): CursorList => ({ kind: "webhook-deliveries", of: endpointId }),
  events: (ownerId: string): CursorList => ({ kind: "events", of: ownerId }),
};
const aSeq = ([seq]: string[]) => Number(seq);
const notFound = (id: string) => new NotFoundError("webhook_not_found", `webhook ${id} does not exist for this owner`);

/**
 * The webhooks of owners.
 * @param deps.box seals the signing secrets (secret-box.ts)
 * @param deps.urls where endpoints may point
 */
export function createWebhooks(deps: {
  repo: Transactions<WebhooksTx & EventsTx>;
  clock: Clock;
  box: SecretBox;
  urls: UrlPolicy;
  limits: WebhookLimits;
}): Webhooks {
  const { repo, clock, box } = deps;

  async function owned(tx: WebhooksTx, ownerId: string, id: string): Promise<WebhookEndpointRow> {
    const endpoint = ID_PATTERN.test(id) ? await tx.getEndpoint(id) : null;
    if (endpoint?.ownerId !== ownerId) throw notFound(id);
    return endpoint;
  }

  async function checkedUrl(url: string): Promise<string> {
    if (url.length > deps.limits.urlLength) {
      throw limitReached("characters in a webhook URL", deps.limits.urlLength, "MAX_WEBHOOK_URL_LENGTH", "use a shorter URL");
    }
    return checkEndpointUrl(url, deps.urls);
  }

  return {
    async create(ownerId, input) {
      const url = await checkedUrl(input.url);
      const secret = generateSigningSecret();
      const at = clock.now();
      const endpoint: WebhookEndpointRow = {
        id: generateId("whk"),
        ownerId,
        url,
        description: input.description ?? null,
        events: [...new Set(input.events)],
        secret: box.seal(secret),
        previousSecret: null,
        previousSecretUntil: null,
        createdAt: at,
        updatedAt: at,
        failingSince: null,
        disabledAt: null,
        disabledReason: null,
      };
      await repo.transaction(async (tx) => {
        // Locked: two creations of one owner at its limit are counted one after the other, so one is refused.
        if (!(await tx.lockOwner(ownerId))) throw new NotFoundError("owner_not_found", `owner ${ownerId} does not exist`);
        if ((await tx.countEndpoints(ownerId)) >= deps.limits.endpoints) {
          throw limitReached(
            "webhook endpoints",
            deps.limits.endpoints,
            "MAX_WEBHOOKS_PER_OWNER",
            "delete one first (DELETE /v1/webhooks/{id})",
          );
        }
        await tx.insertEndpoint(endpoint);
      });
      return { endpoint, secret };
    },
    async list(ownerId, { cursor, limit }) {
      const after =
        cursor === undefined
          ? undefined
          : parseKeyset(cursor, LISTS.endpoints(ownerId), ID_KEY, ([id]) => (ID_PATTERN.test(id) ? id : null));
      return keysetPage(await repo.read.listEndpoints(ownerId, { after, limit: limit + 1 }), limit, LISTS.endpoints(ownerId), (e) => [
        e.id,
      ]);
    },
    get: (ownerId, id) => owned(repo.read, ownerId, id),
    async update(ownerId, id, changes) {
      const url = changes.url === undefined ? undefined : await checkedUrl(changes.url);
      return repo.transaction(async (tx) => {
        const endpoint = await owned(tx, ownerId, id);
        const at = clock.now();
        const enable = changes.enabled === true && endpoint.disabledAt !== null;
        const disable = changes.enabled === false && endpoint.disabledAt === null;
        const updated: WebhookEndpointRow = {
          ...endpoint,
          url: url ?? endpoint.url,
          events: changes.events === undefined ? endpoint.events : [...new Set(changes.events)],
          description: changes.description === undefined ? endpoint.description : changes.description,
          updatedAt: at,
          ...(enable ? { disabledAt: null, disabledReason: null, failingSince: null } : {}),
          ...(disable ? { disabledAt: at, disabledReason: "disabled by its owner" } : {}),
        };
        await tx.updateEndpoint(updated, enable ? at : undefined);
        return updated;
      });
    },
    remove: (ownerId, id) =>
      repo.transaction(async (tx) => {
        const endpoint = await owned(tx, ownerId, id);
        await tx.deleteEndpoint(id);
        return endpoint;
      }),
    async rotateSecret(ownerId, id) {
      const secret = generateSigningSecret();
      const endpoint = await repo.transaction(async (tx) => {
        const current = await owned(tx, ownerId, id);
        const at = clock.now();
        const rotated: WebhookEndpointRow = {
          ...current,
          secret: box.seal(secret),
          previousSecret: current.secret,
          previousSecretUntil: at + ROTATION_OVERLAP_S,
          updatedAt: at,
        };
        await tx.updateEndpoint(rotated);
        return rotated;
      });
      return { endpoint, secret };
    },
    async test(ownerId, id) {
      await repo.transaction(async (tx) => {
        const endpoint = await owned(tx, ownerId, id);
        if (endpoint.disabledAt !== null) throw disabled(endpoint);
        const ping = newEvent("ping", ownerId, clock.now(), { webhookId: id, message: "a test of this endpoint, asked for by its owner" });
        await tx.recordEventFor(id, ownerId, ping);
      });
    },
    async deliveries(ownerId, id, { cursor, limit }) {
      await owned(repo.read, ownerId, id);
      const after = cursor === undefined ? undefined : parseKeyset(cursor, LISTS.attempts(id), SEQ_KEY, aSeq);
      return keysetPage(await repo.read.listAttempts(id, { after, limit: limit + 1 }), limit, LISTS.attempts(id), (a) => [a.seq]);
    },
    async redeliver(ownerId, id, deliveryId) {
      await repo.transaction(async (tx) => {
        const endpoint = await owned(tx, ownerId, id);
        if (endpoint.disabledAt !== null) throw disabled(endpoint);
        if (!ID_PATTERN.test(deliveryId) || !(await tx.redeliver(id, deliveryId, clock.now()))) {
          throw new NotFoundError("delivery_not_found", `delivery ${deliveryId} does not exist for webhook ${id}`);
        }
      });
    },
    async events(ownerId, { cursor, limit }) {
      const after = cursor === undefined ? undefined : parseKeyset(cursor, LISTS.events(ownerId), SEQ_KEY, aSeq);
      const rows = await repo.read.listEvents(ownerId, clock.now() - EVENTS_KEPT_S, { after, limit: limit + 1 });
      const page = keysetPage(rows, limit, LISTS.events(ownerId), (e) => [e.seq]);
      // Typed by their schemas (each event's data was checked against its type's when it was recorded).
      return { items: page.items.map((row) => EVENT_ENVELOPE_SCHEMA.parse(eventEnvelope(row))), nextCursor: page.nextCursor };
    },
  };
}

/** 409 of a disabled endpoint asked to deliver: enable it first. */
function disabled(endpoint: WebhookEndpointRow): ConflictError {
  return new ConflictError(
    "webhook_disabled",
    `webhook ${endpoint.id} is disabled (${endpoint.disabledReason ?? "disabled"}): enable it first (PATCH /v1/webhooks/${endpoint.id} with {"enabled": true})`,
  );
}
