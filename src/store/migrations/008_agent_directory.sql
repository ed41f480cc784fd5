-- The directory of agents (GET /v1/agents, /agents) ranks agents by the total of their latest score
-- (V8: active components only, as stored), ties by agent id, with band and state filters and keyset
-- pages. Each agent's latest score (the row latestScore reads: latest `at`, then highest id) is kept on
-- its row, so a page is one range scan of an index and never a scan of scores: the SQL store sets it
-- as it inserts scores (src/store/sql-store.ts, from the values it writes: a trigger reading each new
-- row's result back cost 50 us a score in the daily recompute), and the triggers below when scores
-- are changed or deleted (by hand: the service never does).
ALTER TABLE agents ADD COLUMN score_id bigint;
ALTER TABLE agents ADD COLUMN score_at bigint;
ALTER TABLE agents ADD COLUMN score_total integer;
ALTER TABLE agents ADD COLUMN score_band text;
ALTER TABLE agents ADD COLUMN score_state text;

-- A changed or deleted score: the agent's latest is looked up again in
-- scores_agent_at_idx; an agent without scores left gets NULLs and leaves the directory.
CREATE FUNCTION vrai_agents_latest_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE agents SET score_id = NULL, score_at = NULL, score_total = NULL, score_band = NULL, score_state = NULL WHERE score_id IS NOT NULL;
    RETURN NULL;
  END IF;
  UPDATE agents a
  SET score_id = l.id, score_at = l.at, score_total = l.total, score_band = l.band, score_state = l.state
  FROM (SELECT OLD.agent_id AS agent_id) c
    LEFT JOIN LATERAL (
      SELECT s.id, s.at, s.total, s.result->>'band' AS band, s.result->>'state' AS state FROM scores s
      WHERE s.agent_id = c.agent_id ORDER BY s.at DESC, s.id DESC LIMIT 1
    ) l ON true
  WHERE a.id = c.agent_id;
  RETURN NULL;
END
$$;

CREATE TRIGGER scores_agents_changed AFTER UPDATE OR DELETE ON scores
  FOR EACH ROW EXECUTE FUNCTION vrai_agents_latest_changed();
CREATE TRIGGER scores_agents_truncated AFTER TRUNCATE ON scores
  FOR EACH STATEMENT EXECUTE FUNCTION vrai_agents_latest_changed();

UPDATE agents a
SET score_id = l.id, score_at = l.at, score_total = l.total, score_band = l.band, score_state = l.state
FROM (
  SELECT DISTINCT ON (agent_id) agent_id, id, at, total, result->>'band' AS band, result->>'state' AS state
  FROM scores ORDER BY agent_id, at DESC, id DESC
) l
WHERE a.id = l.agent_id;

-- Rank order is (-score_total, id): both ascending, so a keyset position is one row comparison that
-- bounds the index scan, and a page 2,000 deep reads 21 index entries like the first.
CREATE INDEX agents_rank_idx ON agents ((-score_total), id) WHERE score_total IS NOT NULL;
CREATE INDEX agents_state_rank_idx ON agents (score_state, (-score_total), id) WHERE score_total IS NOT NULL;
