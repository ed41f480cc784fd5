/**
 * Identity proofs (V6): challenges, verified submissions, listing and removal. What each kind takes
 * and says comes from its module (src/service/proofs/kinds): the kinds offered, their evidence
 * schemas, their instructions and the words of the summaries.
 */
import { z } from "zod";
import { PROOF_KINDS, toRfc3339 } from "../method";
import type { Identity } from "../service/identity";
import type { IssuedChallenge, ProofChecks } from "../service/proof-checks";
import type { ProofRow } from "../service/ports";
import { proofTypedData } from "../service/proofs/challenge";
import { OFFERED_EVIDENCE, OFFERED_PROOF_KINDS, offeredKindsOf, proofKindModule } from "../service/proofs/kinds";
import type { Reads } from "../service/reads";
import { pageQuery, ROWS_PAGE } from "./page-query";
import { defineRoute, errorResponse as e, idSchema, type Route } from "./route";

/** The kinds proofs are taken of, as a schema; the names of those that belong to the owner, and to one agent. */
const offeredKind = z.enum(OFFERED_PROOF_KINDS);
const kindsBelongingTo = (who: "owner" | "agent") => offeredKindsOf(who).join(", ");

const proofResponse = z.object({
  id: z.string(),
  kind: z.enum(PROOF_KINDS),
  subject: z.string(),
  agentId: z
    .string()
    .nullable()
    .describe(`null for an owner-level proof (${kindsBelongingTo("owner")}: V6)`),
  ownerId: z.string(),
  verifiedAt: z.string(),
  lastCheckedAt: z.string(),
  removedAt: z.string().nullable(),
  removedReason: z.string().nullable(),
});
const instructionsSchema = z.object({
  steps: z.array(z.string()).describe("what to do, in order, in plain words"),
  publish: z
    .array(
      z.object({
        type: z.enum(["dns-txt", "https-file", "gist"]),
        name: z.string().describe("the record's name, the file's URL, or which gist"),
        value: z.string().describe("exactly what to publish there"),
      }),
    )
    .describe("where to publish the challenge (any one place is enough); empty for a kind proven by a signature"),
  sign: z
    .object({ message: z.string(), by: z.string() })
    .nullable()
    .describe("what to sign (EIP-191, or typedData with EIP-712) and with which wallet; null for a kind proven by publishing"),
  evidence: z
    .record(z.string(), z.union([z.string(), z.number()]))
    .describe("the evidence to send to POST /v1/proofs, with what to fill in shown in angle brackets"),
});

const challengeResponse = z.object({
  id: z.string(),
  kind: offeredKind,
  subject: z.string(),
  agentId: z.string().nullable(),
  token: z.string(),
  message: z.string().describe("the text to sign or publish"),
  expiresAt: z.string(),
  instructions: instructionsSchema,
  typedData: z
    .object({
      domain: z.object({ name: z.string(), version: z.string() }),
      types: z.record(z.string(), z.array(z.object({ name: z.string(), type: z.string() })).readonly()),
      primaryType: z.string(),
      message: z.object({
        kind: z.string(),
        subject: z.string(),
        owner: z.string(),
        agent: z.string(),
        nonce: z.string(),
        expiresAt: z.string().describe("uint64 as a decimal string"),
      }),
    })
    .optional()
    .describe(
      `EIP-712 typed data to sign, for the kinds proven by a signature (${OFFERED_PROOF_KINDS.filter((k) => proofKindModule(k).signed).join(", ")})`,
    ),
});

/**
 * The evidence of each kind, one schema each (its module's), told apart by their fields. Evidence of
 * no kind is refused naming the field of the kind it is closest to; evidence of another kind than its
 * challenge's is refused when it is checked (proof_evidence_invalid).
 */
const evidenceSchema = z
  .union(OFFERED_EVIDENCE, {
    error: (issue) => {
      const byKind = issue.code === "invalid_union" ? issue.errors : [];
      let closest = 0;
      byKind.forEach((issues, i) => {
        if (issues.length < byKind[closest].length) closest = i;
      });
      const first = byKind[closest]?.[0];
      return first === undefined
        ? "not the evidence of any proof kind"
        : `as ${OFFERED_PROOF_KINDS[closest]} evidence, ${first.path.map(String).join(".") || "(the whole)"}: ${first.message}`;
    },
  })
  .describe("the evidence of the challenge's kind (the challenge's instructions.evidence shows its fields)");

/** The answer to a new challenge: the challenge, what to do with it, and its typed data when it is signed. */
function challengeJson(c: IssuedChallenge): z.input<typeof challengeResponse> {
  const module = proofKindModule(c.kind);
  return {
    id: c.id,
    kind: c.kind,
    subject: c.subject,
    agentId: c.agentId,
    token: c.token,
    message: c.message,
    expiresAt: toRfc3339(c.expiresAt),
    instructions: module.instructions(c, c.context),
    ...(module.signed ? { typedData: typedDataJson(proofTypedData(c)) } : {}),
  };
}

function proofJson(p: ProofRow): z.input<typeof proofResponse> {
  return {
    id: p.id,
    kind: p.kind,
    subject: p.subject,
    agentId: p.agentId,
    ownerId: p.ownerId,
    verifiedAt: toRfc3339(p.verifiedAt),
    lastCheckedAt: toRfc3339(p.lastCheckedAt),
    removedAt: p.removedAt === null ? null : toRfc3339(p.removedAt),
    removedReason: p.removedReason,
  };
}

