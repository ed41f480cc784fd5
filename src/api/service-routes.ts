import type client from "prom-client";
import { z } from "zod";
import { CLAIM_POINTS, CURRENT_METHOD, IDENTITY_PROOFS, METHOD_VERSIONS, METHODS, PENALTY_CODES, toRfc3339, type CountedCheckin } from "../method";
import type { VraiService } from "../service";
import { ConflictError, NotFoundError } from "../service/errors";
import type { ScoreRow } from "../service/ports";
import type { ScoreSummary } from "../store/score-cache";
import type { LatestScoreSummaryRead } from "../store/sql-store";
import { errorSchema, idSchema, type Reply, type RouteSpec } from "./routes";

const rfc3339 = z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, "expected YYYY-MM-DDTHH:MM:SSZ");
const dayString = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "expected YYYY-MM-DD");
const idParams = z.object({ id: idSchema });
const reason = z.string().trim().min(1).max(500);
const seconds = (s: string): number => Math.floor(Date.parse(s) / 1000);

const claimResponse = z.object({ agentId: z.string(), ownerId: z.string(), agentKey: z.string(), claimId: z.number(), claimedAt: z.string() });
const checkinResponse = z.object({
  agentId: z.string(), result: z.enum(["counted"]), arrival: z.string(), next_heartbeat_s: z.number(),
  on_time: z.boolean().nullable(), excused: z.boolean(), credit: z.number(),
});
const scoreResponse = z.object({
  id: z.number(), scoreType: z.literal("vrai"), agentId: z.string(), method: z.string(), at: z.string(), trigger: z.string(),
  day: z.string().nullable(), sha256: z.string(), total: z.number(), result: z.record(z.string(), z.unknown()),
  links: z.object({ inputs: z.string(), self: z.string() }),
});
const outageResponse = z.object({ id: z.string(), start: z.string(), end: z.string().nullable(), declared_at: z.string(), reason: z.string() });
const e = (description: string) => ({ description, schema: errorSchema });

const scoreLinks = (id: number) => ({ inputs: `/v1/scores/${id}/inputs`, self: `/v1/scores/${id}` });

/** The JSON of a stored score (V9): what it is, when, its digest and its result. */
export function scoreJson(s: Omit<ScoreRow, "inputs">) {
  return {
    id: s.id, scoreType: "vrai" as const, agentId: s.agentId, method: s.method, at: toRfc3339(s.at), trigger: s.trigger,
    day: s.day, sha256: s.sha256, total: s.total, result: s.result as Record<string, unknown>, links: scoreLinks(s.id),
  };
}

/**
 * `scoreJson` as JSON text, with the result's JSON text put in as the database holds it (not
 * parsed and written again): the same fields in the same order.
 */
export function scoreJsonText(s: ScoreSummary): string {
  const head = JSON.stringify({
    id: s.id, scoreType: "vrai", agentId: s.agentId, method: s.method, at: toRfc3339(s.at), trigger: s.trigger, day: s.day, sha256: s.sha256, total: s.total,
  });
  return `${head.slice(0, -1)},"result":${s.resultJson},"links":${JSON.stringify(scoreLinks(s.id))}}`;
}

/**
 * A stored score's representation never changes, so its id and digest make a validator without
 * hashing the body; `SCORE_FORMAT` changes with the representation.
 */
const SCORE_FORMAT = 1;
const scoreEtag = (s: ScoreSummary) => `W/"score-${SCORE_FORMAT}-${s.id}-${s.sha256.slice(0, 16)}"`;

export function outageJson(o: { id: string; start: number; end: number | null; declaredAt: number; reason: string }) {
  return { id: o.id, start: toRfc3339(o.start), end: o.end === null ? null : toRfc3339(o.end), declared_at: toRfc3339(o.declaredAt), reason: o.reason };
}

