-- Daily anchoring of Vrai scores (src/service/anchoring.ts). After the daily recompute of day D, the
-- daily scores of D become the leaves of one OpenZeppelin StandardMerkleTree (leaf values
-- [agent, day, method, inputs sha256] of types [string, string, string, bytes32]), whose root is
-- anchored with AnchorRegistry.anchorRoot(root, leafCount, bytes32("vrai-score-day")): one
-- transaction a day, whatever the number of agents.

-- One row per anchored day: the root, and where its anchoring transaction stands.
CREATE TABLE score_anchors (
  day           text PRIMARY KEY,
  -- 0x-prefixed lowercase hex, 32 bytes.
  root          text NOT NULL,
  leaf_count    integer NOT NULL CHECK (leaf_count > 0),
  -- 'pending' until the root is seen anchored on chain, then 'mined'.
  status        text NOT NULL CHECK (status IN ('pending', 'mined')),
  built_at      bigint NOT NULL,
  -- Set before the transaction is broadcast (the signed bytes too), so a restart resumes it.
  chain_id      integer,
  contract      text,
  tx_hash       text,
  raw_tx        text,
  block_number  bigint,
  mined_at      bigint
);
CREATE INDEX score_anchors_unmined_idx ON score_anchors (day) WHERE status <> 'mined';

-- The Merkle proof each daily score keeps: its leaf hash and the sibling hashes from the leaf up to
-- the root, concatenated (32 bytes each, tree.getProof order). No foreign keys: checking them row by
-- row took more than half the time of storing a day of 1,000,000 proofs, and these rows are written
-- only in the transaction that inserts their day's score_anchors row, from that day's stored scores
-- (which are never deleted).
CREATE TABLE score_proofs (
  score_id  bigint PRIMARY KEY,
  day       text NOT NULL,
  leaf      bytea NOT NULL,
  proof     bytea NOT NULL
);

-- The daily scores of one day, in id order: the leaves of that day's tree.
CREATE INDEX scores_daily_day_idx ON scores (day, id) WHERE trigger = 'daily';
