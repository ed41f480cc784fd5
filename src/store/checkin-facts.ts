/** What counted check-ins left for the scores, in SQL (`CheckinFactsTx`): day aggregates (V5, V10) and check-ins of one instant. */
import type { DayAggregate } from "../method";
import type { CheckinFactsTx } from "../service/ports";
import { atMidnight } from "./checkin-writes";
import type { Queryable } from "./db";
import { count, many } from "./queries";

/** An `agent_days` row. */
export type DayRecord = { day: string; checkins: number; on_time: number; credit_s: number; coverage_s: number; digest: string };

export const DAY_COLUMNS = "day, checkins, on_time, credit_s, coverage_s, digest";

export const dayFrom = (r: DayRecord): DayAggregate => ({
  day: r.day,
  checkins: r.checkins,
  onTime: r.on_time,
  creditS: r.credit_s,
  coverageS: r.coverage_s,
  digest: r.digest,
});

/** The check-in facts part of the store, its statements run by `q`. */
export function checkinFactsIn(q: Queryable): CheckinFactsTx {
  return {
    listDays: (agentId, claimId, lastDay) =>
      many(
        q,
        `SELECT ${DAY_COLUMNS} FROM agent_days WHERE agent_id = $1 AND claim_id = $2 AND day <= $3 ORDER BY day`,
        [agentId, claimId, lastDay],
        dayFrom,
      ),
    countCheckinsAt: (agentId, claimId, at) =>
      count(q, `SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1 AND claim_id = $2 AND arrival = $3${atMidnight(at)}`, [
        agentId,
        claimId,
        at,
      ]),
  };
}
