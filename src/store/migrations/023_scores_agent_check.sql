-- The foreign key of scores.agent_id, checked a statement at a time (issue #30). The daily recompute inserts a score
-- per claimed agent a day, a page of 1,000 a statement; the key checked each row on its own (a row trigger running a
-- query that locks the agent's row FOR KEY SHARE), about 25 ms of a page's 34 ms insert at a million agents. What the
-- key guaranteed still holds, by three cheaper means:
-- * a score's agent exists when the score is inserted: one check a statement over the rows it inserted (its transition
--   table against agents' primary key), raising foreign_key_violation (23503), as the key did;
-- * a score's agent never changes: agent_id is not updated (the directory's trigger of migration 008 reads OLD.agent_id);
-- * an agent that has scores is not deleted: DELETE of agents is checked a statement at a time over the rows it deleted,
--   TRUNCATE of agents refused while scores holds a row, each raising foreign_key_violation. (The key's lock also kept a
--   delete out while an insert of the agent's score was not committed; the service never deletes an agent, an owner
--   releases it, migration 022, and scores are never deleted, V9.)
ALTER TABLE scores DROP CONSTRAINT scores_agent_id_fkey;

CREATE FUNCTION vrai_scores_agents_exist() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing text;
BEGIN
  SELECT n.agent_id INTO missing FROM inserted_scores n WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = n.agent_id) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert on table "scores" violates foreign key: agent "%" is not in table "agents"', missing
      USING ERRCODE = 'foreign_key_violation', TABLE = 'scores', COLUMN = 'agent_id';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER scores_agents_exist AFTER INSERT ON scores
  REFERENCING NEW TABLE AS inserted_scores FOR EACH STATEMENT EXECUTE FUNCTION vrai_scores_agents_exist();

CREATE FUNCTION vrai_scores_agent_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the agent of score % is never changed', OLD.id
    USING ERRCODE = 'foreign_key_violation', TABLE = 'scores', COLUMN = 'agent_id';
END
$$;
CREATE TRIGGER scores_agent_fixed BEFORE UPDATE OF agent_id ON scores
  FOR EACH ROW WHEN (NEW.agent_id IS DISTINCT FROM OLD.agent_id) EXECUTE FUNCTION vrai_scores_agent_fixed();

CREATE FUNCTION vrai_agents_with_scores_kept() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  scored text;
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    SELECT s.agent_id INTO scored FROM scores s LIMIT 1;
  ELSE
    SELECT o.id INTO scored FROM deleted_agents o WHERE EXISTS (SELECT 1 FROM scores s WHERE s.agent_id = o.id) LIMIT 1;
  END IF;
  IF FOUND THEN
    RAISE EXCEPTION 'agent "%" has scores: an agent with scores is never deleted (an owner releases it)', scored
      USING ERRCODE = 'foreign_key_violation', TABLE = 'agents';
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER agents_with_scores_kept AFTER DELETE ON agents
  REFERENCING OLD TABLE AS deleted_agents FOR EACH STATEMENT EXECUTE FUNCTION vrai_agents_with_scores_kept();
CREATE TRIGGER agents_with_scores_not_truncated BEFORE TRUNCATE ON agents
  FOR EACH STATEMENT EXECUTE FUNCTION vrai_agents_with_scores_kept();
