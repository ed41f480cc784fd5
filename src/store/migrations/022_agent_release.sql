-- An owner unclaims an agent (issue #29): from `released_at` (seconds, V1) until an owner claims it again, no owner
-- holds it. Its row, check-ins and scores stay (scores are never deleted, V9); its key and late mark are cleared with it
-- (src/store/accounts.ts), and every read of owners' agents, the daily and owner recomputes and the directory leave it
-- out. A new claim (by any owner, V2) sets it back to NULL.
ALTER TABLE agents ADD COLUMN IF NOT EXISTS released_at bigint;
