import { z } from "zod";
import { defineEvent } from "../event";

/** V2: an operator's transfer gave the agent to another owner. */
export const claimChanged = defineEvent({
  type: "claim.changed",
  summary:
    "The agent was transferred to another owner (V2: a new claim; its proofs of one agent are removed). Sent to the owner who lost it, who no " +
    "longer receives its events.",
  audience: "owner",
  data: z.object({ agentId: z.string(), claimedAt: z.string().describe("when the new claim began"), reason: z.string() }),
  example: { agentId: "agt_3f9c0d1e2b4a5968", claimedAt: "2026-11-02T10:00:00Z", reason: "ownership dispute settled" },
});
