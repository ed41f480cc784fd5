/**
 * Webhook endpoints, their deliveries and attempts, the events an owner reads back, and the scan of
 * passed check-in deadlines (issue #28), in SQL on PostgreSQL or PGlite. SQL only: the webhooks
 * service (src/service/webhooks) decides what to write. Its transactions also record events
 * (`EventsTx`, src/store/events.ts), so a change and its events commit together.
 */
import { GRACE_S } from "../method";
import type { EventsTx, PageRequest, Transactions } from "../service/ports";
import type { Db, Queryable } from "./db";
import { eventsIn } from "./events";
import { count, many, one } from "./queries";

/** An endpoint as stored; its secrets as the service sealed them (never the secret itself). */
export type WebhookEndpointRow = {
  id: string;
  ownerId: string;
  url: string;
  description: string | null;
  events: string[];
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: number | null;
  createdAt: number;
  updatedAt: number;
  failingSince: number | null;
  disabledAt: number | null;
  disabledReason: string | null;
};

/** A stored event, its data as the JSON text it was recorded with. */
export type EventRow = { seq: number; id: string; ownerId: string; type: string; at: number; data: string };

/** A delivery a worker took: which try it is, the event, and where and with what it is signed. */
export type TakenDelivery = {
  deliveryId: string;
  attempt: number;
  event: EventRow;
  endpoint: Pick<WebhookEndpointRow, "id" | "url" | "secret" | "previousSecret" | "previousSecretUntil">;
};

/** What the log keeps of a finished try of a delivery. */
type TryFields = {
  deliveryId: string;
  attempt: number;
  at: number;
  /** The answer's status; null when there was none. */
  status: number | null;
  latencyMs: number;
  error: string | null;
  /** At most 1 KiB of the answer's body. */
  response: string;
};

/** One finished try, as the delivery log keeps it. */
export type AttemptRow = TryFields & {
  seq: number;
  eventId: string;
  eventType: string;
  /** Where its delivery stands now. */
  state: "pending" | "delivered" | "failed";
  nextAttemptAt: number | null;
};

/** What a try's outcome does, as the service decided it. */
export type AttemptRecord = TryFields & {
  /** The delivery now: delivered, due again at `dueAt`, or given up. */
  next: { state: "delivered" } | { state: "pending"; dueAt: number } | { state: "failed" };
  /** Disables the endpoint at once with this reason (410 Gone). */
  disable: string | null;
  /** Disables the endpoint when it has failed every try since this instant or before, with `failingReason`. */
  failingLimit: { since: number; reason: string };
};

/** A lapse the deadline scan marked: the agent, its owner, its previous counted check-in and the deadline that passed (V3.5). */
export type Lapse = { agentId: string; ownerId: string; lastArrival: number; deadline: number };

/** The statements of the webhooks service. */
export type WebhooksTx = {
  /** Locks the owner's row (its per-owner limits) until the transaction ends; false when there is no such owner. */
  lockOwner(ownerId: string): Promise<boolean>;
  countEndpoints(ownerId: string): Promise<number>;
  insertEndpoint(row: WebhookEndpointRow): Promise<void>;
  getEndpoint(id: string): Promise<WebhookEndpointRow | null>;
  /** The owner's endpoints in id order, a page after an id. */
  listEndpoints(ownerId: string, page: PageRequest<string>): Promise<WebhookEndpointRow[]>;
  /** Writes the endpoint's fields as given; when it is enabled again, its pending deliveries are due at `now`. */
  updateEndpoint(row: WebhookEndpointRow, reenabledAt?: number): Promise<void>;
  /** Deletes the endpoint with its deliveries and attempts; false when there was none. */
  deleteEndpoint(id: string): Promise<boolean>;
  /** Records an event of the endpoint's owner with one delivery, to that endpoint only, due at its time (a ping). */
  recordEventFor(endpointId: string, ownerId: string, event: { type: string; at: number; data: string }): Promise<void>;
  /**
   * Takes up to `limit` deliveries due at `now` of enabled endpoints, each leased until `leaseUntil` (a
   * worker that never finishes leaves it due then, for the next try, with the same event id) and counted as
   * a try. `SKIP LOCKED`: workers of several instances take different deliveries.
   */
  takeDue(now: number, leaseUntil: number, limit: number): Promise<TakenDelivery[]>;
  /** Logs a finished try and applies its outcome, unless another worker took the delivery since (its lease ended). */
  finishAttempt(record: AttemptRecord): Promise<void>;
  /** The endpoint's delivery log, newest first, a page after an attempt's `seq`. */
  listAttempts(endpointId: string, page: PageRequest<number>): Promise<AttemptRow[]>;
  /** Makes a delivery of the endpoint due again at `now` (the same event and id); false when the endpoint has no such delivery. */
  redeliver(endpointId: string, deliveryId: string, now: number): Promise<boolean>;
  /** The owner's events since `since`, newest first, a page before an event's `seq`. */
  listEvents(ownerId: string, since: number, page: PageRequest<number>): Promise<EventRow[]>;
  /** Deletes up to `limit` events older than `before` (their deliveries and attempts with them); returns how many. */
  deleteEventsBefore(before: number, limit: number): Promise<number>;
  /**
   * Marks late the agents whose deadline (V3.5) is in `(from, to]` and still ahead of their latest counted
   * check-in, whose owner keeps events, not marked for that deadline already, and whose deadline no window
   * declared by `to` covers (V4); returns the lapses marked. Found through the check-ins' deadline index.
   */
  markLapses(from: number, to: number, nextHeartbeats: readonly number[]): Promise<Lapse[]>;
};

