/** What operators record, in SQL (`OperationsTx`): declared windows (V4.4), penalties and the audit log (V7), settings. */
import type { AuditEntry, OperationsTx, OutageRow, PenaltyCode, PenaltyRow } from "../service/ports";
import type { Queryable } from "./db";
import { many, one } from "./queries";

/** An `outages` row. */
export type OutageRecord = {
  id: string;
  start_at: number;
  end_at: number | null;
  declared_at: number;
  closed_at: number | null;
  reason: string;
  declared_by: string;
  closed_by: string | null;
};
/** A `penalties` row. */
export type PenaltyRecord = {
  id: string;
  agent_id: string;
  code: PenaltyCode;
  points: number;
  days: number;
  added_at: number;
  reason: string;
  revoked_at: number | null;
  revoke_reason: string | null;
  added_by: string;
  revoked_by: string | null;
};
type AuditRecord = { id: number; at: number; actor: string; action: string; subject: string; details: unknown };

export const outageFrom = (r: OutageRecord): OutageRow => ({
  id: r.id,
  start: r.start_at,
  end: r.end_at,
  declaredAt: r.declared_at,
  closedAt: r.closed_at,
  reason: r.reason,
  declaredBy: r.declared_by,
  closedBy: r.closed_by,
});

export const penaltyFrom = (r: PenaltyRecord): PenaltyRow => ({
  id: r.id,
  agentId: r.agent_id,
  code: r.code,
  points: r.points,
  days: r.days,
  addedAt: r.added_at,
  reason: r.reason,
  revokedAt: r.revoked_at,
  revokeReason: r.revoke_reason,
  addedBy: r.added_by,
  revokedBy: r.revoked_by,
});

/** Appends one entry to the audit log (V7: who, when, what and why). */
export async function insertAuditEntry(q: Queryable, e: AuditEntry): Promise<void> {
  await q.query("INSERT INTO audit_log (at, actor, action, subject, details) VALUES ($1, $2, $3, $4, $5)", [
    e.at,
    e.actor,
    e.action,
    e.subject,
    JSON.stringify(e.details),
  ]);
}

/** The operations part of the store, its statements run by `q`. */
export function operationsIn(q: Queryable): OperationsTx {
  return {
    listOutages: () => many(q, "SELECT * FROM outages ORDER BY start_at, id", [], outageFrom),
    getOutage: (id) => one(q, "SELECT * FROM outages WHERE id = $1", [id], outageFrom),
    async insertOutage(o) {
      await q.query(
        "INSERT INTO outages (id, start_at, end_at, declared_at, closed_at, reason, declared_by) VALUES ($1, $2, $3, $4, NULL, $5, $6)",
        [o.id, o.start, o.end, o.declaredAt, o.reason, o.declaredBy],
      );
    },
    async closeOutage(id, end, closedAt, closedBy) {
      await q.query("UPDATE outages SET end_at = $2, closed_at = $3, closed_by = $4 WHERE id = $1", [id, end, closedAt, closedBy]);
    },

    async insertPenalty(p) {
      await q.query(
        "INSERT INTO penalties (id, agent_id, code, points, days, added_at, reason, added_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        [p.id, p.agentId, p.code, p.points, p.days, p.addedAt, p.reason, p.addedBy],
      );
    },
    getPenalty: (id) => one(q, "SELECT * FROM penalties WHERE id = $1", [id], penaltyFrom),
    async revokePenalty(id, revokedAt, reason, revokedBy) {
      await q.query("UPDATE penalties SET revoked_at = $2, revoke_reason = $3, revoked_by = $4 WHERE id = $1", [
        id,
        revokedAt,
        reason,
        revokedBy,
      ]);
    },
    listPenalties: (agentId, page) =>
      page === undefined
        ? many(q, "SELECT * FROM penalties WHERE agent_id = $1 ORDER BY added_at, id", [agentId], penaltyFrom)
        : many(
            q,
            "SELECT * FROM penalties WHERE agent_id = $1 AND (added_at, id) > ($2::bigint, $3::text) ORDER BY added_at, id LIMIT $4",
            [agentId, page.after?.addedAt ?? -1, page.after?.id ?? "", page.limit],
            penaltyFrom,
          ),

    audit: (e) => insertAuditEntry(q, e),
    listAudit: ({ afterId, limit }) =>
      many(q, "SELECT * FROM audit_log WHERE id > $1 ORDER BY id LIMIT $2", [afterId, limit], (r: AuditRecord) => ({
        id: r.id,
        at: r.at,
        actor: r.actor,
        action: r.action,
        subject: r.subject,
        details: r.details,
      })),

    getSetting: <T>(key: string) => one(q, "SELECT value FROM settings WHERE key = $1", [key], (r: { value: T }) => r.value),
    async setSetting(key, value) {
      await q.query("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2", [
        key,
        JSON.stringify(value),
      ]);
    },
  };
}
