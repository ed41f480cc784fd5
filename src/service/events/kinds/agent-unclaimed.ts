import { z } from "zod";
import { defineEvent } from "../event";

/** Issue #29: the owner released the agent; no owner holds it until a new claim (V2). */
export const agentUnclaimed = defineEvent({
  type: "agent.unclaimed",
  summary:
    "The owner unclaimed the agent: its key stopped working, its proofs of one agent were removed (each told by a proof.removed), " +
    "and it has no owner and no score until an owner claims it again (a new claim, V2). Sent to the owner who unclaimed it, " +
    "who receives no more of its events.",
  audience: "owner",
  data: z.object({ agentId: z.string(), unclaimedAt: z.string().describe("when it was unclaimed") }),
  example: { agentId: "agt_3f9c0d1e2b4a5968", unclaimedAt: "2026-11-02T10:00:00Z" },
});