type EndpointRecord = {
  id: string;
  owner_id: string;
  url: string;
  description: string | null;
  events: string[];
  secret: string;
  previous_secret: string | null;
  previous_secret_until: number | null;
  created_at: number;
  updated_at: number;
  failing_since: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
};
const ENDPOINT_COLUMNS =
  "id, owner_id, url, description, events, secret, previous_secret, previous_secret_until, created_at, updated_at, failing_since, disabled_at, disabled_reason";

const endpointFrom = (r: EndpointRecord): WebhookEndpointRow => ({
  id: r.id,
  ownerId: r.owner_id,
  url: r.url,
  description: r.description,
  events: r.events,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousSecretUntil: r.previous_secret_until,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  failingSince: r.failing_since,
  disabledAt: r.disabled_at,
  disabledReason: r.disabled_reason,
});

type EventRecord = { seq: number; id: string; owner_id: string; type: string; at: number; data: string };
const eventFrom = (r: EventRecord): EventRow => ({ seq: r.seq, id: r.id, ownerId: r.owner_id, type: r.type, at: r.at, data: r.data });

const TAKE_SQL = `WITH due AS (
  SELECT d.id FROM webhook_deliveries d
  WHERE d.due_at <= $1 AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.id = d.endpoint_id AND w.disabled_at IS NULL)
  ORDER BY d.due_at LIMIT $3 FOR UPDATE OF d SKIP LOCKED
), taken AS (
  UPDATE webhook_deliveries d SET due_at = $2, attempts = d.attempts + 1 FROM due WHERE d.id = due.id
  RETURNING d.id, d.attempts, d.event_seq, d.endpoint_id
)
SELECT t.id AS delivery_id, t.attempts, e.seq, e.id, e.owner_id, e.type, e.at, e.data,
  w.id AS endpoint_id, w.url, w.secret, w.previous_secret, w.previous_secret_until
FROM taken t JOIN events e ON e.seq = t.event_seq JOIN webhook_endpoints w ON w.id = t.endpoint_id`;

/**
 * A finished try: the delivery moves on only if this worker still holds it (its try count unchanged);
 * the attempt is logged; the endpoint's run of failures starts or ends, and it is disabled at once
 * (`$11`, a 410) or once it has failed every try since `$12` or earlier. A success writes the endpoint's
 * row only to end a run of failures, so deliveries to one endpoint do not queue on its row.
 */
const FINISH_SQL = `WITH d AS (
  UPDATE webhook_deliveries SET state = $3, due_at = $4 WHERE id = $1 AND attempts = $2 RETURNING id, endpoint_id
), logged AS (
  INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempt, at, status, latency_ms, error, response)
  SELECT id, endpoint_id, $2, $5, $6, $7, $8, $9 FROM d
)
UPDATE webhook_endpoints w SET
  failing_since = CASE WHEN $10::boolean THEN NULL ELSE coalesce(w.failing_since, $5) END,
  disabled_at = CASE WHEN w.disabled_at IS NULL AND NOT $10::boolean AND ($11::text IS NOT NULL OR coalesce(w.failing_since, $5) <= $12)
    THEN $5 ELSE w.disabled_at END,
  disabled_reason = CASE WHEN w.disabled_at IS NULL AND NOT $10::boolean AND ($11::text IS NOT NULL OR coalesce(w.failing_since, $5) <= $12)
    THEN coalesce($11::text, $13::text) ELSE w.disabled_reason END
FROM d WHERE w.id = d.endpoint_id AND (NOT $10::boolean OR w.failing_since IS NOT NULL)
RETURNING w.id, w.disabled_at = $5 AS disabled_now`;

