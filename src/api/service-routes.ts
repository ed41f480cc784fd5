/** Owners, claims, check-ins, operator actions, scores and the method: the routes of the Vrai service. */
import type client from "prom-client";
import { z } from "zod";
import {
  CLAIM_POINTS,
  CURRENT_METHOD,
  METHOD_VERSIONS,
  METHODS,
  PENALTY_CODES,
  PROOF_KINDS,
  toRfc3339,
  type CountedCheckin,
  type ScoreInputs,
} from "../method";
import type { Accounts, ClaimResult } from "../service/accounts";
import type { Checkins } from "../service/checkins";
import type { Erc8004Publishing, PublishingStatus } from "../service/erc8004-publishing";
import { ConflictError } from "../service/errors";
import type { Operator } from "../service/operator";
import type { AgentRow, OutageRow, PenaltyRow, ScoreRow, ScoreSummary } from "../service/ports";
import { kindsInWords, offeredKindsOf } from "../service/proofs/kinds";
import { shownFields } from "../service/proofs/registration-file";
import type { Reads, SiteReads } from "../service/reads";
import { SELF_DECLARED_NOTE, type StoredRegistration } from "../service/registration-files";
import { publishingExample, publishingJson, publishingSchema } from "./erc8004-routes";
import * as examples from "./examples";
import { scoreInputsSchema, scoreResultSchema, windowDaySchema } from "./method-schemas";
import { nextCursorSchema, pageQuery, ROWS_PAGE, SMALL_ROWS_PAGE } from "./page-query";
import { defineRoute, errorResponse as e, errorSchema, idSchema, JsonText, type Route } from "./route";
import { daySchema, instantSchema, scoreIdSchema } from "./schemas";

/** V2: the proofs a claim by another owner removes, those of one agent (V6), e.g. "proofs of a domain and an ERC-8004 identity". */
const agentLevelProofs = `proofs of ${kindsInWords(offeredKindsOf("agent"), "noun", "and")}`;

const idParams = z.object({ id: idSchema });
const scoreIdParams = z.object({ id: scoreIdSchema });
const reason = z.string().trim().min(1).max(500);

const claimResponse = z.object({
  agentId: z.string(),
  ownerId: z.string(),
  agentKey: z.string(),
  claimId: z.number(),
  claimedAt: z.string(),
});
const keyRotationResponse = z.object({
  agentId: z.string(),
  agentKey: z.string().describe("the new agent key, shown this once; the old key is refused from now on"),
  claimId: z.number().describe("the claim it is the key of: the same as before (a rotation is not a claim, V2)"),
  rotatedAt: z.string(),
});
const unclaimResponse = z.object({
  agentId: z.string(),
  unclaimedAt: z.string().describe("when it was unclaimed: its key was refused and its proofs of one agent removed from then on"),
});
const checkinResponse = z.object({
  agentId: z.string(),
  result: z.enum(["counted"]),
  arrival: z.string().describe("arrival time on the service's clock (RFC 3339, whole seconds)"),
  next_heartbeat_s: z.number().describe("V3.3: when to come back, 3600 normally, 7200 while the service is busy"),
  on_time: z.boolean().nullable(),
  excused: z.boolean(),
  credit: z.number(),
});
const scoreResponse = z.object({
  id: z.number(),
  scoreType: z.literal("vrai"),
  agentId: z.string(),
  method: z.string(),
  at: z.string(),
  trigger: z.enum(["daily", "change"]),
  day: z.string().nullable(),
  sha256: z.string(),
  total: z.number(),
  result: scoreResultSchema,
  links: z.object({ inputs: z.string(), self: z.string() }),
});
type ScoreJson = z.input<typeof scoreResponse>;
const outageResponse = z.object({
  id: z.string(),
  start: z.string(),
  end: z.string().nullable(),
  declared_at: z.string(),
  reason: z.string(),
  declared_by: z.string(),
  closed_by: z.string().nullable(),
});
const penaltyResponse = z.object({
  id: z.string(),
  agentId: z.string(),
  code: z.enum(PENALTY_CODES),
  points: z.number().int(),
  days: z.number().int(),
  addedAt: z.string(),
  reason: z.string(),
  revokedAt: z.string().nullable(),
  revokeReason: z.string().nullable(),
  addedBy: z.string(),
  revokedBy: z.string().nullable(),
});

