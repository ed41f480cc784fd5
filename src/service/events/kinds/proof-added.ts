import { z } from "zod";
import { defineEvent } from "../event";

/** V6: a proof was verified and recorded. */
export const proofAdded = defineEvent({
  type: "proof.added",
  summary: "An identity proof was verified and recorded (V6): of one agent, or of the owner (agentId null), counting for all its agents.",
  audience: "owner",
  data: z.object({ proofId: z.string(), kind: z.string(), subject: z.string(), agentId: z.string().nullable() }),
  example: { proofId: "prf_0a1b2c3d4e5f6071", kind: "domain", subject: "example.com", agentId: "agt_3f9c0d1e2b4a5968" },
});