/**
 * Lapses (V3.5): each agent whose latest counted check-in (the agent's `last_arrival`, of its claim) has
 * its deadline in ($1, $2], found by the check-ins' BRIN index on `arrival + next_heartbeat_s`; claimed (not
 * unclaimed, issue #29), of an owner with an endpoint; not marked for that deadline; no window declared by $2 covering it (V4.2: windows that
 * touch count as one, and a point of their union is inside one of them). The mark is the compare-and-set a
 * counted check-in also makes (its row locked, its previous check-in unchanged): of a scan and a check-in
 * of one agent, the second sees the first.
 */
const LAPSES_SQL = `WITH passed AS (
  SELECT c.agent_id, c.claim_id, c.arrival, c.arrival + c.next_heartbeat_s + ${GRACE_S} AS deadline FROM checkins c
  WHERE c.arrival + c.next_heartbeat_s > $1::bigint - ${GRACE_S} AND c.arrival + c.next_heartbeat_s <= $2::bigint - ${GRACE_S}
    AND c.arrival >= $1::bigint - ${GRACE_S} - $3::bigint AND c.arrival <= $2::bigint - ${GRACE_S} - $4::bigint
)
UPDATE agents a SET late_deadline = p.deadline FROM passed p
WHERE a.id = p.agent_id AND a.claim_id = p.claim_id AND a.last_arrival = p.arrival AND a.released_at IS NULL
  AND a.late_deadline IS DISTINCT FROM p.deadline
  AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.owner_id = a.owner_id)
  AND NOT EXISTS (
    SELECT 1 FROM outages o WHERE o.declared_at <= $2 AND o.start_at <= p.deadline AND (o.end_at IS NULL OR o.end_at >= p.deadline)
  )
RETURNING a.id, a.owner_id, p.arrival, p.deadline`;

