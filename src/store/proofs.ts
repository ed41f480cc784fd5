/** Identity proofs (V6) and their challenges, in SQL (`ProofsTx`). */
import type { ChallengeRow, ProofKind, ProofRow, ProofsTx } from "../service/ports";
import type { Queryable } from "./db";
import { count, many, one } from "./queries";

type ChallengeRecord = {
  id: string;
  kind: ProofKind;
  owner_id: string;
  agent_id: string | null;
  subject: string;
  nonce: string;
  token: string;
  message: string;
  issued_at: number;
  expires_at: number;
  used_at: number | null;
};
/** A `proofs` row. */
export type ProofRecord = {
  id: string;
  kind: ProofKind;
  owner_id: string;
  agent_id: string | null;
  subject: string;
  binding: string | null;
  evidence: unknown;
  verified_at: number;
  last_checked_at: number;
  consecutive_failures: number;
  removed_at: number | null;
  removed_reason: string | null;
};

const challengeFrom = (r: ChallengeRecord): ChallengeRow => ({
  id: r.id,
  kind: r.kind,
  ownerId: r.owner_id,
  agentId: r.agent_id,
  subject: r.subject,
  nonce: r.nonce,
  token: r.token,
  message: r.message,
  issuedAt: r.issued_at,
  expiresAt: r.expires_at,
  usedAt: r.used_at,
});

export const proofFrom = (r: ProofRecord): ProofRow => ({
  id: r.id,
  kind: r.kind,
  ownerId: r.owner_id,
  agentId: r.agent_id,
  subject: r.subject,
  binding: r.binding,
  evidence: r.evidence,
  verifiedAt: r.verified_at,
  lastCheckedAt: r.last_checked_at,
  consecutiveFailures: r.consecutive_failures,
  removedAt: r.removed_at,
  removedReason: r.removed_reason,
});

/** The proofs part of the store, its statements run by `q`. */
export function proofsIn(q: Queryable): ProofsTx {
  return {
    async insertChallenge(c) {
      await q.query(
        `INSERT INTO proof_challenges (id, kind, owner_id, agent_id, subject, nonce, token, message, issued_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [c.id, c.kind, c.ownerId, c.agentId, c.subject, c.nonce, c.token, c.message, c.issuedAt, c.expiresAt],
      );
    },
    useChallenge: async (id, at) =>
      (await q.query("UPDATE proof_challenges SET used_at = $2 WHERE id = $1 AND used_at IS NULL", [id, at])).rowCount === 1,
    getChallenge: (id) => one(q, "SELECT * FROM proof_challenges WHERE id = $1", [id], challengeFrom),
    countOpenChallenges: (ownerId, at) =>
      count(q, "SELECT count(*)::int AS n FROM proof_challenges WHERE owner_id = $1 AND used_at IS NULL AND expires_at > $2", [
        ownerId,
        at,
      ]),
    deleteExpiredChallenges: async (at, { ownerId, limit }) =>
      (
        await q.query(
          `DELETE FROM proof_challenges WHERE id IN (
           SELECT id FROM proof_challenges WHERE expires_at <= $1 ${ownerId === undefined ? "" : "AND owner_id = $3"} ORDER BY expires_at LIMIT $2
         )`,
          ownerId === undefined ? [at, limit] : [at, limit, ownerId],
        )
      ).rowCount ?? 0,
    // The arbiter is proofs_active_binding_idx: a proof whose binding another transaction holds (or
    // is committing) is not written, and the statement waits for that transaction rather than
    // failing with a unique violation. Any other conflict (an id) still fails.
    async insertProof(p) {
      const { rowCount } = await q.query(
        `INSERT INTO proofs (id, kind, owner_id, agent_id, subject, binding, evidence, verified_at, last_checked_at, consecutive_failures)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (binding) WHERE removed_at IS NULL AND binding IS NOT NULL DO NOTHING`,
        [
          p.id,
          p.kind,
          p.ownerId,
          p.agentId,
          p.subject,
          p.binding,
          JSON.stringify(p.evidence),
          p.verifiedAt,
          p.lastCheckedAt,
          p.consecutiveFailures,
        ],
      );
      return rowCount === 1;
    },
    getProof: (id) => one(q, "SELECT * FROM proofs WHERE id = $1", [id], proofFrom),
    findActiveBinding: (binding) => one(q, "SELECT * FROM proofs WHERE binding = $1 AND removed_at IS NULL", [binding], proofFrom),
    ownerLevelProofsAt: (ownerId, at) =>
      many(
        q,
        `SELECT * FROM proofs
         WHERE agent_id IS NULL AND owner_id = $1 AND verified_at <= $2 AND (removed_at IS NULL OR removed_at > $2)
         ORDER BY verified_at, id`,
        [ownerId, at],
        proofFrom,
      ),
    proofsForAgentAt: (agentId, ownerId, at, page) =>
      many(
        q,
        `SELECT * FROM proofs
         WHERE (agent_id = $1 OR (agent_id IS NULL AND owner_id = $2))
           AND verified_at <= $3 AND (removed_at IS NULL OR removed_at > $3)
           ${page === undefined ? "" : "AND (verified_at, id) > ($4::bigint, $5::text)"}
         ORDER BY verified_at, id${page === undefined ? "" : " LIMIT $6"}`,
        page === undefined
          ? [agentId, ownerId, at]
          : [agentId, ownerId, at, page.after?.verifiedAt ?? -1, page.after?.id ?? "", page.limit],
        proofFrom,
      ),
    listActiveProofs: () => many(q, "SELECT * FROM proofs WHERE removed_at IS NULL ORDER BY id", [], proofFrom),
    async updateProofCheck(id, check) {
      await q.query("UPDATE proofs SET last_checked_at = $2, consecutive_failures = $3 WHERE id = $1", [
        id,
        check.lastCheckedAt,
        check.consecutiveFailures,
      ]);
    },
    async removeProof(id, at, reason) {
      await q.query("UPDATE proofs SET removed_at = $2, removed_reason = $3 WHERE id = $1 AND removed_at IS NULL", [id, at, reason]);
    },
  };
}
