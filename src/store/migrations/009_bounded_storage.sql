-- Bounded storage per owner (issue #15, finding 7).

-- Open challenges (unused, not expired) of an owner, counted against its limit when it asks for one.
CREATE INDEX proof_challenges_owner_open_idx ON proof_challenges (owner_id, expires_at) WHERE used_at IS NULL;
-- Expired challenges are deleted (an expired challenge can no longer be answered, V6): oldest first.
CREATE INDEX proof_challenges_expires_idx ON proof_challenges (expires_at);

-- An owner's agents in id order, for keyset pages (GET /v1/owners/me, the owner recompute):
-- it serves everything agents_owner_idx served.
CREATE INDEX agents_owner_id_idx ON agents (owner_id, id);
DROP INDEX agents_owner_idx;

-- Owners whose agents are to be recomputed because an owner-level proof (github, wallet: V6) was
-- added or removed. Written in the proof's own transaction, so a change that was acknowledged is
-- recomputed even when the process stops before the recompute ran; deleted once every agent of the
-- owner has a score computed after the change. One row per owner: changes made meanwhile are one
-- recompute.
CREATE SEQUENCE owner_recompute_generations;
CREATE TABLE owner_recomputes (
  owner_id      text PRIMARY KEY REFERENCES owners (id),
  -- The earliest change not recomputed yet.
  requested_at  bigint NOT NULL,
  -- New from the sequence at every change, never reused (not even by a later row of the owner): a
  -- drain deletes the row only if no change came while it recomputed.
  generation    bigint NOT NULL DEFAULT nextval('owner_recompute_generations'),
  -- When a drain may take it: at once, after a failed attempt's backoff, or after the lease of a
  -- drain that took it and never finished (the process stopped).
  due_at        bigint NOT NULL,
  attempts      integer NOT NULL DEFAULT 0,
  last_error    text
);
CREATE INDEX owner_recomputes_due_idx ON owner_recomputes (due_at);