/** The webhooks part of the store, its statements run by `q`. */
export function webhooksIn(q: Queryable): WebhooksTx {
  return {
    lockOwner: async (ownerId) => (await q.query("SELECT 1 FROM owners WHERE id = $1 FOR NO KEY UPDATE", [ownerId])).rows.length > 0,
    countEndpoints: (ownerId) => count(q, "SELECT count(*)::int AS n FROM webhook_endpoints WHERE owner_id = $1", [ownerId]),
    async insertEndpoint(r) {
      await q.query(`INSERT INTO webhook_endpoints (${ENDPOINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, [
        r.id,
        r.ownerId,
        r.url,
        r.description,
        r.events,
        r.secret,
        r.previousSecret,
        r.previousSecretUntil,
        r.createdAt,
        r.updatedAt,
        r.failingSince,
        r.disabledAt,
        r.disabledReason,
      ]);
    },
    getEndpoint: (id) => one(q, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1`, [id], endpointFrom),
    listEndpoints: (ownerId, page) =>
      many(
        q,
        `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE owner_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
        [ownerId, page.after ?? "", page.limit],
        endpointFrom,
      ),
    async updateEndpoint(r, reenabledAt) {
      await q.query(
        `UPDATE webhook_endpoints SET url = $2, description = $3, events = $4, secret = $5, previous_secret = $6, previous_secret_until = $7,
           updated_at = $8, failing_since = $9, disabled_at = $10, disabled_reason = $11 WHERE id = $1`,
        [
          r.id,
          r.url,
          r.description,
          r.events,
          r.secret,
          r.previousSecret,
          r.previousSecretUntil,
          r.updatedAt,
          r.failingSince,
          r.disabledAt,
          r.disabledReason,
        ],
      );
      if (reenabledAt !== undefined) {
        await q.query("UPDATE webhook_deliveries SET due_at = $2 WHERE endpoint_id = $1 AND state = 'pending'", [r.id, reenabledAt]);
      }
    },
    // Its deliveries and their attempts go with it (ON DELETE CASCADE).
    deleteEndpoint: async (id) => (await q.query("DELETE FROM webhook_endpoints WHERE id = $1", [id])).rowCount > 0,
    async recordEventFor(endpointId, ownerId, event) {
      await q.query(
        `WITH e AS (INSERT INTO events (owner_id, type, at, data) VALUES ($2, $3, $4, $5) RETURNING seq, at)
         INSERT INTO webhook_deliveries (event_seq, endpoint_id, created_at, due_at) SELECT seq, $1, at, at FROM e`,
        [endpointId, ownerId, event.type, event.at, event.data],
      );
    },
    takeDue: (now, leaseUntil, limit) =>
      many(
        q,
        TAKE_SQL,
        [now, leaseUntil, limit],
        (
          r: EventRecord & {
            delivery_id: string;
            attempts: number;
            endpoint_id: string;
            url: string;
            secret: string;
            previous_secret: string | null;
            previous_secret_until: number | null;
          },
        ): TakenDelivery => ({
          deliveryId: r.delivery_id,
          attempt: r.attempts,
          event: eventFrom(r),
          endpoint: {
            id: r.endpoint_id,
            url: r.url,
            secret: r.secret,
            previousSecret: r.previous_secret,
            previousSecretUntil: r.previous_secret_until,
          },
        }),
      ),
    async finishAttempt(a) {
      const dueAt = a.next.state === "pending" ? a.next.dueAt : null;
      const { rows } = await q.query<{ id: string; disabled_now: boolean }>(FINISH_SQL, [
        a.deliveryId,
        a.attempt,
        a.next.state,
        dueAt,
        a.at,
        a.status,
        a.latencyMs,
        a.error,
        a.response,
        a.next.state === "delivered",
        a.disable,
        a.failingLimit.since,
        a.failingLimit.reason,
      ]);
      // A disabled endpoint's pending deliveries wait, off the due index, until it is enabled again.
      if (rows[0]?.disabled_now) {
        await q.query("UPDATE webhook_deliveries SET due_at = NULL WHERE endpoint_id = $1 AND state = 'pending'", [rows[0].id]);
      }
    },
    listAttempts: (endpointId, page) =>
      many(
        q,
        `SELECT a.seq, a.delivery_id, e.id AS event_id, e.type AS event_type, a.attempt, a.at, a.status, a.latency_ms, a.error, a.response,
           d.state, d.due_at
         FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN events e ON e.seq = d.event_seq
         WHERE a.endpoint_id = $1 AND a.seq < $2 ORDER BY a.seq DESC LIMIT $3`,
        [endpointId, page.after ?? Number.MAX_SAFE_INTEGER, page.limit],
        (r: {
          seq: number;
          delivery_id: string;
          event_id: string;
          event_type: string;
          attempt: number;
          at: number;
          status: number | null;
          latency_ms: number;
          error: string | null;
          response: string;
          state: AttemptRow["state"];
          due_at: number | null;
        }): AttemptRow => ({
          seq: r.seq,
          deliveryId: r.delivery_id,
          eventId: r.event_id,
          eventType: r.event_type,
          attempt: r.attempt,
          at: r.at,
          status: r.status,
          latencyMs: r.latency_ms,
          error: r.error,
          response: r.response,
          state: r.state,
          nextAttemptAt: r.state === "pending" ? r.due_at : null,
        }),
      ),
    redeliver: async (endpointId, deliveryId, now) =>
      (
        await q.query("UPDATE webhook_deliveries SET state = 'pending', due_at = $3 WHERE id = $2 AND endpoint_id = $1", [
          endpointId,
          deliveryId,
          now,
        ])
      ).rowCount > 0,
    listEvents: (ownerId, since, page) =>
      many(
        q,
        "SELECT seq, id, owner_id, type, at, data FROM events WHERE owner_id = $1 AND at >= $2 AND seq < $3 ORDER BY seq DESC LIMIT $4",
        [ownerId, since, page.after ?? Number.MAX_SAFE_INTEGER, page.limit],
        eventFrom,
      ),
    deleteEventsBefore: async (before, limit) =>
      (await q.query("DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE at < $1 ORDER BY at LIMIT $2)", [before, limit]))
        .rowCount,
    async markLapses(from, to, nextHeartbeats) {
      // The arrivals whose deadline can fall in (from, to]: bounded by the longest and shortest next_heartbeat_s (V3.3).
      const { rows } = await q.query<{ id: string; owner_id: string; arrival: number; deadline: number }>(LAPSES_SQL, [
        from,
        to,
        Math.max(...nextHeartbeats),
        Math.min(...nextHeartbeats),
      ]);
      return rows.map((r) => ({ agentId: r.id, ownerId: r.owner_id, lastArrival: r.arrival, deadline: r.deadline }));
    },
  };
}

/** The webhooks repository on `db`: its statements, and events, in one transaction or outside one. */
export function createWebhookRepository(db: Db): Transactions<WebhooksTx & EventsTx> {
  return {
    transaction: (fn) => db.transaction((q) => fn({ ...webhooksIn(q), ...eventsIn(q) })),
    read: { ...webhooksIn(db), ...eventsIn(db) },
  };
}
