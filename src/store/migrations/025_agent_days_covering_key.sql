-- The day aggregates' key carries the columns the daily recompute reads (issue #30).
--
-- The recompute reads each claimed agent's days through this key (src/store/scores.ts, DAYS_OF_AGENT): the 30 of
-- its window and a count of the earlier ones. Check-ins write the rows a day at a time, each agent's row of the day
-- when its first check-in of the day comes, so an agent's days lie on as many pages of the table as it has days, far
-- apart. With the key alone, each of those rows cost a read of its own page, mostly from outside PostgreSQL's
-- buffers (the table is several GB at a million agents): at 100,000 agents × 30 days the recompute took 21.2-21.6 s
-- on rows laid out so, against 15.6 s when each agent's days had been loaded together (2026-12-07).
-- With the columns in the key, an agent's days are side by side in the index's leaf pages and the recompute reads
-- them from there (an index-only scan: the pages the visibility map marks all-visible, every day but the last few):
-- 11.7-14.1 s on the same rows.
--
-- The cost falls on today's rows. An update that changes a key column is not heap-only, so each counted check-in's
-- update of its day's row (about 24 a day, migration 013) now adds an index entry beside its new version; the old
-- entries are removed as the page fills (PostgreSQL's bottom-up deletion) and by vacuum. Measured (2026-12-07):
-- bench:storage at 2,000 agents × 30 days, 1,740 bytes per agent-day against 1,592 (agent_days 454 against 307);
-- bench:service's check-ins 1,776-2,210/s against 1,919-2,554/s, still over pgbench's comparable transaction, which
-- updates the same row (README, "Benchmarks").
ALTER TABLE agent_days
  DROP CONSTRAINT agent_days_pkey,
  ADD CONSTRAINT agent_days_pkey PRIMARY KEY (agent_id, claim_id, day) INCLUDE (checkins, on_time, credit_s, coverage_s, digest);
