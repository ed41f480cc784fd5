/** The agents table's columns and rows as the store hands them out. */
import type { AgentRow } from "../service/ports";

/** An `agents` row as AGENT_COLUMNS reads it. */
export type AgentRecord = {
  id: string;
  name: string | null;
  owner_id: string;
  claim_id: number;
  claimed_at: number;
  key_hash: string;
  last_arrival: number | null;
  last_next_heartbeat_s: number | null;
  last_day_digest: string;
  late_deadline: number | null;
  released_at: number | null;
  created_at: number;
};

// Explicit column lists on the hot paths: their statements are prepared once per connection (db.ts).
export const AGENT_COLUMNS =
  "id, name, owner_id, claim_id, claimed_at, key_hash, last_arrival, last_next_heartbeat_s, last_day_digest, late_deadline, released_at, created_at";
export const AGENT_COLUMNS_OF_A = AGENT_COLUMNS.replace(/(\w+)/g, "a.$1");

export const agentFrom = (r: AgentRecord): AgentRow => ({
  id: r.id,
  name: r.name,
  ownerId: r.owner_id,
  claimId: r.claim_id,
  claimedAt: r.claimed_at,
  keyHash: r.key_hash,
  // Set together by a counted check-in, and cleared together by a claim.
  last:
    r.last_arrival === null || r.last_next_heartbeat_s === null
      ? null
      : { arrival: r.last_arrival, nextHeartbeatS: r.last_next_heartbeat_s, dayDigest: r.last_day_digest },
  lateDeadline: r.late_deadline,
  releasedAt: r.released_at,
  createdAt: r.created_at,
});

/**
 * The agent's row after its counted check-in `c` (the write of src/store/checkin-writes.ts, or the memory store's): its
 * new previous check-in, with `dayDigest` its arrival day's digest, and no late mark. Spelt out: an object spread with
 * extra keys makes V8 build the object generically, a literal does not.
 */
export const agentAfterCheckin = (
  agent: AgentRow,
  c: { arrival: number; nextHeartbeatS: number },
  dayDigest: string,
  keyHash = agent.keyHash,
): AgentRow => ({
  id: agent.id,
  name: agent.name,
  ownerId: agent.ownerId,
  claimId: agent.claimId,
  claimedAt: agent.claimedAt,
  keyHash,
  last: { arrival: c.arrival, nextHeartbeatS: c.nextHeartbeatS, dayDigest },
  lateDeadline: null,
  releasedAt: null,
  createdAt: agent.createdAt,
});
