-- Chain indexer (src/indexer). Everything it writes for a chain is a function of the canonical chain up to its
-- checkpoint: a reorg deletes the rows above the common ancestor, so the tables always equal a fresh index.
-- Executors are ERC-8004 DIDs, did:erc8004:<chainId>:<identity registry>:<agentId> (docs/executor-id.md).
-- uint256 values (agent ids) are kept as decimal text: they do not fit a JS number.

-- One row per followed chain: where the indexer is, written in the same transaction as the rows it covers.
CREATE TABLE indexer_checkpoints (
  chain_id        bigint PRIMARY KEY,
  registry        text NOT NULL,
  block_number    bigint NOT NULL,
  block_hash      text NOT NULL,
  updated_at      bigint NOT NULL
);

-- Recent block hashes the indexer saw (range ends and blocks with events), for reorg detection.
CREATE TABLE indexer_blocks (
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  block_hash    text NOT NULL,
  parent_hash   text NOT NULL,
  timestamp     bigint NOT NULL,
  PRIMARY KEY (chain_id, block_number)
);

-- A1 on-chain proof records, one per ProofSubmitted log. `verified` (A6) is not stored: it is read through
-- chain_anchors, so a record becomes verified when its traceRoot is anchored later.
CREATE TABLE chain_proof_records (
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  log_index     integer NOT NULL,
  tx_hash       text NOT NULL,
  executor      text NOT NULL,
  agent_id      text NOT NULL,
  submitter     text NOT NULL,
  trace_root    text NOT NULL,
  success       boolean NOT NULL,
  risk_level    text NOT NULL,
  policy_violations bigint NOT NULL,
  PRIMARY KEY (chain_id, block_number, log_index)
);
CREATE INDEX chain_proof_records_executor_idx ON chain_proof_records (executor, block_number, log_index);
CREATE INDEX chain_proof_records_trace_root_idx ON chain_proof_records (trace_root);

-- AnchorRegistry Anchored and RootAnchored logs; role VERIFIER makes records with that traceRoot verified (A6).
CREATE TABLE chain_anchors (
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  log_index     integer NOT NULL,
  tx_hash       text NOT NULL,
  digest        text NOT NULL,
  kind          text NOT NULL,
  is_root       boolean NOT NULL,
  leaf_count    bigint,
  role          text NOT NULL CHECK (role IN ('anchorer', 'verifier')),
  PRIMARY KEY (chain_id, block_number, log_index)
);
CREATE INDEX chain_anchors_digest_idx ON chain_anchors (digest);

-- Registry OrderSettled logs (part N), in chain order.
CREATE TABLE chain_settlements (
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  log_index     integer NOT NULL,
  tx_hash       text NOT NULL,
  order_id      text NOT NULL,
  executor      text NOT NULL,
  requester     text NOT NULL,
  verdict       text NOT NULL,
  settled_at    bigint NOT NULL,
  PRIMARY KEY (chain_id, block_number, log_index)
);
CREATE INDEX chain_settlements_executor_idx ON chain_settlements (executor);
CREATE INDEX chain_settlements_requester_idx ON chain_settlements (requester);

-- Registry NetworkScoreAdjusted logs: the score the contract reports after each adjustment.
CREATE TABLE chain_score_adjustments (
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  log_index     integer NOT NULL,
  executor      text NOT NULL,
  order_id      text NOT NULL,
  party         text NOT NULL,
  delta         integer NOT NULL,
  score         integer NOT NULL,
  PRIMARY KEY (chain_id, block_number, log_index)
);

-- Identity registry Transfer logs (V6: a moved token triggers its proof's check).
CREATE TABLE chain_identity_transfers (
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  log_index     integer NOT NULL,
  tx_hash       text NOT NULL,
  executor      text NOT NULL,
  from_address  text NOT NULL,
  to_address    text NOT NULL,
  PRIMARY KEY (chain_id, block_number, log_index)
);

-- Part N mirror: settlements replayed with the method engine's verdict arithmetic, in tenths.
CREATE TABLE network_scores (
  executor         text PRIMARY KEY,
  chain_id         bigint NOT NULL,
  score            integer NOT NULL,
  settlements      bigint NOT NULL,
  last_settled_at  bigint NOT NULL
);

-- A mirrored network score that disagreed with the Registry (networkScoreOf) at a block; cleared by the next agreement.
CREATE TABLE network_score_mismatches (
  executor      text PRIMARY KEY,
  chain_id      bigint NOT NULL,
  block_number  bigint NOT NULL,
  mirrored      integer NOT NULL,
  onchain       integer NOT NULL,
  detected_at   bigint NOT NULL
);

-- A1 self-reported records posted by a Vrai agent for its ERC-8004 executor; used only while it has no on-chain record (A2).
CREATE TABLE self_reported_records (
  id                 bigserial PRIMARY KEY,
  executor           text NOT NULL,
  agent_id           text NOT NULL REFERENCES agents (id),
  tx_hash            text NOT NULL,
  success            boolean NOT NULL,
  risk_level         text NOT NULL,
  policy_violations  bigint NOT NULL,
  trace_root         text NOT NULL,
  received_at        bigint NOT NULL
);
CREATE INDEX self_reported_records_executor_idx ON self_reported_records (executor, id);

-- Executors whose derived score must be recomputed (written with the rows that changed it).
CREATE TABLE derived_dirty (
  executor  text PRIMARY KEY
);

-- The latest SDK Derived Score (scoreType sdk-derived, METHOD F1 result) of each executor.
CREATE TABLE derived_scores (
  executor     text PRIMARY KEY,
  result       jsonb NOT NULL,
  source       text NOT NULL CHECK (source IN ('onchain', 'self-reported', 'none')),
  computed_at  bigint NOT NULL
);
