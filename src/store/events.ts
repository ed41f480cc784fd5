/**
 * Events in SQL (`EventsTx`, issue #28): each recorded for the owners who keep events (those with a
 * webhook endpoint), with a delivery for each enabled endpoint of its owner that asked for its type,
 * all in the statement the change's transaction runs: the outbox a delivery worker reads.
 */
import type { EventsTx, NewEvent } from "../service/ports";
import type { Queryable } from "./db";

/**
 * The CTEs that record the events of the CTE or table `source` (columns `owner_id`, null for every owner,
 * `type`, `at`, `data`): `<source>_events` (the rows, one per owner who keeps events) and
 * `<source>_deliveries` (one per enabled endpoint of that owner asking for the type, due at the event's time).
 * Part of a statement's WITH list, so that a hot path (a counted check-in) records its event in the write it makes anyway.
 */
export function recordEventsCtes(source: string): string {
  return `${source}_events AS (
  INSERT INTO events (owner_id, type, at, data)
  SELECT o.owner_id, s.type, s.at, s.data FROM ${source} s
  CROSS JOIN LATERAL (
    SELECT s.owner_id WHERE s.owner_id IS NOT NULL AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.owner_id = s.owner_id)
    UNION ALL
    SELECT DISTINCT w.owner_id FROM webhook_endpoints w WHERE s.owner_id IS NULL
  ) o
  RETURNING seq, owner_id, type, at
), ${source}_deliveries AS (
  INSERT INTO webhook_deliveries (event_seq, endpoint_id, created_at, due_at)
  SELECT e.seq, w.id, e.at, e.at FROM ${source}_events e
  JOIN webhook_endpoints w ON w.owner_id = e.owner_id AND w.disabled_at IS NULL AND e.type = ANY (w.events)
)`;
}

const RECORD_SQL = `WITH given AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS g (owner_id, type, at, data)
), ${recordEventsCtes("given")}
SELECT count(*)::int AS n FROM given_events`;

/** The events part of the store, its statements run by `q`. */
export function eventsIn(q: Queryable): EventsTx {
  return {
    async recordEvents(events: readonly NewEvent[]) {
      if (events.length === 0) return;
      await q.query(RECORD_SQL, [
        events.map((e) => e.ownerId),
        events.map((e) => e.type),
        events.map((e) => e.at),
        events.map((e) => e.data),
      ]);
    },
  };
}
