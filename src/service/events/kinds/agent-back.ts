import { z } from "zod";
import { defineEvent } from "../event";

/** The first counted check-in after an agent.late. */
export const agentBack = defineEvent({
  type: "agent.back",
  summary: "The agent's first counted check-in after an agent.late: when it arrived and the deadline it had missed.",
  audience: "owner",
  data: z.object({
    agentId: z.string(),
    arrival: z.string().describe("the counted check-in's arrival"),
    missedDeadline: z.string().describe("the deadline of the agent.late it ends (V3.5)"),
  }),
  example: { agentId: "agt_3f9c0d1e2b4a5968", arrival: "2026-11-02T11:02:41Z", missedDeadline: "2026-11-02T10:10:00Z" },
});
