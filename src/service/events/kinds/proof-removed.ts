import { z } from "zod";
import { defineEvent } from "../event";

/** V6: a proof was removed (by its owner, after two failed checks, a moved identity token, a transfer, or an unclaim). */
export const proofRemoved = defineEvent({
  type: "proof.removed",
  summary:
    "An identity proof was removed (V6): by its owner, after two failed re-checks in a row, when its identity token moved, when the agent " +
    "went to another owner, or when its owner unclaimed it.",
  audience: "owner",
  data: z.object({ proofId: z.string(), kind: z.string(), subject: z.string(), agentId: z.string().nullable(), reason: z.string() }),
  example: {
    proofId: "prf_0a1b2c3d4e5f6071",
    kind: "domain",
    subject: "example.com",
    agentId: "agt_3f9c0d1e2b4a5968",
    reason: "failed two checks in a row",
  },
});
