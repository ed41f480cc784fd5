/**
 * The service noticing what happens without a request (issue #28): check-in deadlines that passed
 * (agent.late), found by a scan of the check-ins' deadline index every scheduler pass (not a timer per
 * agent: the scan reads one pass's deadlines, whatever the number of agents), and events past their 30 days.
 */
import { BUSY_NEXT_HEARTBEAT_S, NEXT_HEARTBEAT_S, toRfc3339 } from "../../method";
import type { WebhooksTx } from "../../store/webhooks";
import type { Clock } from "../clock";
import { newEvent } from "../events/record";
import type { EventsTx, Transactions } from "../ports";
import { EVENTS_KEPT_S } from "./webhooks";

export type Deadlines = {
  /** Marks the lapses whose deadline passed since the last scan and records their agent.late; returns how many. */
  scanLapses(): Promise<number>;
  /** Deletes the events older than 30 days (with their deliveries and log); returns how many. */
  pruneEvents(): Promise<number>;
};

/** The furthest back a scan looks: a lapse older than this when the service comes back is not told (it is stale news). */
export const LAPSE_LOOKBACK_S = 86_400;
/** V3.3: every next_heartbeat_s a counted check-in can be given. */
const NEXT_HEARTBEATS = [NEXT_HEARTBEAT_S, BUSY_NEXT_HEARTBEAT_S];
const PRUNE_BATCH = 5000;

/**
 * The scans of `repo`. Where the last scan ended is kept in this process: after a start, the first scan
 * looks back `LAPSE_LOOKBACK_S`. Instances that scan the same deadlines mark each lapse once: the mark is
 * a compare-and-set on the agent's row (src/store/webhooks.ts), and only what one marked is told.
 */
export function createDeadlines(deps: { repo: Transactions<WebhooksTx & EventsTx>; clock: Clock }): Deadlines {
  const { repo, clock } = deps;
  let scannedTo: number | null = null;
  return {
    async scanLapses() {
      const to = clock.now();
      const from = Math.max(scannedTo ?? -Infinity, to - LAPSE_LOOKBACK_S);
      if (to <= from) return 0;
      const lapses = await repo.transaction(async (tx) => {
        const marked = await tx.markLapses(from, to, NEXT_HEARTBEATS);
        await tx.recordEvents(
          marked.map((l) =>
            newEvent("agent.late", l.ownerId, l.deadline, {
              agentId: l.agentId,
              lastCheckinAt: toRfc3339(l.lastArrival),
              deadline: toRfc3339(l.deadline),
            }),
          ),
        );
        return marked.length;
      });
      scannedTo = to;
      return lapses;
    },
    async pruneEvents() {
      const before = clock.now() - EVENTS_KEPT_S;
      for (let deleted = 0; ; ) {
        const n = await repo.transaction((tx) => tx.deleteEventsBefore(before, PRUNE_BATCH));
        deleted += n;
        if (n < PRUNE_BATCH) return deleted;
      }
    },
  };
}
