/** ERC-8004 registration files as last read, one row per erc8004 proof (migration 018): the `RegistrationFileStore` in SQL. */
import type { RegistrationFileStore, StoredRegistration } from "../service/registration-files";
import type { RegistrationFile } from "../service/proofs/registration-file";
import type { Queryable } from "./db";
import { one } from "./queries";

type Record = {
  proof_id: string;
  agent_id: string;
  subject: string;
  uri: string | null;
  status: StoredRegistration["status"];
  file: RegistrationFile | null;
  reason: string | null;
  read_at: number;
};

function readingFrom(r: Record): StoredRegistration {
  const where = { proofId: r.proof_id, agentId: r.agent_id, subject: r.subject, readAt: Number(r.read_at) };
  if (r.status === "read" && r.file !== null && r.uri !== null) return { ...where, status: "read", uri: r.uri, file: r.file, reason: null };
  return { ...where, status: r.status === "unread" ? "unread" : "refused", uri: r.uri, file: null, reason: r.reason ?? "" };
}

/** The registration files' repository on `q`. */
export function createRegistrationFileRepository(q: Queryable): RegistrationFileStore {
  return {
    async saveReading(reading) {
      await q.query(
        `INSERT INTO erc8004_registration_files (proof_id, uri, status, file, reason, read_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (proof_id) DO UPDATE SET uri = EXCLUDED.uri, status = EXCLUDED.status, file = EXCLUDED.file,
           reason = EXCLUDED.reason, read_at = EXCLUDED.read_at`,
        [
          reading.proofId,
          reading.uri,
          reading.status,
          reading.file === null ? null : JSON.stringify(reading.file),
          reading.reason,
          reading.readAt,
        ],
      );
    },
    latestOfAgent: (agentId) =>
      // The agent's latest active erc8004 proof (as the leaf of a daily score names it), and its file if it was read.
      one(
        q,
        `SELECT f.*, p.agent_id, p.subject FROM (
           SELECT id, agent_id, subject FROM proofs WHERE agent_id = $1 AND kind = 'erc8004' AND removed_at IS NULL
           ORDER BY verified_at DESC, id DESC LIMIT 1
         ) p JOIN erc8004_registration_files f ON f.proof_id = p.id`,
        [agentId],
        readingFrom,
      ),
  };
}