function checkinJson(agentId: string, c: CountedCheckin) {
  return { agentId, result: "counted" as const, arrival: toRfc3339(c.arrival), next_heartbeat_s: c.nextHeartbeatS, on_time: c.onTime, excused: c.excused, credit: c.credit };
}

/** Owners, claims, check-ins, operator actions, scores and the method: the routes of the Vrai service. */
export function serviceRoutes(service: VraiService, metrics: { checkinResults: client.Counter<"result"> }): RouteSpec[] {
  const { accounts, checkins, operator, store } = service;
  const inFlight = new Set<string>();

  // The SQL store answers "does the agent exist, and its latest score without the inputs" in one statement.
  const summaryRead = store.read as Partial<LatestScoreSummaryRead>;
  const latestScoreSummary = typeof summaryRead.latestScoreSummary === "function" ? summaryRead.latestScoreSummary.bind(summaryRead) : null;

  async function latestScoreOf(agentId: string): Promise<ScoreSummary> {
    if (latestScoreSummary) {
      const { agentExists, score } = await latestScoreSummary(agentId);
      if (!agentExists) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
      if (!score) throw new NotFoundError("score_not_found", `agent ${agentId} has no score yet`);
      return score;
    }
    if (!(await store.read.getAgent(agentId))) throw new NotFoundError("agent_not_found", `agent ${agentId} does not exist`);
    const score = await store.read.latestScore(agentId);
    if (!score) throw new NotFoundError("score_not_found", `agent ${agentId} has no score yet`);
    const { inputs: _inputs, result, ...rest } = score;
    return { ...rest, resultJson: JSON.stringify(result) };
  }

  return [
    {
      method: "post", path: "/v1/owners", tag: "owners", auth: "none",
      summary: "Create an owner account. The token is returned once; only its hash is stored.",
      body: z.object({}).strict(),
      responses: { 201: { description: "created", schema: z.object({ ownerId: z.string(), token: z.string() }) }, 400: e("bad request") },
      handler: async () => ({ status: 201, body: await accounts.createOwner() }),
    },
    {
      method: "get", path: "/v1/owners/me", tag: "owners", auth: "owner",
      summary: "The calling owner and its agents.",
      responses: { 200: { description: "ok", schema: z.object({ ownerId: z.string(), agents: z.array(z.string()) }) }, 401: e("no valid owner token") },
      handler: async ({ ownerId }) => ({ status: 200, body: { ownerId, agents: await store.read.listAgentsOfOwner(ownerId) } }),
    },
    {
      method: "post", path: "/v1/agents", tag: "claims", auth: "owner",
      summary: "Claim a new agent (V2). Returns the agent key once; only its hash is stored.",
      body: z.object({ name: z.string().trim().min(1).max(100).optional() }).strict(),
      responses: { 201: { description: "claimed", schema: claimResponse }, 400: e("bad request"), 401: e("no valid owner token") },
      handler: async ({ ownerId, body }) => {
        const claim = await accounts.claimNewAgent(ownerId, { name: (body as { name?: string }).name ?? null });
        return { status: 201, body: { ...claim, claimedAt: toRfc3339(claim.claimedAt) } };
      },
    },
    {
      method: "post", path: "/v1/agents/:id/claim", tag: "claims", auth: "owner",
      summary: "Re-claim your own agent: rotates its key and restarts everything V2 restarts. Another owner's agent is refused.",
      params: idParams, body: z.object({}).strict(),
      responses: { 200: { description: "re-claimed", schema: claimResponse }, 403: e("the agent belongs to another owner"), 404: e("no such agent") },
      handler: async ({ ownerId, params }) => {
        const claim = await accounts.reclaim(ownerId, params.id);
        return { status: 200, body: { ...claim, claimedAt: toRfc3339(claim.claimedAt) } };
      },
    },
    {
      method: "post", path: "/v1/agents/:id/checkins", tag: "check-ins", auth: "agent",
      summary: "Check in (V3). Counted: 201; the same Idempotency-Key again: the original response; under 1,200 s: 429 with Retry-After; the same key in flight: 409.",
      params: idParams,
      headers: z.object({ "idempotency-key": z.string().regex(/^[\x21-\x7e]{1,128}$/, "expected 1 to 128 visible ASCII characters") }),
      responses: {
        201: { description: "counted (or the original response of a duplicate)", schema: checkinResponse },
        400: e("missing or malformed Idempotency-Key"), 401: e("no valid agent key"),
        409: e("a request with this key is in flight"),
        429: { description: "refused: too soon", schema: errorSchema.extend({ retry_after_s: z.number() }) },
      },
      handler: async ({ params, headers, credential }): Promise<Reply> => {
        const key = headers["idempotency-key"] as string;
        const flightKey = `${params.id}\u0000${key}`;
        if (inFlight.has(flightKey)) throw new ConflictError("checkin_in_flight", "a check-in with this Idempotency-Key is still being processed");
        inFlight.add(flightKey);
        try {
          const outcome = await checkins.checkIn(params.id, key, (agent) => accounts.checkAgentKey(agent, credential));
          metrics.checkinResults.inc({ result: outcome.type });
          if (outcome.type === "refused") {
            return {
              status: 429,
              headers: { "Retry-After": String(outcome.retryAfterS) },
              body: { error: { code: "checkin_refused", message: `less than 1,200 s since the previous counted check-in; retry in ${outcome.retryAfterS} s` }, retry_after_s: outcome.retryAfterS },
            };
          }
          if (outcome.type === "duplicate") return { status: 201, headers: { "Idempotent-Replayed": "true" }, body: checkinJson(params.id, outcome.original) };
          return { status: 201, body: checkinJson(params.id, outcome) };
        } finally {
          inFlight.delete(flightKey);
        }
      },
    },
    {
      method: "get", path: "/v1/agents/:id/score", tag: "scores", auth: "none",
      summary: "The latest Vrai score of an agent (scoreType vrai), with its method and inputs digest.",
      params: idParams,
      responses: { 200: { description: "ok", schema: scoreResponse }, 404: e("no such agent or no score yet") },
      handler: async ({ params }) => {
        const score = await latestScoreOf(params.id);
        return { status: 200, json: scoreJsonText(score), headers: { ETag: scoreEtag(score) } };
      },
    },
    {
      method: "get", path: "/v1/agents/:id/window", tag: "scores", auth: "none",
      summary: "The 30 days of the latest score's window (V10), oldest first.",
      params: idParams,
      responses: { 200: { description: "ok" }, 404: e("no such agent or no score yet") },
      handler: async ({ params }) => {
        const score = await latestScoreOf(params.id);
        const result = JSON.parse(score.resultJson) as { window: unknown; at: string };
        return { status: 200, body: { agentId: params.id, scoreId: score.id, at: result.at, window: result.window } };
      },
    },
    {
      method: "get", path: "/v1/agents/:id/scores", tag: "scores", auth: "none",
      summary: "The daily score history of an agent between two days (default: the last 90 days).",
      params: idParams, query: z.object({ from: dayString.optional(), to: dayString.optional() }),
      responses: { 200: { description: "ok" }, 404: e("no such agent") },
      handler: async ({ params, query }) => {
        if (!(await store.read.getAgent(params.id))) throw new NotFoundError("agent_not_found", `agent ${params.id} does not exist`);
        const to = (query.to as string | undefined) ?? "9999-12-31";
        const from = (query.from as string | undefined) ?? toRfc3339(service.clock.now() - 90 * 86400).slice(0, 10);
        const rows = await store.read.listDailyScores(params.id, from, to);
        return { status: 200, body: { agentId: params.id, scoreType: "vrai", from, to, scores: rows.map(scoreJson) } };
      },
    },
    {
      method: "get", path: "/v1/scores/:id", tag: "scores", auth: "none",
      summary: "One stored score.",
      params: z.object({ id: z.coerce.number().int().positive() }),
      responses: { 200: { description: "ok", schema: scoreResponse }, 404: e("no such score") },
      handler: async ({ params }) => {
        const score = await store.read.getScore(Number(params.id));
        if (!score) throw new NotFoundError("score_not_found", `score ${params.id} does not exist`);
        return { status: 200, body: scoreJson(score) };
      },
    },
    {
      method: "get", path: "/v1/scores/:id/inputs", tag: "scores", auth: "none",
      summary: "The exact canonical inputs (RFC 8785 bytes) of a stored score; their SHA-256 is in the X-Vrai-Sha256 header.",
      params: z.object({ id: z.coerce.number().int().positive() }),
      responses: { 200: { description: "the canonical bytes" }, 404: e("no such score") },
      handler: async ({ params }) => {
        const score = await store.read.getScore(Number(params.id));
        if (!score) throw new NotFoundError("score_not_found", `score ${params.id} does not exist`);
        return { status: 200, headers: { "X-Vrai-Sha256": score.sha256, "X-Vrai-Method": score.method }, raw: { contentType: "application/json; charset=utf-8", text: score.inputs } };
      },
    },
    {
      method: "get", path: "/v1/method", tag: "method", auth: "none",
      summary: "The method versions with their changes, the identity points (V6) and every declared outage window (V4.4).",
      responses: { 200: { description: "ok" } },
      handler: async () => ({
        status: 200,
        body: {
          current: CURRENT_METHOD,
          versions: METHOD_VERSIONS.map((v) => ({ version: v, published: METHODS[v].published, changes: METHODS[v].changes })),
          identityPoints: { claim: CLAIM_POINTS, proofs: IDENTITY_PROOFS },
          outages: (await store.read.listOutages()).map(outageJson),
        },
      }),
    },
    {
      method: "get", path: "/v1/outages", tag: "outages", auth: "none",
      summary: "Every declared outage window (V4.4), with start, end and declared_at.",
      responses: { 200: { description: "ok", schema: z.object({ outages: z.array(outageResponse) }) } },
      handler: async () => ({ status: 200, body: { outages: (await store.read.listOutages()).map(outageJson) } }),
    },
    {
      method: "post", path: "/v1/operator/outages", tag: "operator", auth: "operator",
      summary: "Declare an outage window (V4.1): while it lasts, or after it ended when it started at most 48 h ago.",
      body: z.object({ start: rfc3339, end: rfc3339.nullable().optional(), reason }).strict(),
      responses: { 201: { description: "declared", schema: outageResponse }, 400: e("rejected declaration"), 401: e("not the operator") },
      handler: async ({ body }) => {
        const b = body as { start: string; end?: string | null; reason: string };
        const outage = await operator.declareOutage({ start: seconds(b.start), end: b.end ? seconds(b.end) : null, reason: b.reason });
        return { status: 201, body: outageJson(outage) };
      },
    },
    {
      method: "post", path: "/v1/operator/outages/:id/close", tag: "operator", auth: "operator",
      summary: "Close an open outage window by setting its end.",
      params: idParams, body: z.object({ end: rfc3339 }).strict(),
      responses: { 200: { description: "closed", schema: outageResponse }, 404: e("no such window"), 409: e("already closed") },
      handler: async ({ params, body }) => ({ status: 200, body: outageJson(await operator.closeOutage(params.id, seconds((body as { end: string }).end))) }),
    },
    {
      method: "post", path: "/v1/operator/penalties", tag: "operator", auth: "operator",
      summary: "Add a penalty (V7): code, 10-50 points, 30-180 days, and why. Recomputes the score at once.",
      body: z.object({
        agentId: idSchema, code: z.enum(PENALTY_CODES), points: z.number().int().min(10).max(50),
        days: z.number().int().min(30).max(180), reason,
      }).strict(),
      responses: { 201: { description: "added" }, 400: e("invalid penalty"), 401: e("not the operator"), 404: e("no such agent") },
      handler: async ({ body }) => {
        const p = await operator.addPenalty(body as { agentId: string; code: string; points: number; days: number; reason: string });
        return { status: 201, body: { ...p, addedAt: toRfc3339(p.addedAt), revokedAt: null } };
      },
    },
    {
      method: "post", path: "/v1/operator/penalties/:id/revoke", tag: "operator", auth: "operator",
      summary: "Revoke a penalty from now on, with the reason. Recomputes the score at once.",
      params: idParams, body: z.object({ reason }).strict(),
      responses: { 200: { description: "revoked" }, 404: e("no such penalty"), 409: e("already revoked") },
      handler: async ({ params, body }) => {
        const p = await operator.revokePenalty(params.id, (body as { reason: string }).reason);
        return { status: 200, body: { ...p, addedAt: toRfc3339(p.addedAt), revokedAt: toRfc3339(p.revokedAt!) } };
      },
    },
    {
      method: "get", path: "/v1/agents/:id/penalties", tag: "scores", auth: "none",
      summary: "The penalties of an agent, active or not, with codes, points and durations.",
      params: idParams,
      responses: { 200: { description: "ok" }, 404: e("no such agent") },
      handler: async ({ params }) => {
        if (!(await store.read.getAgent(params.id))) throw new NotFoundError("agent_not_found", `agent ${params.id} does not exist`);
        const penalties = (await store.read.listPenalties(params.id)).map((p) => ({
          id: p.id, code: p.code, points: p.points, days: p.days, addedAt: toRfc3339(p.addedAt),
          revokedAt: p.revokedAt === null ? null : toRfc3339(p.revokedAt),
        }));
        return { status: 200, body: { agentId: params.id, penalties } };
      },
    },
    {
      method: "put", path: "/v1/operator/busy", tag: "operator", auth: "operator",
      summary: "Turn the busy switch on or off (V3.3: next_heartbeat_s 7200 while on).",
      body: z.object({ on: z.boolean(), reason }).strict(),
      responses: { 200: { description: "set" }, 401: e("not the operator") },
      handler: async ({ body }) => {
        const b = body as { on: boolean; reason: string };
        await operator.setBusy(b.on, b.reason);
        return { status: 200, body: { busy: b.on } };
      },
    },
    {
      method: "post", path: "/v1/operator/agents/:id/transfer", tag: "operator", auth: "operator",
      summary: "Transfer an agent to another owner: a new claim by that owner (V2), logged. Returns the new agent key once.",
      params: idParams, body: z.object({ toOwnerId: idSchema, reason }).strict(),
      responses: { 200: { description: "transferred", schema: claimResponse }, 404: e("no such agent or owner") },
      handler: async ({ params, body }) => {
        const b = body as { toOwnerId: string; reason: string };
        const claim = await accounts.transfer(params.id, b.toOwnerId, b.reason);
        return { status: 200, body: { ...claim, claimedAt: toRfc3339(claim.claimedAt) } };
      },
    },
    {
      method: "get", path: "/v1/operator/audit", tag: "operator", auth: "operator",
      summary: "The audit log: every operator change with who, when and why, oldest first.",
      query: z.object({ after: z.coerce.number().int().min(0).optional(), limit: z.coerce.number().int().min(1).max(1000).optional() }),
      responses: { 200: { description: "ok" }, 401: e("not the operator") },
      handler: async ({ query }) => {
        const entries = await store.read.listAudit({ afterId: (query.after as number | undefined) ?? 0, limit: (query.limit as number | undefined) ?? 100 });
        return { status: 200, body: { entries: entries.map((x) => ({ ...x, at: toRfc3339(x.at) })) } };
      },
    },
  ];
}
