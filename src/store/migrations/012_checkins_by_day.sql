-- Check-ins partitioned by UTC day of arrival, kept for CHECKIN_RETENTION_DAYS (issue #18).
--
-- Why days, not months: retention drops whole partitions, so the partition is the granularity of
-- the rule. With days, a check-in is kept between RETENTION and RETENTION + 1 days; with months it
-- would be kept up to a month longer than asked, and at 30 days that is what dominates the bytes
-- per agent-day. A day partition is also the unit a day digest covers (docs/inputs.md "Day digest"),
-- so one archived partition, `checkins-YYYY-MM-DD.ndjson.gz`, re-checks exactly one day's digests.
-- Day partitions are `checkins_YYYYMMDD`, bounds [day 00:00:00, next day 00:00:00) in Unix seconds
-- (V1). The service creates them a few days ahead (src/service/checkin-retention.ts); a check-in
-- arriving on a day with no partition yet lands in `checkins_default`, whose rows move to their
-- day's partition when it is created, so no check-in ever fails for lack of a partition.
--
-- What is kept of a check-in is only what V3.1 answers a duplicate with and what its day digest
-- chains (arrival, next_heartbeat_s, on_time, excused, credit), with the key it is found by.
-- Scores never read check-ins: they read the day aggregates (`agent_days`, never dropped) and keep
-- their own inputs (V9), so dropping a partition changes no stored score and no agent's state
-- (`agents.last_arrival`, V3.4). The one rule retention changes is V3.1's memory of keys: a key
-- whose check-in's partition was dropped is no longer known, and a request resent with it after the
-- retention window is judged afresh (counted if it passes V3.2). Heartbeat clients retry within
-- minutes and the SDK uses a fresh key per attempt; the window is days (README, "Check-in retention").
--
-- The row, narrowed: no `id` (nothing reads it; a row is found by its agent, claim and key, or its
-- agent and arrival); fixed-width columns first, widest first, so no alignment padding sits between
-- them. `next_heartbeat_s` (3600 or 7200, V3.3) stays an integer: as a smallint it would save 2 bytes
-- that the row's 8-byte alignment mostly pads back, and it would change the result type of the
-- duplicate lookup, which instances still running when this migration commits hold prepared (they
-- would fail every check-in until restarted).
--
-- V3.1 "never counted twice" does not rest on a unique index (PostgreSQL cannot enforce one across
-- partitions without the partition key): a check-in is written only by the agent-row
-- compare-and-set of src/store/checkin-writes.ts (the agent's row locked, its previous check-in
-- unchanged since the duplicate lookup), so of two requests with one key the second finds the agent
-- changed, decides again and then finds the first as its duplicate. A key index stays, per
-- partition, for that lookup.
ALTER TABLE checkins RENAME TO checkins_unpartitioned;
-- Its indexes go first: their names are taken again below, and the copy needs none of them.
DROP INDEX checkins_agent_claim_key_idx;
DROP INDEX checkins_agent_arrival_idx;

CREATE TABLE checkins (
  arrival          bigint NOT NULL,
  claim_id         bigint NOT NULL,
  credit           integer NOT NULL,
  next_heartbeat_s integer NOT NULL,
  on_time          boolean,
  excused          boolean NOT NULL,
  agent_id         text NOT NULL REFERENCES agents (id),
  idempotency_key  text NOT NULL
) PARTITION BY RANGE (arrival);

CREATE TABLE checkins_default PARTITION OF checkins DEFAULT;

-- V3.1: the duplicate lookup, one probe per partition kept. A hash index: it keeps a 4-byte hash of
-- agent and key, where a B-tree on (agent_id, claim_id, idempotency_key) kept all three (about 50
-- bytes a row instead of 113 with UUID keys); the lookup checks the row itself. Agent ids never hold
-- '/' (`agt_` and hex), so agent and key are one value joined by it.
CREATE INDEX checkins_agent_key_idx ON checkins USING hash ((agent_id || '/' || idempotency_key));
-- Check-ins arriving exactly at a midnight (the daily score at `D 00:00:00` counts them, V9,
-- src/service/scoring.ts): a few rows at most, so this index is nearly empty. It replaces the index
-- on (agent_id, arrival) of migration 001, which served only that query.
CREATE INDEX checkins_midnight_idx ON checkins (agent_id, claim_id) WHERE arrival % 86400 = 0;

-- One partition per day holding check-ins, then the rows (the default partition stays empty).
DO $$
DECLARE
  day_start bigint;
BEGIN
  FOR day_start IN SELECT DISTINCT arrival - arrival % 86400 FROM checkins_unpartitioned LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF checkins FOR VALUES FROM (%s) TO (%s)',
      'checkins_' || to_char(to_timestamp(day_start) AT TIME ZONE 'UTC', 'YYYYMMDD'), day_start, day_start + 86400);
  END LOOP;
END
$$;

INSERT INTO checkins (arrival, claim_id, credit, next_heartbeat_s, on_time, excused, agent_id, idempotency_key)
SELECT arrival, claim_id, credit, next_heartbeat_s, on_time, excused, agent_id, idempotency_key FROM checkins_unpartitioned;

DROP TABLE checkins_unpartitioned;
