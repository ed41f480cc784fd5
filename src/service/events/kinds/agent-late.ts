import { z } from "zod";
import { defineEvent } from "../event";

/** V3.5: the deadline after the agent's previous counted check-in passed without a counted check-in. */
export const agentLate = defineEvent({
  type: "agent.late",
  summary:
    "The agent's check-in deadline (V3.5: its previous counted check-in's arrival, next_heartbeat_s and 600 s) passed without a counted " +
    "check-in. Sent once per lapse, to its owner only, and not when a declared outage covers the deadline (V4): a private alert, never a public " +
    "count of missed check-ins (V10).",
  audience: "owner",
  data: z.object({
    agentId: z.string(),
    lastCheckinAt: z.string().describe("the arrival of its previous counted check-in"),
    deadline: z.string().describe("when the next one was due at the latest (V3.5)"),
  }),
  example: { agentId: "agt_3f9c0d1e2b4a5968", lastCheckinAt: "2026-11-02T09:00:00Z", deadline: "2026-11-02T10:10:00Z" },
});
