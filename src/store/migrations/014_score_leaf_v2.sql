-- Daily scores a contract can check (issue #26): leaves of version 2 (src/chain/score-tree.ts,
-- contracts/VraiScores.sol), which carry the score itself: total, the three components, state, and the
-- ERC-8004 identity the agent held an active proof of at the score's time.
--
-- A day's tree is built from its stored daily scores after the daily recompute, and a proof is derived on
-- demand from one score's stored values (migration 011): both read the leaf's values from the score's row,
-- with one SQL expression (src/store/anchors.ts). `total` and `established` are there already (migration
-- 010); the components are kept beside them, as a version-2 leaf holds them (a component's value, or -1 when
-- not active in the score's method), so a million scores' leaves are made without rebuilding a million
-- inputs documents. NULL on rows written before: a day with such a row is built of version-1 leaves, as
-- every day before this migration was. The ERC-8004 identity is not copied: it is read from the agent's
-- erc8004 proof active at the score's `at` (proofs are never deleted; verified_at and removed_at never change
-- once set).
ALTER TABLE scores ADD COLUMN identity_points smallint;
ALTER TABLE scores ADD COLUMN reliability_points smallint;
ALTER TABLE scores ADD COLUMN integrity_points smallint;

-- Each day's leaf version: 1 for every day stored before (kind vrai-score-day), 2 from now on (kind
-- vrai-score-day-v2). And the block time of the root's anchor, what a contract compares for freshness
-- (AnchorRegistry.rootAnchoredAt); NULL for days mined before it was recorded.
ALTER TABLE score_anchors ADD COLUMN leaf_version smallint NOT NULL DEFAULT 1 CHECK (leaf_version IN (1, 2));
ALTER TABLE score_anchors ADD COLUMN anchored_at bigint;
