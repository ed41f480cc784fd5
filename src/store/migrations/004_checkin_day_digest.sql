-- The digest of the day of an agent's previous counted check-in, after it (docs/inputs.md "Day digest"):
-- the link the next check-in of that day chains from. Kept on the agent's row so that a check-in is
-- decided from one read and written as deltas (src/service/checkins.ts), without reading day aggregates.
ALTER TABLE agents ADD COLUMN last_day_digest text NOT NULL DEFAULT '';

UPDATE agents a SET last_day_digest = d.digest
FROM agent_days d
WHERE a.last_arrival IS NOT NULL
  AND d.agent_id = a.id AND d.claim_id = a.claim_id
  AND d.day = to_char(to_timestamp(a.last_arrival) AT TIME ZONE 'UTC', 'YYYY-MM-DD');
