import { z } from "zod";
import { PROOF_KINDS, toRfc3339 } from "../method";
import type { VraiService } from "../service";
import { NotFoundError } from "../service/errors";
import type { ProofChecks } from "../service/proof-checks";
import type { ProofRow } from "../service/ports";
import { proofTypedData } from "../service/proofs/challenge";
import { errorSchema, idSchema, type RouteSpec } from "./routes";

const e = (description: string) => ({ description, schema: errorSchema });

function proofJson(p: ProofRow) {
  return {
    id: p.id, kind: p.kind, subject: p.subject, agentId: p.agentId, ownerId: p.ownerId, verifiedAt: toRfc3339(p.verifiedAt),
    lastCheckedAt: toRfc3339(p.lastCheckedAt), removedAt: p.removedAt === null ? null : toRfc3339(p.removedAt), removedReason: p.removedReason,
  };
}

/** Identity proofs (V6): challenges, verified submissions, listing and removal. */
export function proofRoutes(service: VraiService, proofs: ProofChecks): RouteSpec[] {
  return [
    {
      method: "post", path: "/v1/proofs/challenges", tag: "proofs", auth: "owner",
      summary: "Issue a challenge (single use, expires in 1 h) to prove a wallet, GitHub account, domain or ERC-8004 identity (V6).",
      body: z.object({ kind: z.enum(PROOF_KINDS), subject: z.string().min(1).max(300), agentId: idSchema.optional() }).strict(),
      responses: { 201: { description: "issued" }, 400: e("invalid subject or kind"), 403: e("not your agent"), 404: e("no such agent") },
      handler: async ({ ownerId, body }) => {
        const c = await proofs.issueChallenge(ownerId, body as { kind: (typeof PROOF_KINDS)[number]; subject: string; agentId?: string });
        const typedData = c.kind === "wallet" || c.kind === "erc8004" ? proofTypedData(c) : undefined;
        return {
          status: 201,
          body: {
            id: c.id, kind: c.kind, subject: c.subject, agentId: c.agentId, token: c.token, message: c.message,
            expiresAt: toRfc3339(c.expiresAt), ...(typedData ? { typedData: JSON.parse(JSON.stringify(typedData, (_k, v) => (typeof v === "bigint" ? v.toString() : v))) } : {}),
          },
        };
      },
    },
    {
      method: "post", path: "/v1/proofs", tag: "proofs", auth: "owner",
      summary: "Answer a challenge with evidence; the proof is verified against its real source, recorded, and the score recomputed at once.",
      body: z.object({ challengeId: z.string().min(1).max(64), evidence: z.record(z.string(), z.unknown()) }).strict(),
      responses: {
        201: { description: "verified and recorded" }, 400: e("invalid evidence"), 404: e("no such challenge"),
        409: e("challenge already used, or the domain / ERC-8004 identity is held by another agent"), 422: e("the evidence does not prove the subject"),
        503: e("the proof's source could not be reached"),
      },
      handler: async ({ ownerId, body }) => {
        const b = body as { challengeId: string; evidence: unknown };
        return { status: 201, body: proofJson(await proofs.submitProof(ownerId, b.challengeId, b.evidence)) };
      },
    },
    {
      method: "get", path: "/v1/agents/:id/proofs", tag: "proofs", auth: "none",
      summary: "The identity proofs that count for an agent now: its own and its owner's (V6).",
      params: z.object({ id: idSchema }),
      responses: { 200: { description: "ok" }, 404: e("no such agent") },
      handler: async ({ params }) => {
        const agent = await service.store.read.getAgent(params.id);
        if (!agent) throw new NotFoundError("agent_not_found", `agent ${params.id} does not exist`);
        const rows = await service.store.read.proofsForAgentAt(agent.id, agent.ownerId, service.clock.now());
        return { status: 200, body: { agentId: agent.id, proofs: rows.map(proofJson) } };
      },
    },
    {
      method: "delete", path: "/v1/proofs/:id", tag: "proofs", auth: "owner",
      summary: "Remove one of your proofs; the scores it counted for are recomputed at once.",
      params: z.object({ id: idSchema }),
      responses: { 200: { description: "removed" }, 403: e("not your proof"), 404: e("no such proof"), 409: e("already removed") },
      handler: async ({ ownerId, params }) => ({ status: 200, body: proofJson(await service.identity.removeProof(params.id, "removed by its owner", { ownerId })) }),
    },
  ];
}
