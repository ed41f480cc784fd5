/** Identity proofs (V6): challenges, verified submissions, listing and removal. */
import { z } from "zod";
import { PROOF_KINDS, toRfc3339 } from "../method";
import type { Identity } from "../service/identity";
import type { ProofChecks } from "../service/proof-checks";
import type { ProofRow } from "../service/ports";
import { proofTypedData } from "../service/proofs/challenge";
import type { Reads } from "../service/reads";
import { pageQuery, ROWS_PAGE } from "./page-query";
import { defineRoute, errorResponse as e, idSchema, type Route } from "./route";

const proofResponse = z.object({
  id: z.string(), kind: z.enum(PROOF_KINDS), subject: z.string(), agentId: z.string().nullable().describe("null for an owner-level proof (github, wallet: V6)"),
  ownerId: z.string(), verifiedAt: z.string(), lastCheckedAt: z.string(), removedAt: z.string().nullable(), removedReason: z.string().nullable(),
});
const challengeResponse = z.object({
  id: z.string(), kind: z.enum(PROOF_KINDS), subject: z.string(), agentId: z.string().nullable(), token: z.string(), message: z.string().describe("the text to sign or publish"),
  expiresAt: z.string(),
  typedData: z.object({
    domain: z.object({ name: z.string(), version: z.string() }),
    types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() })).readonly()),
    primaryType: z.string(),
    message: z.object({ kind: z.string(), subject: z.string(), owner: z.string(), agent: z.string(), nonce: z.string(), expiresAt: z.string().describe("uint64 as a decimal string") }),
  }).optional().describe("EIP-712 typed data to sign, for wallet and erc8004 proofs"),
});

function proofJson(p: ProofRow): z.input<typeof proofResponse> {
  return {
    id: p.id, kind: p.kind, subject: p.subject, agentId: p.agentId, ownerId: p.ownerId, verifiedAt: toRfc3339(p.verifiedAt),
    lastCheckedAt: toRfc3339(p.lastCheckedAt), removedAt: p.removedAt === null ? null : toRfc3339(p.removedAt), removedReason: p.removedReason,
  };
}

/** EIP-712 typed data as JSON: its one bigint as a decimal string. */
const typedDataJson = (typedData: ReturnType<typeof proofTypedData>) => ({ ...typedData, message: { ...typedData.message, expiresAt: typedData.message.expiresAt.toString() } });

/** The routes of identity proofs. */
export function proofRoutes(deps: { proofs: ProofChecks; identity: Identity; reads: Reads }): Route[] {
  const { proofs, identity, reads } = deps;
  return [
    defineRoute({
      method: "post", path: "/v1/proofs/challenges", operationId: "issueChallenge", tag: "proofs", auth: "owner",
      summary: "Issue a challenge (single use, expires in 1 h) to prove a wallet, GitHub account, domain or ERC-8004 identity (V6). A domain or ERC-8004 proof names a claimed agent and is taken only from the owner of its latest claim; a github or wallet proof names no agent.",
      body: z.object({ kind: z.enum(PROOF_KINDS), subject: z.string().min(1).max(300), agentId: idSchema.optional() }).strict(),
      bodyExample: { kind: "domain", subject: "agent.example.org", agentId: "agt_3f9c0d1e2b4a5968" },
      responses: {
        201: { description: "issued", schema: challengeResponse }, 400: e("invalid subject or kind, or an agent named (or not) against V6"), 403: e("not your agent"), 404: e("no such agent"),
        409: e("limit_reached: the owner has as many open (unused, unexpired) challenges as MAX_OPEN_CHALLENGES_PER_OWNER allows"),
      },
    }).handle(async ({ ownerId, body }) => {
      const c = await proofs.issueChallenge(ownerId, body);
      const typedData = c.kind === "wallet" || c.kind === "erc8004" ? proofTypedData(c) : undefined;
      return {
        status: 201,
        body: {
          id: c.id, kind: c.kind, subject: c.subject, agentId: c.agentId, token: c.token, message: c.message,
          expiresAt: toRfc3339(c.expiresAt), ...(typedData ? { typedData: typedDataJson(typedData) } : {}),
        },
      };
    }),
    defineRoute({
      method: "post", path: "/v1/proofs", operationId: "submitProof", tag: "proofs", auth: "owner",
      summary: "Answer a challenge with evidence; the proof is verified against its real source and recorded. The score of an agent-level proof's agent (domain, erc8004) is recomputed at once; an owner-level proof (github, wallet) counts for every agent of the owner, which are recomputed in the background, moments later.",
      body: z.object({ challengeId: z.string().min(1).max(64), evidence: z.record(z.string(), z.unknown()) }).strict(),
      responses: {
        201: { description: "verified and recorded", schema: proofResponse }, 400: e("invalid evidence"),
        403: e("the challenge's agent now belongs to another owner"), 404: e("no such challenge"),
        409: e("challenge already used, or the domain / ERC-8004 identity is held by another agent"), 422: e("the evidence does not prove the subject, or its source is not at a public address (proof_forbidden_address: nothing was connected to)"),
        503: e("the proof's source could not be reached, or not within the submission's time (PROOF_SUBMISSION_TIMEOUT_MS)"),
      },
    }).handle(async ({ ownerId, body }) => ({ status: 201, body: proofJson(await proofs.submitProof(ownerId, body.challengeId, body.evidence)) })),
    defineRoute({
      method: "get", path: "/v1/agents/:id/proofs", operationId: "listProofs", tag: "proofs", auth: "none",
      summary: "The identity proofs that count for an agent now: its own and its owner's (V6), oldest first, a page at a time (nextCursor).",
      params: z.object({ id: idSchema }), query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: { description: "ok", schema: z.object({ agentId: z.string(), proofs: z.array(proofResponse), nextCursor: z.string().nullable() }) },
        400: e("a parameter is not valid, or a cursor no page gave"), 404: e("no such agent"),
      },
    }).handle(async ({ params, query }) => {
      const { agent, items, nextCursor } = await reads.proofsOf(params.id, query);
      return { status: 200, body: { agentId: agent.id, proofs: items.map(proofJson), nextCursor } };
    }),
    defineRoute({
      method: "delete", path: "/v1/proofs/:id", operationId: "removeProof", tag: "proofs", auth: "owner",
      summary: "Remove one of your proofs; the scores it counted for are recomputed: at once for an agent-level proof, in the background for an owner-level one.",
      params: z.object({ id: idSchema }),
      responses: { 200: { description: "removed", schema: proofResponse }, 403: e("not your proof"), 404: e("no such proof"), 409: e("already removed") },
    }).handle(async ({ ownerId, params }) => ({ status: 200, body: proofJson(await identity.removeProof(params.id, "removed by its owner", { ownerId })) })),
  ];
}
