import { z } from "zod";
import { defineEvent } from "../event";

/** V6: a scheduled re-check failed once; a second failure in a row removes the proof. */
export const proofCheckFailed = defineEvent({
  type: "proof.check_failed",
  summary:
    "A scheduled re-check of a proof failed (V6): one more failure in a row removes it. Says why, and when the next check is (fix the source before then).",
  audience: "owner",
  data: z.object({
    proofId: z.string(),
    kind: z.string(),
    subject: z.string(),
    agentId: z.string().nullable(),
    code: z.string().describe("why it failed, as the proof's error code"),
    message: z.string(),
    consecutiveFailures: z.number().int(),
    nextCheckAt: z.string().nullable().describe("when it is checked again; null for a kind never re-checked"),
  }),
  example: {
    proofId: "prf_0a1b2c3d4e5f6071",
    kind: "domain",
    subject: "example.com",
    agentId: "agt_3f9c0d1e2b4a5968",
    code: "proof_dns_record_not_found",
    message: "no TXT record _vrai.example.com holds the challenge",
    consecutiveFailures: 1,
    nextCheckAt: "2026-11-09T10:00:00Z",
  },
});
