-- The directory of agents (GET /v1/agents, /agents) ranks agents by the total of their latest score
-- (V8: active components only, as stored), ties by agent id, with band and state filters and keyset
-- pages. Each agent's latest score (the row latestScore reads: latest `at`, then highest id) is kept on
-- its row by the triggers below, whatever writes scores (the store, the daily recompute's bulk path,
-- SQL by hand), so a page is one range scan of an index and never a scan of scores.
ALTER TABLE agents ADD COLUMN score_id bigint;
ALTER TABLE agents ADD COLUMN score_at bigint;
ALTER TABLE agents ADD COLUMN score_total integer;
ALTER TABLE agents ADD COLUMN score_band text;
ALTER TABLE agents ADD COLUMN score_state text;

-- A new score becomes the agent's latest when it is later (by `at`, then id) than the one on its row;
-- a changed or deleted score makes the agent's latest be looked up again in scores_agent_at_idx (an
-- agent without scores left gets NULLs and leaves the directory).
CREATE FUNCTION vrai_agents_latest_score() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE agents SET score_id = NULL, score_at = NULL, score_total = NULL, score_band = NULL, score_state = NULL WHERE score_id IS NOT NULL;
  ELSIF TG_OP = 'INSERT' THEN
    UPDATE agents
    SET score_id = NEW.id, score_at = NEW.at, score_total = NEW.total, score_band = NEW.result->>'band', score_state = NEW.result->>'state'
    WHERE id = NEW.agent_id AND (score_id IS NULL OR (NEW.at, NEW.id) > (score_at, score_id));
  ELSE
    UPDATE agents a
    SET score_id = l.id, score_at = l.at, score_total = l.total, score_band = l.band, score_state = l.state
    FROM (SELECT OLD.agent_id AS agent_id) c
      LEFT JOIN LATERAL (
        SELECT s.id, s.at, s.total, s.result->>'band' AS band, s.result->>'state' AS state FROM scores s
        WHERE s.agent_id = c.agent_id ORDER BY s.at DESC, s.id DESC LIMIT 1
      ) l ON true
    WHERE a.id = c.agent_id;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER scores_agents_latest AFTER INSERT OR UPDATE OR DELETE ON scores
  FOR EACH ROW EXECUTE FUNCTION vrai_agents_latest_score();
CREATE TRIGGER scores_agents_latest_truncate AFTER TRUNCATE ON scores
  FOR EACH STATEMENT EXECUTE FUNCTION vrai_agents_latest_score();

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
