-- A day's anchor is final once ANCHOR_CONFIRMATIONS blocks are on it, its own included (src/service/anchoring.ts,
-- issue #30): until then each anchoring pass reads its receipt again, and a transaction a reorganisation of the chain
-- dropped is sent again (the day back to 'pending', its signed bytes kept until the anchor is final). What comes after
-- an anchor (Vrai's ERC-8004 feedback, which names it) waits for it to be final. Days mined before are final.
ALTER TABLE score_anchors ADD COLUMN final_at bigint;
UPDATE score_anchors SET final_at = COALESCE(mined_at, built_at) WHERE status = 'mined';
CREATE INDEX score_anchors_unfinal_idx ON score_anchors (day) WHERE final_at IS NULL;
