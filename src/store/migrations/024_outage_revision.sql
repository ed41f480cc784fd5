-- A revision number of the declared windows (V4.3), raised by every statement that changes `outages` (issue #30).
--
-- A server keeps the windows in memory and decides check-ins with them (src/store/checkin-writes.ts); a check-in's
-- write then commits only if the revision is still the one its windows were read at, so a window declared or closed
-- meanwhile, by this server or another, is never missed: the check-in is decided again with it. One row, raised by
-- a statement trigger, so every writer of `outages` (the service, an operator's SQL, a restore) raises it. Each
-- statement may run again (a test applies it ahead of the migrations before it).
CREATE TABLE IF NOT EXISTS outage_revision (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  n   bigint NOT NULL
);
INSERT INTO outage_revision (n) VALUES (0) ON CONFLICT DO NOTHING;

CREATE OR REPLACE FUNCTION vrai_outages_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE outage_revision SET n = n + 1;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER outages_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON outages
  FOR EACH STATEMENT EXECUTE FUNCTION vrai_outages_changed();