/** What the agent says of itself (issue #27): kept apart from everything Vrai verified, and no part of any score. */
const selfDeclaredResponse = z
  .object({
    source: z.literal("erc8004-registration-file"),
    note: z.string().describe(`always "${SELF_DECLARED_NOTE}"`),
    identity: z
      .string()
      .describe("the ERC-8004 identity whose agentURI was read (chainId:registry:agentId): that of the agent's erc8004 proof"),
    uri: z.string().nullable().describe("the agentURI (its tokenURI) as read; null when it could not be read"),
    readAt: z.string().describe("when it was last read: at the proof, when the registry's URIUpdated names the token, and weekly"),
    status: z
      .enum(["read", "refused", "unread"])
      .describe(
        "read: the fields below are the file's; refused: it was read and refused (reason); unread: not read (no agentURI, or ipfs:// without a gateway)",
      ),
    reason: z.string().nullable().describe("why it was refused or not read; null when read"),
    name: z.string().nullable(),
    description: z.string().nullable(),
    image: z.string().nullable().describe("the image's URL, only when it is https://"),
    services: z.array(z.object({ name: z.string(), endpoint: z.string(), version: z.string().nullable() })),
  })
  .nullable()
  .describe(
    "What the agent declares of itself in the registration file of its ERC-8004 identity (its latest active erc8004 proof's): " +
      "self-declared, not verified by Vrai, and never part of any score; null without such a proof, or before its file is first read",
  );
const agentResponse = z.object({
  agentId: z.string(),
  name: z.string().nullable().describe("the name its owner gave at its claim"),
  claimedAt: z.string().describe("its latest claim (V2)"),
  links: z.object({ page: z.string(), score: z.string(), proofs: z.string() }),
  selfDeclared: selfDeclaredResponse,
  erc8004Publishing: publishingSchema.describe(
    "whether Vrai gives the agent's score as ERC-8004 feedback, where, and its latest (issue #27)",
  ),
});

/** The JSON of what an agent says of itself (issue #27): the four fields shown, the image only over https. */
function selfDeclaredJson(r: StoredRegistration): z.input<typeof selfDeclaredResponse> {
  const { name, description, image, services } = shownFields(r.file);
  return {
    source: "erc8004-registration-file",
    note: SELF_DECLARED_NOTE,
    identity: r.subject,
    uri: r.uri,
    readAt: toRfc3339(r.readAt),
    status: r.status,
    reason: r.reason,
    name,
    description,
    image,
    services,
  };
}

function agentJson(agent: AgentRow, selfDeclared: StoredRegistration | null, publishing: PublishingStatus): z.input<typeof agentResponse> {
  return {
    agentId: agent.id,
    name: agent.name,
    claimedAt: toRfc3339(agent.claimedAt),
    links: { page: `/agents/${agent.id}`, score: `/v1/agents/${agent.id}/score`, proofs: `/v1/agents/${agent.id}/proofs` },
    selfDeclared: selfDeclared === null ? null : selfDeclaredJson(selfDeclared),
    erc8004Publishing: publishingJson(agent.id, publishing),
  };
}

const proofPoints = z.object({ points: z.number().int(), belongsTo: z.enum(["owner", "agent"]), recheckDays: z.number().int().nullable() });
const methodResponse = z.object({
  current: z.string(),
  versions: z.array(z.object({ version: z.string(), published: z.string(), changes: z.string() })),
  identityPoints: z.object({
    claim: z.number().int(),
    // V6 of the current method: each kind it counts, named in the document.
    proofs: z.partialRecord(z.enum(PROOF_KINDS), proofPoints).describe("V6 of the current method: the kinds it counts"),
  }),
  outages: z.array(outageResponse),
  outagesNextCursor: nextCursorSchema,
});

const scoreLinks = (id: number) => ({ inputs: `/v1/scores/${id}/inputs`, self: `/v1/scores/${id}` });

/** The JSON of a stored score (V9): what it is, when, its digest and its result. */
export function scoreJson(s: Omit<ScoreRow, "inputs" | "result"> & Pick<ScoreJson, "result">): ScoreJson {
  return {
    id: s.id,
    scoreType: "vrai",
    agentId: s.agentId,
    method: s.method,
    at: toRfc3339(s.at),
    trigger: s.trigger,
    day: s.day,
    sha256: s.sha256,
    total: s.total,
    result: s.result,
    links: scoreLinks(s.id),
  };
}

