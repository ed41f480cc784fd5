/**
 * Vrai's scores as ERC-8004 feedback (issue #27): the owner's switch per agent, the agent's publishing as anyone reads
 * it (also in `GET /v1/agents/{id}`, src/api/service-routes.ts), and the off-chain feedback files, served byte for byte at the feedbackURI each
 * feedback names on chain (their keccak256 is its feedbackHash).
 */
import { z } from "zod";
import { feedbackFileSchema, type FeedbackFile } from "../chain/feedback-file";
import { toRfc3339 } from "../method";
import type { Erc8004Publishing, PublishingStatus } from "../service/erc8004-publishing";
import type { FeedbackRow } from "../store/erc8004-feedback";
import { agentId as exampleAgentId } from "./examples";
import { defineRoute, errorResponse as e, idSchema, JsonText, type Route } from "./route";

const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/);
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);

const feedbackSchema = z.object({
  id: z.string(),
  tag1: z.string().describe("vraiScore (the Vrai total) or uptime (Reliability's coverage of the last 30 days)"),
  tag2: z.string().describe("the method version for vraiScore, 30d for uptime"),
  value: z.number().int(),
  valueDecimals: z.number().int(),
  day: z.string().describe("the day of the daily score it gives"),
  scoreId: z.number().int(),
  state: z
    .enum(["planned", "given", "revoked", "dropped"])
    .describe("planned: to give; given: on chain; revoked: given, then revoked; dropped: never given (see droppedReason)"),
  tokenId: z.string().describe("the agent's ERC-8004 identity token (uint256, decimal): the registry's agentId"),
  client: address.describe("the account that gives it: getSummary's clientAddresses"),
  feedbackIndex: z.number().int().nullable().describe("its index among the publisher's feedback of the token, once given"),
  feedbackURI: z.string(),
  feedbackHash: hex32.describe("keccak256 of the file's bytes"),
  txHash: hex32.nullable().describe("the giveFeedback transaction, once sent"),
  givenAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  revokeReason: z.string().nullable(),
  droppedReason: z.string().nullable(),
  lastError: z.string().nullable().describe("why the last attempt failed, while it is retried"),
});

/** An agent's publishing as the API shows it, here and in `GET /v1/agents/{id}` (`erc8004Publishing`). */
export const publishingSchema = z.object({
  agentId: z.string(),
  enabled: z.boolean(),
  changedAt: z.string().nullable(),
  reason: z.string().nullable().describe("why Vrai turned it off (its ERC-8004 proof removed); null when the owner set it"),
  registry: z
    .object({
      chainId: z.number().int(),
      reputationRegistry: address,
      identityRegistry: address.describe("the identity registry whose agents it keeps feedback about"),
    })
    .nullable()
    .describe("where this service gives feedback; null when it gives none"),
  feedback: z.array(feedbackSchema).describe("the agent's latest feedback, newest day first"),
});
type PublishingJson = z.input<typeof publishingSchema>;

const feedbackJson = (f: FeedbackRow): z.input<typeof feedbackSchema> => ({
  id: f.id,
  tag1: f.tag1,
  tag2: f.tag2,
  value: f.value,
  valueDecimals: f.valueDecimals,
  day: f.day,
  scoreId: f.scoreId,
  state: f.state,
  tokenId: f.tokenId.toString(),
  client: f.client,
  feedbackIndex: f.feedbackIndex === null ? null : Number(f.feedbackIndex),
  feedbackURI: f.uri,
  feedbackHash: f.fileHash,
  txHash: f.givenTxHash ?? f.giveTxHash,
  givenAt: f.givenAt === null ? null : toRfc3339(f.givenAt),
  revokedAt: f.revokedAt === null ? null : toRfc3339(f.revokedAt),
  revokeReason: f.revokeReason,
  droppedReason: f.droppedReason,
  lastError: f.lastError,
});

/** An agent's publishing as the API shows it (here and in `GET /v1/agents/{id}`). */
export const publishingJson = (agentId: string, s: PublishingStatus): PublishingJson => ({
  agentId,
  enabled: s.enabled,
  changedAt: s.changedAt === null ? null : toRfc3339(s.changedAt),
  reason: s.reason,
  registry: s.target && { chainId: s.target.chainId, reputationRegistry: s.target.registry, identityRegistry: s.target.identityRegistry },
  feedback: s.feedback.map(feedbackJson),
});

