-- Room on each page for the rows that are updated again and again (issue #18, storage per agent-day).
--
-- Every counted check-in updates its agent's row (the previous check-in, V3.4) and its day's
-- aggregate (about 24 times a day, V5/V10). With full pages (fillfactor 100) a new row version rarely
-- fits beside the old one, so each update went to another page with a new entry in every index, and
-- the tables grew to several times their live rows between vacuums (bench:storage at 2,000 agents ×
-- 30 days: agents 35 kB a row, agent_days 1.5 kB an agent-day, 78–81 % of both heaps free or dead).
-- With room left on the page, the update is a heap-only tuple (no index column changes) and the page's
-- dead versions are pruned the next time it is read: the tables stay near their live size.
--   * agents: updated every hour per agent; rows of a few hundred bytes; half of each page kept free.
--   * agent_days: only today's rows are updated, each about 24 times; a fifth of each page kept free
--     is enough for the next version of each row while the previous is pruned, and the pages of past
--     days (never updated again) keep only that fifth unused.
-- Autovacuum keeps its defaults: a vacuum of the two at 2 % dead rows ran all through a check-in
-- load and cost PostgreSQL twice the CPU per check-in (bench:service: 0.80 ms against 0.38 ms).
-- New fillfactors apply to pages written from now on; a table migrated with data keeps its pages
-- until it is rewritten (VACUUM FULL or pg_repack, offline).
ALTER TABLE agents SET (fillfactor = 50);
ALTER TABLE agent_days SET (fillfactor = 80);
