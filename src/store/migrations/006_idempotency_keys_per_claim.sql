-- V2, V3.1: idempotency keys are scoped per agent and claim; a new claim forgets them, so a key
-- used before the latest claim is judged afresh. The unique constraint of 001 spanned every claim.
ALTER TABLE checkins DROP CONSTRAINT checkins_agent_id_idempotency_key_key;
CREATE UNIQUE INDEX checkins_agent_claim_key_idx ON checkins (agent_id, claim_id, idempotency_key);
