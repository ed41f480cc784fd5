-- Each score keeps its result in the method's compact form (issue #25, src/method/score/packed-result.ts),
-- the same bytes the API server's latest-score cache holds: a summary read renders it instead of
-- rebuilding the inputs and computing the result again. Rows written before have none and are read as
-- before (src/store/score-packing.ts).
ALTER TABLE scores ADD COLUMN IF NOT EXISTS packed bytea;