/** An example of it. */
export const publishingExample: PublishingJson = {
  agentId: exampleAgentId,
  enabled: true,
  changedAt: "2026-11-01T09:12:40Z",
  reason: null,
  registry: {
    chainId: 8453,
    reputationRegistry: "0x8004BAa17C55a88189AE136b182e5fdA19dE9b63",
    identityRegistry: "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432",
  },
  feedback: [
    {
      id: "fbk_4c1d9e2f7a0b3c58",
      tag1: "vraiScore",
      tag2: "0.2",
      value: 230,
      valueDecimals: 0,
      day: "2026-11-02",
      scoreId: 4211,
      state: "given",
      tokenId: "42",
      client: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
      feedbackIndex: 3,
      feedbackURI: "https://vrai.example/v1/erc8004/feedback/fbk_4c1d9e2f7a0b3c58",
      feedbackHash: `0x${"3a".repeat(32)}`,
      txHash: `0x${"9e".repeat(32)}`,
      givenAt: "2026-11-02T00:01:12Z",
      revokedAt: null,
      revokeReason: null,
      droppedReason: null,
      lastError: null,
    },
  ],
};

const fileExample: FeedbackFile = {
  agentRegistry: "eip155:8453:0x8004A169FB4a3325136EB29fA0ceB6D2e539a432",
  agentId: 42,
  clientAddress: "eip155:8453:0x5FbDB2315678afecb367f032d93F642f64180aa3",
  createdAt: "2026-11-02T00:00:41Z",
  value: 230,
  valueDecimals: 0,
  tag1: "vraiScore",
  tag2: "0.2",
  endpoint: `https://vrai.example/agents/${exampleAgentId}`,
  scoreType: "vrai",
  method: "0.2",
  vraiAgentId: exampleAgentId,
  scoreId: 4211,
  day: "2026-11-02",
  inputsSha256: "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592",
  dayRoot: `0x${"c4".repeat(32)}`,
  anchor: { chainId: 8453, registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3", txHash: `0x${"7b".repeat(32)}` },
};

/** A feedback file never changes: caches may keep it for good. */
const IMMUTABLE = "public, max-age=31536000, immutable";

/** The routes of Vrai's ERC-8004 feedback. */
export function erc8004Routes(publishing: Erc8004Publishing): Route[] {
  const agentParams = z.object({ id: idSchema });
  return [
    defineRoute({
      method: "put",
      path: "/v1/agents/:id/erc8004-publishing",
      operationId: "setReputationPublishing",
      tag: "erc8004",
      auth: "owner",
      summary:
        "Turn on or off Vrai's feedback about your agent in the ERC-8004 Reputation Registry " +
        "(tags vraiScore and uptime, after each anchored day whose value changed); " +
        "on needs an active ERC-8004 proof, off revokes Vrai's feedback.",
      params: agentParams,
      body: z.strictObject({ enabled: z.boolean() }),
      bodyExample: { enabled: true },
      responses: {
        200: { description: "the agent's publishing now", schema: publishingSchema, example: publishingExample },
        403: e("not your agent"),
        404: e("no such agent"),
        409: e(
          "erc8004_proof_required: the agent holds no active ERC-8004 proof; " +
            "erc8004_registry_not_served: its identity is in another identity registry or chain " +
            "than the one this service gives feedback about; " +
            "erc8004_publishing_unavailable: this service gives no feedback; agent_unclaimed: the agent is unclaimed",
        ),
      },
    }).handle(async ({ ownerId, params, body }) => ({
      status: 200,
      body: publishingJson(params.id, await publishing.set(ownerId, params.id, body.enabled)),
    })),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/erc8004-publishing",
      operationId: "getReputationPublishing",
      tag: "erc8004",
      auth: "none",
      summary: "Whether Vrai gives feedback about an agent in the ERC-8004 Reputation Registry, where, and its latest feedback.",
      params: agentParams,
      responses: { 200: { description: "ok", schema: publishingSchema, example: publishingExample }, 404: e("no such agent") },
    }).handle(async ({ params }) => ({ status: 200, body: publishingJson(params.id, await publishing.status(params.id)) })),
    defineRoute({
      method: "get",
      path: "/v1/erc8004/feedback/:id",
      operationId: "getReputationFeedbackFile",
      tag: "erc8004",
      auth: "none",
      summary:
        "The off-chain file of one of Vrai's ERC-8004 feedbacks, the bytes its feedbackURI names: " +
        "their keccak256 is the feedbackHash given on chain.",
      params: z.object({ id: idSchema }),
      responses: {
        200: { description: "the file, byte for byte (RFC 8785 JSON); it never changes", schema: feedbackFileSchema, example: fileExample },
        404: e("no such feedback"),
      },
    }).handle(async ({ params }) => {
      const { file, fileHash } = await publishing.file(params.id);
      return {
        status: 200,
        headers: { "Cache-Control": IMMUTABLE, "X-Vrai-Keccak256": fileHash },
        json: new JsonText<FeedbackFile>(new TextDecoder().decode(file)),
      };
    }),
  ];
}
