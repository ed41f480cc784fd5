import { z } from "zod";
import { defineEvent } from "../event";

/** V7: an operator added a penalty to one of the owner's agents. */
export const penaltyAdded = defineEvent({
  type: "penalty.added",
  summary: "An operator added a penalty to the agent (V7): its code, points, days and reason.",
  audience: "owner",
  data: z.object({
    penaltyId: z.string(),
    agentId: z.string(),
    code: z.string(),
    points: z.number().int(),
    days: z.number().int(),
    reason: z.string(),
    addedBy: z.string(),
  }),
  example: {
    penaltyId: "pen_5e6f708192a3b4c5",
    agentId: "agt_3f9c0d1e2b4a5968",
    code: "rate_abuse",
    points: 20,
    days: 30,
    reason: "burst of 5,000 requests/min",
    addedBy: "alice",
  },
});
