import { z } from "zod";
import { defineEvent } from "../event";

/** V7: an operator revoked a penalty of one of the owner's agents. */
export const penaltyRevoked = defineEvent({
  type: "penalty.revoked",
  summary: "An operator revoked a penalty of the agent from now on (V7), with the reason.",
  audience: "owner",
  data: z.object({ penaltyId: z.string(), agentId: z.string(), reason: z.string(), revokedBy: z.string() }),
  example: { penaltyId: "pen_5e6f708192a3b4c5", agentId: "agt_3f9c0d1e2b4a5968", reason: "appeal upheld", revokedBy: "alice" },
});
