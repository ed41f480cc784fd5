/**
 * The SQL store on PostgreSQL or PGlite: the service's `Store`, made of one repository per feature
 * (accounts, check-in facts, operations, proofs, scores, ERC-8004 publishing, the console: each its own module, its SQL and its rows),
 * the batched check-in path and latest-score reads, and the site's paged reads.
 */
import type { LatestScores, ScoreSummary, Store, StoreTx } from "../service/ports";
import type { SiteStore } from "../service/reads";
import { accountsIn } from "./accounts";
import { checkinFactsIn } from "./checkin-facts";
import { consoleIn } from "./console";
import { createCheckinWrites } from "./checkin-writes";
import type { Db, Queryable } from "./db";
import { eventsIn } from "./events";
import { erc8004PublishingIn } from "./erc8004-publishing";
import { operationsIn, outageFrom, type OutageRecord } from "./operations";
import { proofsIn } from "./proofs";
import { createSummaryReader, latestScoresAfter, scoresIn } from "./scores";

export { insertAuditEntry } from "./operations";

/** Latest scores a page at a time, by agent id: what a latest-score cache is filled from at start. */
export type LatestScorePages = {
  /** The latest score of each of the next `limit` agents after `afterAgentId` (by id) that have one. */
  latestScoresAfter(afterAgentId: string, limit: number): Promise<ScoreSummary[]>;
};

export type SqlStore = Store & LatestScores & LatestScorePages & SiteStore;

/**
 * The store on `db`.
 * @param options.onScoresCommitted told the agents whose scores a transaction (or a statement outside
 *   one) wrote, once it has committed: what keeps a latest-score cache of this process fresh (another
 *   process's writes are heard through `NOTIFY vrai_scores`, src/store/score-cache-sync.ts)
 * @param options.rememberedAgents agents the check-in path keeps in memory (`createCheckinWrites`)
 */
export function createSqlStore(
  db: Db,
  options: { onScoresCommitted?: (agentIds: readonly string[]) => void; rememberedAgents?: number } = {},
): SqlStore {
  const committed = options.onScoresCommitted;

  /**
   * Every repository on `q`; the agents of the scores written (or unclaimed: their latest-score reads change too) go to
   * `written`, told once its transaction commits (at once outside one).
   */
  const txFor = (q: Queryable, written?: string[]): StoreTx => {
    const wrote = (agentIds: string[]) => {
      if (!committed) return;
      if (written) written.push(...agentIds);
      else committed(agentIds);
    };
    return {
      ...accountsIn(q, wrote),
      ...checkinFactsIn(q),
      ...operationsIn(q),
      ...proofsIn(q),
      ...scoresIn(q, wrote),
      ...eventsIn(q),
      ...erc8004PublishingIn(q),
      ...consoleIn(q),
    };
  };

  return {
    async transaction(fn) {
      const written: string[] = [];
      const result = await db.transaction((q) => fn(txFor(q, written)));
      if (committed && written.length > 0) committed(written);
      return result;
    },
    read: txFor(db),
    ...createSummaryReader(db),
    latestScoresAfter: (afterAgentId, limit) => latestScoresAfter(db, afterAgentId, limit),

    // Keyset pages: the row comparison resumes after the cursor's window, stable while windows are added.
    async listOutagesPage(after, limit) {
      const { rows } = await db.query<OutageRecord>(
        after === null
          ? "SELECT * FROM outages ORDER BY start_at DESC, id DESC LIMIT $1"
          : "SELECT * FROM outages WHERE (start_at, id) < ($2::bigint, $3::text) ORDER BY start_at DESC, id DESC LIMIT $1",
        after === null ? [limit] : [limit, after.start, after.id],
      );
      return rows.map(outageFrom);
    },
    async listDailyTotals(agentId, fromDay, toDay) {
      const { rows } = await db.query<{ day: string; total: number }>(
        "SELECT day, total FROM scores WHERE agent_id = $1 AND trigger = 'daily' AND day >= $2 AND day <= $3 ORDER BY day",
        [agentId, fromDay, toDay],
      );
      return rows.map((r) => ({ day: r.day, total: r.total }));
    },
    async dayOfClaim(agentId, claimId, day) {
      const { rows } = await db.query<{ checkins: number; on_time: number }>(
        "SELECT checkins, on_time FROM agent_days WHERE agent_id = $1 AND claim_id = $2 AND day = $3",
        [agentId, claimId, day],
      );
      return rows.length === 0 ? null : { checkins: Number(rows[0].checkins), onTime: Number(rows[0].on_time) };
    },
    async hasDailyScoreFrom(agentId, fromDay) {
      const { rows } = await db.query("SELECT 1 FROM scores WHERE agent_id = $1 AND trigger = 'daily' AND day >= $2 LIMIT 1", [
        agentId,
        fromDay,
      ]);
      return rows.length > 0;
    },

    ...createCheckinWrites(db, { rememberedAgents: options.rememberedAgents }),
  };
}
