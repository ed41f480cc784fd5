import { z } from "zod";
import { defineEvent } from "../event";

/** V4: a declared outage window, sent to every owner. */
export const outageDeclared = defineEvent({
  type: "outage.declared",
  summary: "An operator declared an outage window (V4): check-ins whose deadline it covers are excused. Sent to every owner.",
  audience: "every owner",
  data: z.object({ outageId: z.string(), start: z.string(), end: z.string().nullable(), declaredAt: z.string(), reason: z.string() }),
  example: {
    outageId: "out_9a8b7c6d5e4f3a2b",
    start: "2026-11-02T08:00:00Z",
    end: null,
    declaredAt: "2026-11-02T08:05:00Z",
    reason: "database failover",
  },
});
