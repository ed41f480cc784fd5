-- Events and signed webhooks (issue #28).
--
-- Written so that it can run on a schema that has some of it already (IF NOT EXISTS): a test of migration 012 runs
-- today's check-in path, which records events in its write, on the schema before it, and adds these ahead.
--
-- An event is stored in the transaction of the change that causes it, with the deliveries it is
-- owed (the outbox): a crash after the commit loses nothing, and a delivery worker sends each one
-- at least once, with the event's id as its `webhook-id` on every try. Events are kept for the
-- owners who have a webhook endpoint (enabled or not): they are what those endpoints are sent and
-- what GET /v1/events pages through, the last 30 days of them. An owner with no endpoint keeps none,
-- so the changes of the service (a daily recompute writes a score per agent) cost nothing for
-- owners nobody listens for.

CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id                    text PRIMARY KEY,
  owner_id              text NOT NULL REFERENCES owners (id),
  url                   text NOT NULL,
  description           text,
  -- The event types it is sent (src/service/events: the table of event modules).
  events                text[] NOT NULL,
  -- Its signing secret, encrypted (AES-256-GCM, src/service/webhooks/secret-box.ts): the service must
  -- sign with it, so a hash would not do; the key is not in the database.
  secret                text NOT NULL,
  -- The secret before the last rotation, which signs beside the new one until `previous_secret_until`.
  previous_secret       text,
  previous_secret_until bigint,
  created_at            bigint NOT NULL,
  updated_at            bigint NOT NULL,
  -- The first failed attempt of the failures in a row that are still going on (NULL after a success):
  -- an endpoint failing every attempt for 5 days is disabled.
  failing_since         bigint,
  disabled_at           bigint,
  disabled_reason       text
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_owner_idx ON webhook_endpoints (owner_id, id);

CREATE TABLE IF NOT EXISTS events (
  -- The order of events (keyset pages of GET /v1/events, newest first).
  seq        bigserial PRIMARY KEY,
  -- What receivers see: the payload's id and the `webhook-id` of every delivery of it.
  id         text NOT NULL UNIQUE DEFAULT ('evt_' || substr(md5(random()::text || clock_timestamp()::text), 1, 20)),
  owner_id   text NOT NULL REFERENCES owners (id),
  type       text NOT NULL,
  at         bigint NOT NULL,
  -- The event's `data` as JSON text (its type's schema), kept as written: webhook and API send the same bytes.
  data       text NOT NULL
);
CREATE INDEX IF NOT EXISTS events_owner_idx ON events (owner_id, seq);
-- Events older than 30 days are deleted (their deliveries and attempts with them).
CREATE INDEX IF NOT EXISTS events_at_idx ON events (at);

-- One delivery of one event to one endpoint. `due_at` is when a worker may take it: when it is
-- written, after a failed attempt's backoff, or when the lease of a worker that took it and never
-- finished ends (the process died: at least once). NULL once it is delivered or given up.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id           text PRIMARY KEY DEFAULT ('dlv_' || substr(md5(random()::text || clock_timestamp()::text), 1, 20)),
  event_seq    bigint NOT NULL REFERENCES events (seq) ON DELETE CASCADE,
  endpoint_id  text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  created_at   bigint NOT NULL,
  state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts     integer NOT NULL DEFAULT 0,
  due_at       bigint
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due_idx ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_event_idx ON webhook_deliveries (event_seq);

-- The delivery log: one row per attempt that finished (a worker that died mid-attempt left none).
CREATE TABLE IF NOT EXISTS webhook_attempts (
  seq          bigserial PRIMARY KEY,
  delivery_id  text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  endpoint_id  text NOT NULL,
  attempt      integer NOT NULL,
  at           bigint NOT NULL,
  -- The answer's status; NULL when there was none (a timeout, a refused or failed connection).
  status       integer,
  latency_ms   integer NOT NULL,
  error        text,
  -- At most 1 KiB of the answer's body.
  response     text NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, seq);
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery_idx ON webhook_attempts (delivery_id);

-- agent.late (V3.5): the deadline of the lapse an agent.late was sent for; cleared by the agent's next
-- counted check-in (agent.back) and by a claim. Not indexed: a counted check-in writes it, and an
-- index on it would make every check-in's update of its agent's row leave the heap page (migration 013).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS late_deadline bigint;

-- Deadlines (V3.5: arrival + next_heartbeat_s + 600) that passed since the last scan, found among the
-- check-ins that arrived about an hour or two before: a BRIN index, a few bytes per range of pages,
-- since check-ins are appended in arrival order. Nothing per agent is indexed, so a counted check-in
-- writes no index entry for it; the scan reads the pages of one minute's deadlines.
CREATE INDEX IF NOT EXISTS checkins_deadline_idx ON checkins USING brin ((arrival + next_heartbeat_s)) WITH (pages_per_range = 16, autosummarize = on);
