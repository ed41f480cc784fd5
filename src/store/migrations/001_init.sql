-- Vrai service schema. Times are Unix seconds (bigint); days are 'YYYY-MM-DD' (UTC, METHOD V1).

CREATE TABLE owners (
  id          text PRIMARY KEY,
  token_hash  text NOT NULL,
  created_at  bigint NOT NULL
);

CREATE TABLE agents (
  id                    text PRIMARY KEY,
  name                  text,
  owner_id              text NOT NULL REFERENCES owners (id),
  claim_id              bigint NOT NULL,
  claimed_at            bigint NOT NULL,
  key_hash              text NOT NULL,
  -- V3.4: the previous counted check-in since the latest claim (NULL right after a claim).
  last_arrival          bigint,
  last_next_heartbeat_s integer,
  created_at            bigint NOT NULL
);
CREATE INDEX agents_owner_idx ON agents (owner_id);

-- V2: every claim, re-claim and operator transfer, kept forever.
CREATE TABLE claims (
  id          bigserial PRIMARY KEY,
  agent_id    text NOT NULL REFERENCES agents (id),
  owner_id    text NOT NULL REFERENCES owners (id),
  kind        text NOT NULL CHECK (kind IN ('claim', 'reclaim', 'transfer')),
  claimed_at  bigint NOT NULL
);

-- V3: counted check-ins only (a refused request leaves nothing, V3.1-2).
CREATE TABLE checkins (
  id               bigserial PRIMARY KEY,
  agent_id         text NOT NULL REFERENCES agents (id),
  claim_id         bigint NOT NULL,
  idempotency_key  text NOT NULL,
  arrival          bigint NOT NULL,
  next_heartbeat_s integer NOT NULL,
  on_time          boolean,
  excused          boolean NOT NULL,
  credit           integer NOT NULL,
  UNIQUE (agent_id, idempotency_key)
);
CREATE INDEX checkins_agent_arrival_idx ON checkins (agent_id, arrival);

-- Per agent, per claim, per UTC day aggregates kept as check-ins are counted (V5, V10),
-- so recomputes never rescan raw check-ins. `digest` chains the day's check-ins (docs/inputs.md).
CREATE TABLE agent_days (
  agent_id    text NOT NULL REFERENCES agents (id),
  claim_id    bigint NOT NULL,
  day         text NOT NULL,
  checkins    integer NOT NULL DEFAULT 0,
  on_time     integer NOT NULL DEFAULT 0,
  credit_s    bigint NOT NULL DEFAULT 0,
  coverage_s  integer NOT NULL DEFAULT 0,
  digest      text NOT NULL DEFAULT '',
  PRIMARY KEY (agent_id, claim_id, day)
);

-- V4: declared outage windows, published to everyone.
CREATE TABLE outages (
  id           text PRIMARY KEY,
  start_at     bigint NOT NULL,
  end_at       bigint,
  declared_at  bigint NOT NULL,
  -- When an open window's end was set (NULL when the end was known at declaration).
  closed_at    bigint,
  reason       text NOT NULL
);

-- V7: penalties, added and revoked by operators only.
CREATE TABLE penalties (
  id             text PRIMARY KEY,
  agent_id       text NOT NULL REFERENCES agents (id),
  code           text NOT NULL,
  points         integer NOT NULL,
  days           integer NOT NULL,
  added_at       bigint NOT NULL,
  reason         text NOT NULL,
  revoked_at     bigint,
  revoke_reason  text
);
CREATE INDEX penalties_agent_idx ON penalties (agent_id);

-- V6: challenges the server issued (single use, expiring) and the proofs they became.
CREATE TABLE proof_challenges (
  id          text PRIMARY KEY,
  kind        text NOT NULL,
  owner_id    text NOT NULL REFERENCES owners (id),
  agent_id    text REFERENCES agents (id),
  subject     text NOT NULL,
  nonce       text NOT NULL,
  token       text NOT NULL,
  message     text NOT NULL,
  issued_at   bigint NOT NULL,
  expires_at  bigint NOT NULL,
  used_at     bigint
);

CREATE TABLE proofs (
  id                    text PRIMARY KEY,
  kind                  text NOT NULL CHECK (kind IN ('github', 'wallet', 'domain', 'erc8004')),
  owner_id              text NOT NULL REFERENCES owners (id),
  agent_id              text REFERENCES agents (id),
  subject               text NOT NULL,
  -- Domains and ERC-8004 identities are bound to one agent at a time (V6).
  binding               text,
  evidence              jsonb NOT NULL,
  verified_at           bigint NOT NULL,
  last_checked_at       bigint NOT NULL,
  consecutive_failures  integer NOT NULL DEFAULT 0,
  removed_at            bigint,
  removed_reason        text
);
CREATE UNIQUE INDEX proofs_active_binding_idx ON proofs (binding) WHERE removed_at IS NULL AND binding IS NOT NULL;
CREATE INDEX proofs_owner_idx ON proofs (owner_id);
CREATE INDEX proofs_agent_idx ON proofs (agent_id);

-- V9: every stored score with its canonical inputs and their digest.
CREATE TABLE scores (
  id         bigserial PRIMARY KEY,
  agent_id   text NOT NULL REFERENCES agents (id),
  method     text NOT NULL,
  at         bigint NOT NULL,
  trigger    text NOT NULL CHECK (trigger IN ('daily', 'change')),
  day        text,
  inputs     text NOT NULL,
  sha256     text NOT NULL,
  result     jsonb NOT NULL,
  total      integer NOT NULL
);
CREATE INDEX scores_agent_at_idx ON scores (agent_id, at DESC, id DESC);
CREATE UNIQUE INDEX scores_daily_idx ON scores (agent_id, day) WHERE trigger = 'daily';

-- Who did what, when and why: penalties, outages, transfers, busy switch, proof removals.
CREATE TABLE audit_log (
  id       bigserial PRIMARY KEY,
  at       bigint NOT NULL,
  actor    text NOT NULL,
  action   text NOT NULL,
  subject  text NOT NULL,
  details  jsonb NOT NULL
);

CREATE TABLE settings (
  key    text PRIMARY KEY,
  value  jsonb NOT NULL
);
