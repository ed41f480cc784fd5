/** Bulk seed data for the score tree: one owner with `count` agents, each with a daily score of `day`. */
import { buildScoreInputs, packResult, scoreFromInputs } from "../method";
import type { Queryable } from "../store/db";

const agentIdSql = (digits: number, prefix = "agt_") => `'${prefix}' || lpad(i::text, ${digits}, '0')`;

/** The identity registry of the seeded ERC-8004 proofs (chain 31337). */
export const SEED_ERC8004_REGISTRY = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432";

/** Daily scores of `day` at `at` for agents `agt_<i>` (i from 1 to `count`, zero-padded to `digits`). */
export type DailyScoresSeed = {
  day: string;
  at: number;
  count: number;
  digits: number;
  /** The schema before migration 014, which has no component columns (nor migration 016's packed result): the rows are left without them. */
  beforeMigration014?: boolean;
};

/**
 * The components and state of seeded agent `i` (SQL over `i`): identity 100 or 130, reliability `i % 151`,
 * integrity 100, established for two agents in three; the total is their sum.
 */
const SEEDED_COMPONENTS = {
  identity: "(100 + 30 * (i % 2))",
  reliability: "(i % 151)",
  integrity: "100",
  established: "(i % 3 <> 0)",
};

/**
 * Inserts owner `ownerId`, agents `agt_<i>` claimed a day before `at`, and a daily score of `day` at `at` for
 * each (`insertDailyScores`): leaves of a day's tree, in SQL so a million take seconds. With `erc8004Every`,
 * one agent in that many holds an active ERC-8004 proof of token `i` of SEED_ERC8004_REGISTRY, proven an hour
 * before `at`.
 */
export async function seedDailyScores(db: Queryable, seed: DailyScoresSeed & { ownerId: string; erc8004Every?: number }): Promise<void> {
  await seedClaimedAgents(db, { ownerId: seed.ownerId, count: seed.count, digits: seed.digits, claimedAt: seed.at - 86400 });
  if (seed.erc8004Every) {
    await db.query(
      `INSERT INTO proofs (id, kind, owner_id, agent_id, subject, binding, evidence, verified_at, last_checked_at)
       SELECT 'prf_' || i, 'erc8004', $1, ${agentIdSql(seed.digits)}, s.subject, 'erc8004:' || s.subject, '{}', $2, $2
       FROM generate_series($3::int, $4::int, $3::int) AS i, LATERAL (SELECT '31337:${SEED_ERC8004_REGISTRY}:' || i AS subject) s`,
      [seed.ownerId, seed.at - 3600, seed.erc8004Every, seed.count],
    );
  }
  await insertDailyScores(db, seed);
}

/**
 * Inserts owner `ownerId` and agents `<prefix><i>` (i from 1 to `count`, zero-padded to `digits`; prefix `agt_` unless
 * given) claimed at `claimedAt`, with no score: what a daily recompute scores, in SQL so thousands take a moment.
 */
export async function seedClaimedAgents(
  db: Queryable,
  seed: { ownerId: string; count: number; digits: number; claimedAt: number; prefix?: string },
): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(seed.prefix ?? "agt_")) throw new Error(`an agent id prefix of letters, digits and _: ${seed.prefix}`);
  await db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ($1, 'x', $2)", [seed.ownerId, seed.claimedAt]);
  await db.query(
    `INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at)
     SELECT ${agentIdSql(seed.digits, seed.prefix)}, $1, 1, $2, 'x', $2 FROM generate_series(1, $3) AS i`,
    [seed.ownerId, seed.claimedAt, seed.count],
  );
}

/**
 * Inserts a daily score of `day` at `at` for agents `agt_<i>` already seeded (i from 1 to `count`), its sha256
 * that of `i` and the day, kept as text (`{}` inputs) with the compact result of a newly claimed agent's score
 * at `at` (migration 016: the same bytes serve every agent, whose agent, digest and total are the row's).
 */
export async function insertDailyScores(db: Queryable, seed: DailyScoresSeed): Promise<void> {
  const c = SEEDED_COMPONENTS;
  const [columns, values] = seed.beforeMigration014
    ? ["", ""]
    : [
        ", established, identity_points, reliability_points, integrity_points, packed",
        `, ${c.established}, ${c.identity}, ${c.reliability}, ${c.integrity}, $6`,
      ];
  const { result } = scoreFromInputs(
    buildScoreInputs({ agent: "agt_seed", method: "0.2", at: seed.at, claimedAt: seed.at - 86400, proofs: [], penalties: [], days: [] }),
  );
  // Each agent's row names its latest score, as the SQL store's inserts leave it (migration 008).
  await db.query(
    `WITH inserted AS (
       INSERT INTO scores (agent_id, method, at, trigger, day, inputs, sha256, result, total${columns})
       SELECT ${agentIdSql(seed.digits)}, '0.2', $1, 'daily', $2, '{}', encode(sha256((i::text || $2)::bytea), 'hex'), '{}',
         ${seed.beforeMigration014 ? "0" : `${c.identity} + ${c.reliability} + ${c.integrity}`}${values}
       FROM generate_series(1, $3) AS i
       RETURNING id, agent_id, at, total
     )
     UPDATE agents a SET score_id = n.id, score_at = n.at, score_total = n.total, score_band = $4, score_state = $5
     FROM inserted n WHERE a.id = n.agent_id AND (a.score_id IS NULL OR (n.at, n.id) > (a.score_at, a.score_id))`,
    [seed.at, seed.day, seed.count, result.band, result.state, ...(seed.beforeMigration014 ? [] : [packResult(result, seed.at)])],
  );
}
