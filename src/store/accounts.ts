/** Owners, agents and claims (V2) in SQL: the accounts part of the store (`AccountsTx`). */
import type { AccountsTx, OwnerRow } from "../service/ports";
import { AGENT_COLUMNS, agentFrom } from "./agent-rows";
import type { Queryable } from "./db";
import { count, one } from "./queries";

type OwnerRecord = { id: string; token_hash: string; created_at: number };

const ownerFrom = (r: OwnerRecord): OwnerRow => ({ id: r.id, tokenHash: r.token_hash, createdAt: r.created_at });

/**
 * The accounts part of the store, its statements run by `q`.
 * @param wrote told the agents whose latest-score reads changed (an agent unclaimed), as a score written tells them
 */
export function accountsIn(q: Queryable, wrote: (agentIds: string[]) => void): AccountsTx {
  const ids = async (sql: string, params: unknown[]) => (await q.query<{ id: string }>(sql, params)).rows.map((r) => r.id);
  return {
    async insertOwner(o) {
      await q.query("INSERT INTO owners (id, token_hash, created_at) VALUES ($1, $2, $3)", [o.id, o.tokenHash, o.createdAt]);
    },
    // NO KEY UPDATE: lockers of one owner wait for each other, rows that only reference the owner (proofs, claims) do not.
    getOwner: (id, options) => one(q, `SELECT * FROM owners WHERE id = $1${options?.lock ? " FOR NO KEY UPDATE" : ""}`, [id], ownerFrom),

    getAgent: (id, options) =>
      one(q, `SELECT ${AGENT_COLUMNS} FROM agents WHERE id = $1${options?.lock ? " FOR UPDATE" : ""}`, [id], agentFrom),
    async insertAgent(a) {
      await q.query(
        `INSERT INTO agents (id, name, owner_id, claim_id, claimed_at, key_hash, last_arrival, last_next_heartbeat_s, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, $7)`,
        [a.id, a.name, a.ownerId, a.claimId, a.claimedAt, a.keyHash, a.createdAt],
      );
    },
    async startClaim(agentId, c) {
      const { rows } = await q.query<{ id: number }>(
        "INSERT INTO claims (agent_id, owner_id, kind, claimed_at) VALUES ($1, $2, $3, $4) RETURNING id",
        [agentId, c.ownerId, c.kind, c.claimedAt],
      );
      const claimId = rows[0].id;
      await q.query(
        `UPDATE agents SET owner_id = $2, claim_id = $3, claimed_at = $4, key_hash = $5,
           last_arrival = NULL, last_next_heartbeat_s = NULL, last_day_digest = '', late_deadline = NULL, released_at = NULL
         WHERE id = $1`,
        [agentId, c.ownerId, claimId, c.claimedAt, c.keyHash],
      );
      return claimId;
    },
    async setAgentKey(agentId, keyHash) {
      await q.query("UPDATE agents SET key_hash = $2 WHERE id = $1", [agentId, keyHash]);
    },
    async releaseAgent(agentId, at) {
      // The directory's columns (migration 008) go with it, so its rank index no longer holds it; a new claim's first score
      // puts them back. Other processes' latest-score caches hear of it as of a score written (migration 005's channel).
      await q.query(
        `WITH released AS (
           UPDATE agents SET released_at = $2, key_hash = '', late_deadline = NULL,
             score_id = NULL, score_at = NULL, score_total = NULL, score_band = NULL, score_state = NULL
           WHERE id = $1 RETURNING id
         )
         SELECT pg_notify('vrai_scores', id) FROM released`,
        [agentId, at],
      );
      wrote([agentId]);
    },
    listClaimedAgentIds: (page) =>
      ids("SELECT id FROM agents WHERE id > $1 AND released_at IS NULL ORDER BY id LIMIT $2", [page.after ?? "", page.limit]),
    listAgentsOfOwner: (ownerId, page) =>
      page === undefined
        ? ids("SELECT id FROM agents WHERE owner_id = $1 AND released_at IS NULL ORDER BY id", [ownerId])
        : ids("SELECT id FROM agents WHERE owner_id = $1 AND released_at IS NULL AND id > $2 ORDER BY id LIMIT $3", [
            ownerId,
            page.after ?? "",
            page.limit,
          ]),
    countAgentsOfOwner: (ownerId) =>
      count(q, "SELECT count(*)::int AS n FROM agents WHERE owner_id = $1 AND released_at IS NULL", [ownerId]),
  };
}
