-- Vrai's scores given as feedback to an ERC-8004 Reputation Registry (issue #27, src/service/erc8004-*.ts): the
-- owners' switch per agent, and every feedback Vrai plans, gives and revokes. The feedback table is the outbox: what
-- is to be sent is stored with the day's work, each transaction is stored signed before it is broadcast, and a send
-- is recorded once the registry shows it, so a restart between a send and its record finds it and sends nothing again.

-- Publishing per agent (PUT /v1/agents/{id}/erc8004-publishing). Turned on by the owner while the agent holds an active
-- erc8004 proof; off by the owner, or by Vrai when that proof is removed (the token moved, failed checks, a claim by
-- another owner), `reason` saying which.
CREATE TABLE erc8004_publishing (
  agent_id     text PRIMARY KEY REFERENCES agents (id),
  enabled      boolean NOT NULL,
  changed_at   bigint NOT NULL,
  reason       text,
  -- The last day whose feedback was planned for the agent: a newer mined day is still to plan (NULL: none yet).
  planned_day  text
);
-- The agents still to plan for a day: few once the day is planned, whatever the number of publishing agents.
CREATE INDEX erc8004_publishing_to_plan_idx ON erc8004_publishing (planned_day, agent_id) WHERE enabled;

-- One row a feedback: planned with its day's work, then given (its index in the registry), and revoked when a newer
-- value replaces it or publishing stops; `dropped` when it was never given (replaced or stopped first, or refused by
-- the registry). Nothing here changes once the feedback is revoked or dropped; its file is served as long as it exists.
CREATE TABLE erc8004_feedback (
  id                 text PRIMARY KEY,
  -- The order feedback was planned in (a day's tags in the planner's order): the order it is sent in.
  seq                bigserial NOT NULL,
  agent_id           text NOT NULL REFERENCES agents (id),
  -- The erc8004 proof it is given under, and the identity it names (V6).
  proof_id           text NOT NULL REFERENCES proofs (id),
  chain_id           integer NOT NULL,
  identity_registry  text NOT NULL,
  -- uint256, decimal.
  token_id           text NOT NULL,
  -- The reputation registry and the client (Vrai's publisher account) it is given to and by.
  registry           text NOT NULL,
  client             text NOT NULL,
  tag1               text NOT NULL,
  tag2               text NOT NULL,
  value              bigint NOT NULL,
  value_decimals     smallint NOT NULL,
  endpoint           text NOT NULL,
  uri                text NOT NULL,
  -- The off-chain feedback file, byte for byte, and its keccak256 (feedbackHash).
  file               bytea NOT NULL,
  file_hash          text NOT NULL,
  -- The daily score it gives.
  day                text NOT NULL,
  score_id           bigint NOT NULL,
  planned_at         bigint NOT NULL,
  state              text NOT NULL CHECK (state IN ('planned', 'given', 'revoked', 'dropped')),
  -- giveFeedback's transaction, stored signed before it is broadcast (a restart rebroadcasts it as is), and the chain's
  -- head before it was first signed, where the search for its NewFeedback starts.
  give_tx_hash       text,
  give_raw_tx        text,
  search_from_block  bigint,
  -- Where the registry shows it.
  feedback_index     bigint,
  given_block        bigint,
  given_tx_hash      text,
  given_at           bigint,
  -- Asked to be revoked (a newer value, publishing off, the proof removed) and why; revokeFeedback's transaction.
  revoke_asked_at    bigint,
  revoke_reason      text,
  revoke_tx_hash     text,
  revoke_raw_tx      text,
  revoked_at         bigint,
  dropped_reason     text,
  -- Failed attempts since the last step that worked, and when the next one is due (backing off).
  attempts           integer NOT NULL DEFAULT 0,
  next_attempt_at    bigint NOT NULL,
  last_error         text,
  -- At most one feedback a tag per agent per day.
  UNIQUE (agent_id, tag1, day)
);
-- What the sender has to do: feedback to give, and revocations asked for and not made.
CREATE INDEX erc8004_feedback_due_idx ON erc8004_feedback (next_attempt_at, day, seq)
  WHERE state = 'planned' OR (state = 'given' AND revoke_asked_at IS NOT NULL);