/** EIP-712 typed data as JSON: its one bigint as a decimal string. */
const typedDataJson = (typedData: ReturnType<typeof proofTypedData>) => ({
  ...typedData,
  message: { ...typedData.message, expiresAt: typedData.message.expiresAt.toString() },
});

/** The routes of identity proofs. */
export function proofRoutes(deps: { proofs: ProofChecks; identity: Identity; reads: Reads }): Route[] {
  const { proofs, identity, reads } = deps;
  return [
    defineRoute({
      method: "post",
      path: "/v1/proofs/challenges",
      operationId: "issueChallenge",
      tag: "proofs",
      auth: "owner",
      summary:
        "Issue a challenge (single use, expires in 1 h) to prove an identity (V6): " +
        `${OFFERED_PROOF_KINDS.map((k) => `${k}, ${proofKindModule(k).summary}`).join("; ")}. ` +
        `A proof of one agent (${kindsBelongingTo("agent")}) names a claimed agent in agentId ` +
        "and is taken only from the owner of its latest claim; " +
        `an owner-level proof (${kindsBelongingTo("owner")}) names none. ` +
        "The answer says exactly what to publish where, or what to sign.",
      body: z.object({ kind: offeredKind, subject: z.string().min(1).max(300), agentId: idSchema.optional() }).strict(),
      bodyExample: { kind: "domain", subject: "agent.example.org", agentId: "agt_3f9c0d1e2b4a5968" },
      responses: {
        201: { description: "issued", schema: challengeResponse },
        400: e("invalid subject or kind, or an agent named (or not) against V6"),
        403: e("not your agent"),
        404: e("no such agent"),
        409: e(
          "limit_reached: the owner has as many open (unused, unexpired) challenges as MAX_OPEN_CHALLENGES_PER_OWNER allows; " +
            "agent_unclaimed: the agent is unclaimed",
        ),
      },
    }).handle(async ({ ownerId, body }) => ({ status: 201, body: challengeJson(await proofs.issueChallenge(ownerId, body)) })),
    defineRoute({
      method: "post",
      path: "/v1/proofs",
      operationId: "submitProof",
      tag: "proofs",
      auth: "owner",
      summary:
        "Answer a challenge with evidence; the proof is verified against its real source and recorded. " +
        `The score of a proof of one agent (${kindsBelongingTo("agent")}) is recomputed at once; ` +
        `an owner-level proof (${kindsBelongingTo("owner")}) counts for every agent of the owner, ` +
        "which are recomputed in the background, moments later.",
      body: z.object({ challengeId: z.string().min(1).max(64), evidence: evidenceSchema }).strict(),
      responses: {
        201: { description: "verified and recorded", schema: proofResponse },
        400: e("invalid evidence"),
        403: e("the challenge's agent now belongs to another owner"),
        404: e("no such challenge"),
        409: e(
          "proof_challenge_used: the challenge was already used; proof_already_proven: this agent (or owner) holds the subject already; " +
            `proof_bound_to_another_agent (${kindsBelongingTo("agent")}) or ` +
            `proof_bound_to_another_owner (${kindsBelongingTo("owner")}): another one holds it (V6); ` +
            "agent_unclaimed: the challenge's agent was unclaimed since",
        ),
        422: e(
          "the evidence does not prove the subject, or its source is not at a public address (proof_forbidden_address: nothing was connected to)",
        ),
        503: e("the proof's source could not be reached, or not within the submission's time (PROOF_SUBMISSION_TIMEOUT_MS)"),
      },
    }).handle(async ({ ownerId, body }) => ({
      status: 201,
      body: proofJson(await proofs.submitProof(ownerId, body.challengeId, body.evidence)),
    })),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/proofs",
      operationId: "listProofs",
      tag: "proofs",
      auth: "none",
      summary:
        "The identity proofs that count for an agent now: its own and its owner's (V6), oldest first, a page at a time (nextCursor).",
      params: z.object({ id: idSchema }),
      query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({ agentId: z.string(), proofs: z.array(proofResponse), nextCursor: z.string().nullable() }),
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        404: e("no such agent, or agent_unclaimed: its owner unclaimed it"),
      },
    }).handle(async ({ params, query }) => {
      const { agent, items, nextCursor } = await reads.proofsOf(params.id, query);
      return { status: 200, body: { agentId: agent.id, proofs: items.map(proofJson), nextCursor } };
    }),
    defineRoute({
      method: "delete",
      path: "/v1/proofs/:id",
      operationId: "removeProof",
      tag: "proofs",
      auth: "owner",
      summary:
        "Remove one of your proofs; the scores it counted for are recomputed: at once for an agent-level proof, in the background for an owner-level one.",
      params: z.object({ id: idSchema }),
      responses: {
        200: { description: "removed", schema: proofResponse },
        403: e("not your proof"),
        404: e("no such proof"),
        409: e("already removed"),
      },
    }).handle(async ({ ownerId, params }) => ({
      status: 200,
      body: proofJson(await identity.removeProof(params.id, "removed by its owner", { ownerId })),
    })),
  ];
}
