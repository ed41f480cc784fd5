-- Scores keep what cannot be derived, and derive the rest exactly (issue #18, storage per agent-day).
--
-- V9 asks every stored score to keep its method, `at`, its exact canonical inputs, their SHA-256 and
-- its result, the result being a pure function of the inputs. Until now each row held the inputs as
-- canonical text (about 5 KB for a month of hourly check-ins) and the result as JSON (about 3.5 KB).
-- A score written from now on instead keeps:
--   * `facts`: the compact form of its inputs (src/store/score-facts.ts): the header, each window
--     day's coverage at `at`, and whole lines only for days that ended less than a day before `at`.
--     The other day lines are the agent's `agent_days` rows of `claim_id` (their check-in figures
--     and digest never change once the day has ended), so the document is rebuilt byte for byte and
--     checked against `sha256` on every read; `agent_days` rows are therefore never deleted.
--   * no `result`: it is computed from the rebuilt inputs when read (V9: a pure function of them).
--   * `total` and `established` (V8), so that the directory columns of migration 008 can be set
--     again by the trigger below without a result to read.
-- Rows written before keep their `inputs` text and `result`, and are read as they are.
ALTER TABLE scores ALTER COLUMN inputs DROP NOT NULL;
ALTER TABLE scores ALTER COLUMN result DROP NOT NULL;
ALTER TABLE scores ADD COLUMN claim_id bigint;
ALTER TABLE scores ADD COLUMN facts bytea;
ALTER TABLE scores ADD COLUMN established boolean;
ALTER TABLE scores ADD CONSTRAINT scores_inputs_kept CHECK (
  (inputs IS NOT NULL AND result IS NOT NULL) OR (facts IS NOT NULL AND claim_id IS NOT NULL AND established IS NOT NULL)
);

-- A changed or deleted score (by hand: the service never does): the agent's latest again, its band
-- from the total (V8), its state from the result or, for a compact row, from `established`.
CREATE OR REPLACE FUNCTION vrai_agents_latest_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE agents SET score_id = NULL, score_at = NULL, score_total = NULL, score_band = NULL, score_state = NULL WHERE score_id IS NOT NULL;
    RETURN NULL;
  END IF;
  UPDATE agents a
  SET score_id = l.id, score_at = l.at, score_total = l.total, score_band = l.band, score_state = l.state
  FROM (SELECT OLD.agent_id AS agent_id) c
    LEFT JOIN LATERAL (
      SELECT s.id, s.at, s.total,
             CASE WHEN s.total < 200 THEN '0-199' WHEN s.total < 400 THEN '200-399' WHEN s.total < 600 THEN '400-599'
                  WHEN s.total < 800 THEN '600-799' ELSE '800-1000' END AS band,
             COALESCE(s.result->>'state', CASE WHEN s.established THEN 'established' ELSE 'provisional' END) AS state
      FROM scores s WHERE s.agent_id = c.agent_id ORDER BY s.at DESC, s.id DESC LIMIT 1
    ) l ON true
  WHERE a.id = c.agent_id;
  RETURN NULL;
END
$$;
