/** Bulk seed data for the score tree: one owner with `count` agents, each with a daily score of `day`. */
import { buildScoreInputs, packResult, scoreFromInputs } from "../method";
import type { Queryable } from "../store/db";

const agentIdSql = (digits: number) => `'agt_' || lpad(i::text, ${digits}, '0')`;

/**
 * Inserts owner `ownerId`, agents `agt_<i>` (i from 1 to `count`, zero-padded to `digits`) claimed a day
 * before `at`, and a daily score of `day` at `at` for each (`insertDailyScores`): leaves of a day's tree,
 * in SQL so a million take seconds.
 */
export async function seedDailyScores(db: Queryable, seed: { ownerId: string; day: string; at: number; count: number; digits: number; schemaBefore016?: boolean }): Promise<void> {
  await db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ($1, 'x', $2)", [seed.ownerId, seed.at - 86400]);
  await db.query(
    `INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at)
     SELECT ${agentIdSql(seed.digits)}, $1, 1, $2, 'x', $2 FROM generate_series(1, $3) AS i`,
    [seed.ownerId, seed.at - 86400, seed.count],
  );
  await insertDailyScores(db, seed);
}

/**
 * Inserts a daily score of `day` at `at` for agents `agt_<i>` already seeded (i from 1 to `count`), its
 * sha256 that of `i` and the day, kept as text (`{}` inputs) with the compact result of a newly claimed
 * agent's score at `at` (the same bytes serve every agent: agent, digest and total are the row's);
 * without it on a schema before migration 016.
 */
export async function insertDailyScores(db: Queryable, seed: { day: string; at: number; count: number; digits: number; schemaBefore016?: boolean }): Promise<void> {
  if (seed.schemaBefore016) {
    await db.query(
      `INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total)
       SELECT ${agentIdSql(seed.digits)}, '0.2', $1, 'daily', $2, '{}', encode(sha256((i::text || $2)::bytea), 'hex'), '{}', 0 FROM generate_series(1, $3) AS i`,
      [seed.at, seed.day, seed.count],
    );
    return;
  }
  const { result } = scoreFromInputs(buildScoreInputs({ agent: "agt_seed", method: "0.2", at: seed.at, claimedAt: seed.at - 86400, proofs: [], penalties: [], days: [] }));
  await db.query(
    `INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total, packed)
     SELECT ${agentIdSql(seed.digits)}, '0.2', $1, 'daily', $2, '{}', encode(sha256((i::text || $2)::bytea), 'hex'), '{}', 0, $4 FROM generate_series(1, $3) AS i`,
    [seed.at, seed.day, seed.count, packResult(result, seed.at)],
  );
}
