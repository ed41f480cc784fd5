import { z } from "zod";
import { defineEvent } from "../event";

/** A score's values an owner watches (V8). */
const scoreValues = z.object({
  scoreId: z.number().int(),
  total: z.number().int(),
  band: z.string(),
  state: z.enum(["provisional", "established"]),
});

/** The agent's latest score changed its total, band or state (V8, V9). */
export const scoreChanged = defineEvent({
  type: "score.changed",
  summary:
    "The agent's latest score has another total, band or state than the one before it (a daily recompute, or a change of its claim, proofs or " +
    "penalties, V9): the new values, the previous ones (null for the claim's first score) and the score's id.",
  audience: "owner",
  data: z.object({
    agentId: z.string(),
    at: z.string().describe("the score's instant (V1)"),
    trigger: z.enum(["daily", "change"]),
    ...scoreValues.shape,
    previous: scoreValues.nullable(),
  }),
  example: {
    agentId: "agt_3f9c0d1e2b4a5968",
    at: "2026-11-03T00:00:00Z",
    trigger: "daily",
    scoreId: 1042,
    total: 236,
    band: "200-399",
    state: "provisional",
    previous: { scoreId: 977, total: 230, band: "200-399", state: "provisional" },
  },
});