/**
 * `scoreJson` as JSON text, with the result's JSON text put in as the database holds it (not
 * parsed and written again): the same fields in the same order.
 */
export function scoreJsonText(s: ScoreSummary): JsonText<ScoreJson> {
  const head = JSON.stringify({
    id: s.id,
    scoreType: "vrai",
    agentId: s.agentId,
    method: s.method,
    at: toRfc3339(s.at),
    trigger: s.trigger,
    day: s.day,
    sha256: s.sha256,
    total: s.total,
  });
  return new JsonText(`${head.slice(0, -1)},"result":${s.resultJson},"links":${JSON.stringify(scoreLinks(s.id))}}`);
}

/**
 * A stored score's representation never changes, so its id and digest make a validator without
 * hashing the body; `SCORE_FORMAT` changes with the representation.
 */
const SCORE_FORMAT = 1;
const scoreEtag = (s: ScoreSummary) => `W/"score-${SCORE_FORMAT}-${s.id}-${s.sha256.slice(0, 16)}"`;

function outageJson(o: OutageRow) {
  return {
    id: o.id,
    start: toRfc3339(o.start),
    end: o.end === null ? null : toRfc3339(o.end),
    declared_at: toRfc3339(o.declaredAt),
    reason: o.reason,
    declared_by: o.declaredBy,
    closed_by: o.closedBy,
  };
}

function penaltyJson(p: PenaltyRow): z.input<typeof penaltyResponse> {
  return {
    id: p.id,
    agentId: p.agentId,
    code: p.code,
    points: p.points,
    days: p.days,
    addedAt: toRfc3339(p.addedAt),
    reason: p.reason,
    revokedAt: p.revokedAt === null ? null : toRfc3339(p.revokedAt),
    revokeReason: p.revokeReason,
    addedBy: p.addedBy,
    revokedBy: p.revokedBy,
  };
}

function checkinJson(agentId: string, c: CountedCheckin): z.input<typeof checkinResponse> {
  return {
    agentId,
    result: "counted",
    arrival: toRfc3339(c.arrival),
    next_heartbeat_s: c.nextHeartbeatS,
    on_time: c.onTime,
    excused: c.excused,
    credit: c.credit,
  };
}

const claimJson = (claim: ClaimResult) => ({ ...claim, claimedAt: toRfc3339(claim.claimedAt) });

export type ServiceRouteDeps = {
  accounts: Accounts;
  checkins: Checkins;
  operator: Operator;
  reads: Reads;
  /** The declared windows a page at a time (the method page's read). */
  site: SiteReads;
  /** Each agent's ERC-8004 publishing (issue #27), which `GET /v1/agents/{id}` shows. */
  publishing: Pick<Erc8004Publishing, "status">;
  checkinResults: client.Counter<"result">;
};

