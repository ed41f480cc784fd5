/**
 * The owners' switch of Vrai's ERC-8004 feedback (`erc8004_publishing`, migration 017) and the revocations it and the
 * proofs ask for, in SQL (`Erc8004PublishingTx`): run in the transaction of the change that asks, so a revocation is
 * never lost between a change and its send (the outbox, src/store/erc8004-feedback.ts, sends it).
 */
import type { Erc8004PublishingRow, Erc8004PublishingTx } from "../service/ports";
import type { Queryable } from "./db";
import { one } from "./queries";

type PublishingRecord = { agent_id: string; enabled: boolean; changed_at: number; reason: string | null };

const publishingFrom = (r: PublishingRecord): Erc8004PublishingRow => ({
  agentId: r.agent_id,
  enabled: r.enabled,
  changedAt: Number(r.changed_at),
  reason: r.reason,
});

/**
 * Asks the feedbacks `which` selects (a condition on `f`, its parameters from `$3`) to be revoked at `$1` for `$2`: one
 * whose giving transaction was never signed is dropped (it will never be sent: the sender stores a transaction only
 * while it is still planned); one given or being given is revoked by the sender once given. Returns how many.
 */
export async function askRevocation(q: Queryable, which: string, at: number, reason: string, params: unknown[]): Promise<number> {
  const { rowCount } = await q.query(
    `UPDATE erc8004_feedback f SET
       state = CASE WHEN f.state = 'planned' AND f.give_tx_hash IS NULL THEN 'dropped' ELSE f.state END,
       dropped_reason = CASE WHEN f.state = 'planned' AND f.give_tx_hash IS NULL THEN $2 END,
       revoke_asked_at = CASE WHEN f.state = 'planned' AND f.give_tx_hash IS NULL THEN NULL ELSE $1::bigint END,
       revoke_reason = CASE WHEN f.state = 'planned' AND f.give_tx_hash IS NULL THEN NULL ELSE $2 END,
       next_attempt_at = LEAST(f.next_attempt_at, $1::bigint)
     WHERE f.state IN ('planned', 'given') AND f.revoke_asked_at IS NULL AND ${which}`,
    [at, reason, ...params],
  );
  return rowCount;
}

/** The publishing part of the store, its statements run by `q`. */
export function erc8004PublishingIn(q: Queryable): Erc8004PublishingTx {
  return {
    getErc8004Publishing: (agentId) => one(q, "SELECT * FROM erc8004_publishing WHERE agent_id = $1", [agentId], publishingFrom),
    async setErc8004Publishing(row) {
      await q.query(
        `INSERT INTO erc8004_publishing (agent_id, enabled, changed_at, reason, planned_day) VALUES ($1, $2, $3, $4, NULL)
         ON CONFLICT (agent_id) DO UPDATE SET enabled = $2, changed_at = $3, reason = $4,
           planned_day = CASE WHEN $2 THEN NULL ELSE erc8004_publishing.planned_day END`,
        [row.agentId, row.enabled, row.changedAt, row.reason],
      );
    },
    withdrawErc8004Feedback: (agentId, at, reason) => askRevocation(q, "f.agent_id = $3", at, reason, [agentId]),
  };
}
