-- A score's result is kept as the JSON text the service wrote (json, not jsonb, which reorders keys
-- and respaces): a read returns the bytes that were inserted, so the API's cache of latest scores,
-- filled as scores are written (src/store/score-cache.ts), holds what a read of the table would.
-- Results already stored keep the text jsonb gave them, so their representation does not change.
ALTER TABLE scores ALTER COLUMN result TYPE json USING result::json;

-- Every change to scores is announced on channel vrai_scores once its transaction commits, so a
-- service process drops what it has cached of scores another process wrote. The payload is the
-- comma-separated agent ids, or '*' (every agent) when they would not fit a notification.
CREATE FUNCTION vrai_notify_scores() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  agents text;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM pg_notify('vrai_scores', '*');
    RETURN NULL;
  END IF;
  SELECT string_agg(DISTINCT agent_id, ',') INTO agents FROM changed_scores;
  IF agents IS NOT NULL THEN
    PERFORM pg_notify('vrai_scores', CASE WHEN octet_length(agents) > 7000 THEN '*' ELSE agents END);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER scores_notify_insert AFTER INSERT ON scores
  REFERENCING NEW TABLE AS changed_scores FOR EACH STATEMENT EXECUTE FUNCTION vrai_notify_scores();
CREATE TRIGGER scores_notify_update AFTER UPDATE ON scores
  REFERENCING NEW TABLE AS changed_scores FOR EACH STATEMENT EXECUTE FUNCTION vrai_notify_scores();
CREATE TRIGGER scores_notify_delete AFTER DELETE ON scores
  REFERENCING OLD TABLE AS changed_scores FOR EACH STATEMENT EXECUTE FUNCTION vrai_notify_scores();
CREATE TRIGGER scores_notify_truncate AFTER TRUNCATE ON scores
  FOR EACH STATEMENT EXECUTE FUNCTION vrai_notify_scores();