/** The routes of owners, claims, check-ins, scores, the method and the operator. */
export function serviceRoutes(deps: ServiceRouteDeps): Route[] {
  const { accounts, checkins, operator, reads } = deps;
  // V3.1: a second request with the key of a check-in still being decided waits for nothing: 409.
  const inFlight = new Set<string>();

  return [
    defineRoute({
      method: "post",
      path: "/v1/owners",
      operationId: "createOwner",
      tag: "owners",
      auth: "none",
      summary: "Create an owner account. The token is returned once; only its hash is stored.",
      body: z.object({}).strict(),
      bodyExample: {},
      responses: {
        201: { description: "created", schema: z.object({ ownerId: z.string(), token: z.string() }), example: examples.owner },
        400: e("bad request"),
      },
    }).handle(async () => ({ status: 201, body: await accounts.createOwner() })),
    defineRoute({
      method: "get",
      path: "/v1/owners/me",
      operationId: "getCurrentOwner",
      tag: "owners",
      auth: "owner",
      summary:
        "The calling owner and the ids of its agents, in id order, a page at a time: nextCursor (null on the last page) is the cursor of the next.",
      query: z.object(pageQuery(SMALL_ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({ ownerId: z.string(), agents: z.array(z.string()), nextCursor: nextCursorSchema }),
          example: { ownerId: examples.owner.ownerId, agents: [examples.agentId], nextCursor: null },
        },
        400: e("a parameter is not valid (named in the message), or a cursor no page gave"),
        401: e("no valid owner token"),
      },
    }).handle(async ({ ownerId, query }) => {
      const { items, nextCursor } = await reads.agentsOfOwner(ownerId, query);
      return { status: 200, body: { ownerId, agents: items, nextCursor } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/agents",
      operationId: "claimAgent",
      tag: "claims",
      auth: "owner",
      summary: "Claim a new agent (V2). Returns the agent key once; only its hash is stored.",
      body: z.object({ name: z.string().trim().min(1).max(100).optional() }).strict(),
      bodyExample: { name: "research-agent" },
      responses: {
        201: { description: "claimed", schema: claimResponse, example: examples.claim },
        400: e("bad request"),
        401: e("no valid owner token"),
        409: e("limit_reached: the owner has as many agents as MAX_AGENTS_PER_OWNER allows"),
      },
    }).handle(async ({ ownerId, body }) => ({
      status: 201,
      body: claimJson(await accounts.claimNewAgent(ownerId, { name: body.name ?? null })),
    })),
    defineRoute({
      method: "post",
      path: "/v1/agents/:id/claim",
      operationId: "reclaimAgent",
      tag: "claims",
      auth: "owner",
      summary:
        "Re-claim your own agent: rotates its key and restarts everything V2 restarts (idempotency keys used before are forgotten). " +
        `Its ${agentLevelProofs} stay. Another owner's agent is refused, unless it is unclaimed: an unclaimed agent is claimed ` +
        "so by any owner, a new claim (V2: a new key, nothing of an earlier claim counts) among that owner's agents.",
      params: idParams,
      body: z.object({}).strict(),
      responses: {
        200: { description: "re-claimed", schema: claimResponse, example: examples.claim },
        403: e("the agent belongs to another owner (and is not unclaimed)"),
        404: e("no such agent"),
        409: e("limit_reached: claiming an unclaimed agent, the owner has as many agents as MAX_AGENTS_PER_OWNER allows"),
      },
    }).handle(async ({ ownerId, params }) => ({ status: 200, body: claimJson(await accounts.reclaim(ownerId, params.id)) })),
    defineRoute({
      method: "post",
      path: "/v1/agents/:id/rotate-key",
      operationId: "rotateAgentKey",
      tag: "claims",
      auth: "owner",
      summary:
        "Rotate your agent's key: a new key is returned once and the old one is refused from then on. " +
        "Nothing else changes: the claim, its check-ins, proofs and score stay (a re-claim restarts them, V2).",
      params: idParams,
      body: z.object({}).strict(),
      bodyExample: {},
      responses: {
        200: { description: "rotated", schema: keyRotationResponse, example: examples.keyRotation },
        401: e("no valid owner token"),
        403: e("the agent belongs to another owner"),
        404: e("no such agent"),
        409: e("agent_unclaimed: the agent is unclaimed (a new claim gives it a key)"),
      },
    }).handle(async ({ ownerId, params }) => {
      const rotation = await accounts.rotateAgentKey(ownerId, params.id);
      return { status: 200, body: { ...rotation, rotatedAt: toRfc3339(rotation.rotatedAt) } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/agents/:id/unclaim",
      operationId: "unclaimAgent",
      tag: "claims",
      auth: "owner",
      summary:
        `Unclaim your agent (issue #29), at once: its key is refused from then on, its ${agentLevelProofs} are removed ` +
        '(reason "agent unclaimed"), it leaves your agents and your MAX_AGENTS_PER_OWNER count, and it has no score: its score, ' +
        "page and proof answer 404 agent_unclaimed (the scores stored stay, and those anchored stay verifiable by their ids). " +
        "Any owner may claim it again (POST /v1/agents/{id}/claim: a new claim, V2). Its owner is told (agent.unclaimed).",
      params: idParams,
      body: z.object({}).strict(),
      bodyExample: {},
      responses: {
        200: { description: "unclaimed", schema: unclaimResponse, example: examples.unclaim },
        401: e("no valid owner token"),
        403: e("the agent belongs to another owner"),
        404: e("no such agent"),
        409: e("agent_unclaimed: the agent is unclaimed already"),
      },
    }).handle(async ({ ownerId, params }) => {
      const { agentId, unclaimedAt } = await accounts.unclaim(ownerId, params.id);
      return { status: 200, body: { agentId, unclaimedAt: toRfc3339(unclaimedAt) } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/agents/:id/checkins",
      operationId: "checkIn",
      tag: "check-ins",
      auth: "agent",
      summary:
        "Check in (V3). Counted: 201; the same Idempotency-Key again: the original response; under 1,200 s: 429 with Retry-After; the same key in flight: 409.",
      params: idParams,
      headers: z.object({ "idempotency-key": z.string().regex(/^[\x21-\x7e]{1,128}$/, "expected 1 to 128 visible ASCII characters") }),
      responses: {
        201: { description: "counted (or the original response of a duplicate)", schema: checkinResponse, example: examples.checkin },
        400: e("missing or malformed Idempotency-Key"),
        401: e("no valid agent key"),
        409: e(
          "a request with this key is in flight (checkin_in_flight), " +
            "or the agent changed under every attempt to count it (checkin_contended): retry with the same key",
        ),
        429: {
          description:
            "refused (V3.2): less than 1,200 s since the previous counted check-in (`checkin_refused`, with `retry_after_s`), " +
            "or rate limited (`rate_limited`); both with Retry-After",
          schema: errorSchema.extend({ retry_after_s: z.number().optional() }),
          example: examples.checkinRefused,
        },
      },
    }).handle(async ({ params, headers, credential, keyVerified }) => {
      const key = headers["idempotency-key"];
      const flightKey = `${params.id}\u0000${key}`;
      let flying = false;
      try {
        // The key is checked in the check-in's own read of the agent; only then is the request the agent's (charged to it, and in flight).
        const outcome = await checkins.checkIn(
          params.id,
          key,
          (agent) => accounts.checkAgentKey(agent, credential),
          async () => {
            await keyVerified();
            if (inFlight.has(flightKey))
              throw new ConflictError("checkin_in_flight", "a check-in with this Idempotency-Key is still being processed");
            inFlight.add(flightKey);
            flying = true;
          },
        );
        deps.checkinResults.inc({ result: outcome.type });
        if (outcome.type === "refused") {
          return {
            status: 429,
            headers: { "Retry-After": String(outcome.retryAfterS) },
            body: {
              error: {
                code: "checkin_refused",
                message: `less than 1,200 s since the previous counted check-in; retry in ${outcome.retryAfterS} s`,
              },
              retry_after_s: outcome.retryAfterS,
            },
          };
        }
        if (outcome.type === "duplicate")
          return { status: 201, headers: { "Idempotent-Replayed": "true" }, body: checkinJson(params.id, outcome.original) };
        return { status: 201, body: checkinJson(params.id, outcome) };
      } finally {
        if (flying) inFlight.delete(flightKey);
      }
    }),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id",
      operationId: "getAgent",
      tag: "claims",
      auth: "none",
      summary:
        "An agent: its name at its claim, and what it declares of itself in its ERC-8004 registration file (selfDeclared: name, description, " +
        "https image and services, with the file's URI and when it was read), kept apart from what Vrai verified and never part of a score.",
      params: idParams,
      responses: {
        200: { description: "ok", schema: agentResponse, example: { ...examples.agent, erc8004Publishing: publishingExample } },
        404: e("no such agent, or agent_unclaimed: its owner unclaimed it"),
      },
    }).handle(async ({ params }) => {
      const [{ agent, selfDeclared }, publishing] = await Promise.all([
        reads.agentWithRegistration(params.id),
        deps.publishing.status(params.id),
      ]);
      return { status: 200, body: agentJson(agent, selfDeclared, publishing) };
    }),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/score",
      operationId: "getLatestScore",
      tag: "scores",
      auth: "none",
      summary: "The latest Vrai score of an agent (scoreType vrai), with its method and inputs digest.",
      params: idParams,
      responses: {
        200: { description: "ok", schema: scoreResponse, example: examples.score },
        404: e("no such agent, no score yet, or agent_unclaimed: its owner unclaimed it (no owner, no score)"),
      },
    }).handle(async ({ params }) => {
      const score = await reads.latestScore(params.id);
      return { status: 200, json: scoreJsonText(score), headers: { ETag: scoreEtag(score) } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/window",
      operationId: "getScoreWindow",
      tag: "scores",
      auth: "none",
      summary: "The 30 days of the latest score's window (V10), oldest first.",
      params: idParams,
      responses: {
        200: {
          description: "ok",
          schema: z.object({ agentId: z.string(), scoreId: z.number().int(), at: z.string(), window: z.array(windowDaySchema) }),
        },
        404: e("no such agent, no score yet, or agent_unclaimed: its owner unclaimed it"),
      },
    }).handle(async ({ params }) => {
      const score = await reads.latestScore(params.id);
      const result: unknown = JSON.parse(score.resultJson);
      const { window, at } = scoreResultSchema.pick({ window: true, at: true }).parse(result);
      return { status: 200, body: { agentId: params.id, scoreId: score.id, at, window } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/scores",
      operationId: "listDailyScores",
      tag: "scores",
      auth: "none",
      summary:
        "The daily score history of an agent between two days (default: the last 90 days), oldest first, a page at a time (nextCursor).",
      params: idParams,
      query: z.object({ from: daySchema.optional(), to: daySchema.optional(), ...pageQuery(ROWS_PAGE) }),
      responses: {
        200: {
          description: "ok",
          schema: z.object({
            agentId: z.string(),
            scoreType: z.literal("vrai"),
            from: z.string(),
            to: z.string(),
            scores: z.array(scoreResponse),
            nextCursor: nextCursorSchema,
            firstDailyAt: z
              .string()
              .describe(
                "when the first daily score of the agent's latest claim is computed (V9: the first 00:00 UTC at or after the claim), " +
                  "anchored on chain after it",
              ),
            message: z.string().optional().describe("while that first daily score is still to come: when it comes"),
          }),
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        404: e("no such agent, or agent_unclaimed: its owner unclaimed it"),
      },
    }).handle(async ({ params, query }) => {
      const { from, to, items, nextCursor, firstDailyAt, firstDailyToCome } = await reads.dailyScores(params.id, query);
      const first = toRfc3339(firstDailyAt);
      const message = firstDailyToCome
        ? `agent ${params.id} has no daily score yet: ` +
          `the first is computed at ${first} (the first 00:00 UTC after its claim, V9) and anchored on chain after it`
        : undefined;
      return {
        status: 200,
        body: {
          agentId: params.id,
          scoreType: "vrai",
          from,
          to,
          scores: items.map(scoreJson),
          nextCursor,
          firstDailyAt: first,
          ...(message === undefined ? {} : { message }),
        },
      };
    }),
    defineRoute({
      method: "get",
      path: "/v1/scores/:id",
      operationId: "getScore",
      tag: "scores",
      auth: "none",
      summary: "One stored score.",
      params: scoreIdParams,
      responses: { 200: { description: "ok", schema: scoreResponse, example: examples.score }, 404: e("no such score") },
    }).handle(async ({ params }) => ({ status: 200, body: scoreJson(await reads.score(params.id)) })),
    defineRoute({
      method: "get",
      path: "/v1/scores/:id/inputs",
      operationId: "getScoreInputs",
      tag: "scores",
      auth: "none",
      summary: "The exact canonical inputs (RFC 8785 bytes) of a stored score; their SHA-256 is in the X-Vrai-Sha256 header.",
      params: scoreIdParams,
      responses: {
        200: { description: "the canonical bytes of the inputs document (V9)", schema: scoreInputsSchema, example: examples.scoreInputs },
        404: e("no such score"),
      },
    }).handle(async ({ params }) => {
      const score = await reads.score(params.id);
      // The stored bytes as they are: their SHA-256 is the score's digest.
      return {
        status: 200,
        headers: { "X-Vrai-Sha256": score.sha256, "X-Vrai-Method": score.method },
        json: new JsonText<ScoreInputs>(score.inputs),
      };
    }),
    defineRoute({
      method: "get",
      path: "/v1/method",
      operationId: "getMethod",
      tag: "method",
      auth: "none",
      summary:
        "The method versions with their changes, the identity points (V6) and the declared outage windows (V4.4), newest first: " +
        "the first page of /v1/outages, whose next page outagesNextCursor names.",
      responses: { 200: { description: "ok", schema: methodResponse } },
    }).handle(async () => {
      const { outages, nextCursor } = await deps.site.outagesPage({ limit: ROWS_PAGE.default });
      return {
        status: 200,
        body: {
          current: CURRENT_METHOD,
          versions: METHOD_VERSIONS.map((v) => ({ version: v, published: METHODS[v].published, changes: METHODS[v].changes })),
          identityPoints: { claim: CLAIM_POINTS, proofs: METHODS[CURRENT_METHOD].identity },
          outages: outages.map(outageJson),
          outagesNextCursor: nextCursor,
        },
      };
    }),
    defineRoute({
      method: "get",
      path: "/v1/outages",
      operationId: "listOutages",
      tag: "outages",
      auth: "none",
      summary: "Every declared outage window (V4.4), with start, end and declared_at, newest first, a page at a time (nextCursor).",
      query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({ outages: z.array(outageResponse), nextCursor: nextCursorSchema }),
          example: { outages: [examples.outage], nextCursor: null },
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
      },
    }).handle(async ({ query }) => {
      const { outages, nextCursor } = await deps.site.outagesPage(query);
      return { status: 200, body: { outages: outages.map(outageJson), nextCursor } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/operator/outages",
      operationId: "declareOutage",
      tag: "operator",
      auth: "operator",
      summary: "Declare an outage window (V4.1): while it lasts, or after it ended when it started at most 48 h ago.",
      body: z.object({ start: instantSchema, end: instantSchema.nullable().optional(), reason }).strict(),
      bodyExample: { start: examples.outage.start, end: examples.outage.end, reason: examples.outage.reason },
      responses: {
        201: { description: "declared", schema: outageResponse, example: examples.outage },
        400: e("rejected declaration"),
        401: e("not the operator"),
      },
    }).handle(async ({ body, operatorName }) => {
      const outage = await operator.declareOutage({ start: body.start, end: body.end ?? null, reason: body.reason }, operatorName);
      return { status: 201, body: outageJson(outage) };
    }),
    defineRoute({
      method: "post",
      path: "/v1/operator/outages/:id/close",
      operationId: "closeOutage",
      tag: "operator",
      auth: "operator",
      summary:
        "Close an open outage window by setting its end (V4.1), never before its start. " +
        "An end before the window's declared_at is judged as a declaration after it ended: " +
        "rejected when it started more than 48 h before declared_at.",
      params: idParams,
      body: z.object({ end: instantSchema }).strict(),
      responses: {
        200: { description: "closed", schema: outageResponse },
        400: e("rejected close (V4.1): an end before the start, or a late end of a window that started more than 48 h before declared_at"),
        404: e("no such window"),
        409: e("already closed"),
      },
    }).handle(async ({ params, body, operatorName }) => ({
      status: 200,
      body: outageJson(await operator.closeOutage(params.id, body.end, operatorName)),
    })),
    defineRoute({
      method: "post",
      path: "/v1/operator/penalties",
      operationId: "addPenalty",
      tag: "operator",
      auth: "operator",
      summary: "Add a penalty (V7): code, 10-50 points, 30-180 days, and why. Recomputes the score at once.",
      body: z
        .object({
          agentId: idSchema,
          code: z.enum(PENALTY_CODES),
          points: z.number().int().min(10).max(50),
          days: z.number().int().min(30).max(180),
          reason,
        })
        .strict(),
      bodyExample: {
        agentId: examples.penalty.agentId,
        code: examples.penalty.code,
        points: examples.penalty.points,
        days: examples.penalty.days,
        reason: examples.penalty.reason,
      },
      responses: {
        201: { description: "added", schema: penaltyResponse, example: examples.penalty },
        400: e("invalid penalty"),
        401: e("not the operator"),
        404: e("no such agent"),
      },
    }).handle(async ({ body, operatorName }) => ({ status: 201, body: penaltyJson(await operator.addPenalty(body, operatorName)) })),
    defineRoute({
      method: "post",
      path: "/v1/operator/penalties/:id/revoke",
      operationId: "revokePenalty",
      tag: "operator",
      auth: "operator",
      summary: "Revoke a penalty from now on, with the reason. Recomputes the score at once.",
      params: idParams,
      body: z.object({ reason }).strict(),
      responses: { 200: { description: "revoked", schema: penaltyResponse }, 404: e("no such penalty"), 409: e("already revoked") },
    }).handle(async ({ params, body, operatorName }) => ({
      status: 200,
      body: penaltyJson(await operator.revokePenalty(params.id, body.reason, operatorName)),
    })),
    defineRoute({
      method: "get",
      path: "/v1/agents/:id/penalties",
      operationId: "listPenalties",
      tag: "scores",
      auth: "none",
      summary:
        "The penalties of an agent, active or not, with codes, points, durations and the operators who added and revoked them (V7), " +
        "oldest first, a page at a time (nextCursor).",
      params: idParams,
      query: z.object(pageQuery(ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({
            agentId: z.string(),
            penalties: z.array(
              penaltyResponse.pick({
                id: true,
                code: true,
                points: true,
                days: true,
                addedAt: true,
                revokedAt: true,
                addedBy: true,
                revokedBy: true,
              }),
            ),
            nextCursor: nextCursorSchema,
          }),
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        404: e("no such agent, or agent_unclaimed: its owner unclaimed it"),
      },
    }).handle(async ({ params, query }) => {
      const { items, nextCursor } = await reads.penaltiesOf(params.id, query);
      const penalties = items.map((p) => ({
        id: p.id,
        code: p.code,
        points: p.points,
        days: p.days,
        addedAt: toRfc3339(p.addedAt),
        revokedAt: p.revokedAt === null ? null : toRfc3339(p.revokedAt),
        addedBy: p.addedBy,
        revokedBy: p.revokedBy,
      }));
      return { status: 200, body: { agentId: params.id, penalties, nextCursor } };
    }),
    defineRoute({
      method: "put",
      path: "/v1/operator/busy",
      operationId: "setBusy",
      tag: "operator",
      auth: "operator",
      summary: "Turn the busy switch on or off (V3.3: next_heartbeat_s 7200 while on).",
      body: z.object({ on: z.boolean(), reason }).strict(),
      responses: { 200: { description: "set", schema: z.object({ busy: z.boolean() }) }, 401: e("not the operator") },
    }).handle(async ({ body, operatorName }) => {
      await operator.setBusy(body.on, body.reason, operatorName);
      return { status: 200, body: { busy: body.on } };
    }),
    defineRoute({
      method: "post",
      path: "/v1/operator/agents/:id/transfer",
      operationId: "transferAgent",
      tag: "operator",
      auth: "operator",
      summary:
        "Transfer an agent to an owner: a new claim by that owner (V2), logged. " +
        `A new owner's claim removes the agent's ${agentLevelProofs} at that instant; ` +
        "a transfer to its own owner is a re-claim and keeps them. " +
        "Idempotency keys used before are forgotten. Returns the new agent key once.",
      params: idParams,
      body: z.object({ toOwnerId: idSchema, reason }).strict(),
      responses: { 200: { description: "transferred", schema: claimResponse }, 404: e("no such agent or owner") },
    }).handle(async ({ params, body, operatorName }) => ({
      status: 200,
      body: claimJson(await accounts.transfer(params.id, body.toOwnerId, body.reason, operatorName)),
    })),
    defineRoute({
      method: "get",
      path: "/v1/operator/audit",
      operationId: "listAuditEntries",
      tag: "operator",
      auth: "operator",
      summary: "The audit log: every operator change with who, when and why, oldest first, a page at a time (nextCursor).",
      query: z.object(pageQuery(SMALL_ROWS_PAGE)),
      responses: {
        200: {
          description: "ok",
          schema: z.object({
            entries: z.array(
              z.object({
                id: z.number().int(),
                at: z.string(),
                actor: z.string(),
                action: z.string(),
                subject: z.string(),
                details: z.unknown(),
              }),
            ),
            nextCursor: nextCursorSchema,
          }),
        },
        400: e("a parameter is not valid, or a cursor no page gave"),
        401: e("not the operator"),
      },
    }).handle(async ({ query }) => {
      const { items, nextCursor } = await reads.audit(query);
      return { status: 200, body: { entries: items.map((x) => ({ ...x, at: toRfc3339(x.at) })), nextCursor } };
    }),
  ];
}
