/**
 * The directory's SQL: agents ranked by their latest score's total, kept on their rows by migration
 * 008's triggers. Rank order is `(-score_total, id)`, the key of `agents_rank_idx` (and, after the
 * state, of `agents_state_rank_idx`), so a keyset position bounds the index scan with one row
 * comparison and every page costs the same however deep it is.
 */
import type { DirectoryEntry, DirectoryStore } from "../service/directory";
import type { Queryable } from "./db";

type Row = {
  id: string;
  name: string | null;
  registered_name: string | null;
  score_id: number;
  score_at: number;
  score_total: number;
  score_band: string;
  score_state: string;
};

const entryFrom = (r: Row): DirectoryEntry => ({
  agentId: r.id,
  name: r.name,
  registeredName: r.registered_name,
  scoreId: r.score_id,
  at: r.score_at,
  total: r.score_total,
  band: r.score_band,
  state: r.score_state,
});

/** The directory's store on PostgreSQL or PGlite. */
export function createDirectoryRepository(db: Queryable): DirectoryStore {
  return {
    async rankedAgents({ state, totals, band, q, from, limit }) {
      const params: unknown[] = [];
      const param = (value: unknown) => `$${params.push(value)}`;
      // An unclaimed agent's directory columns are cleared with it (releaseAgent); its own test is kept as well.
      const where = ["score_total IS NOT NULL", "released_at IS NULL"];
      if (state !== undefined) where.push(`score_state = ${param(state)}`);
      // The band as a range of totals bounds the index scan; the stored band is checked too.
      if (totals !== undefined) where.push(`-score_total BETWEEN ${param(-totals.max)} AND ${param(-totals.min)}`);
      if (band !== undefined) where.push(`score_band = ${param(band)}`);
      // strpos, not LIKE: a search for "%" or "_" means those characters.
      if (q !== undefined) {
        const p = param(q);
        where.push(`(strpos(lower(name), lower(${p})) > 0 OR id = ${p})`);
      }
      const backwards = from?.direction === "before";
      if (from !== undefined) where.push(`(-score_total, id) ${backwards ? "<" : ">"} (${param(-from.total)}, ${param(from.agentId)})`);
      const order = backwards ? "-score_total DESC, id DESC" : "-score_total, id";
      // The page first, by the rank index; then each of its agents' registered name: the name in the registration file
      // (issue #27) of its latest active erc8004 proof, when that file was read.
      const { rows } = await db.query<Row>(
        `SELECT page.*, registered.name AS registered_name FROM (
           SELECT id, name, score_id, score_at, score_total, score_band, score_state FROM agents
           WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ${param(limit)}
         ) page
         LEFT JOIN LATERAL (
           SELECT f.file ->> 'name' AS name FROM (
             SELECT id FROM proofs WHERE agent_id = page.id AND kind = 'erc8004' AND removed_at IS NULL ORDER BY verified_at DESC, id DESC LIMIT 1
           ) p JOIN erc8004_registration_files f ON f.proof_id = p.id AND f.status = 'read'
         ) registered ON true
         ORDER BY ${order}`,
        params,
      );
      const entries = rows.map(entryFrom);
      return backwards ? entries.reverse() : entries;
    },
  };
}
