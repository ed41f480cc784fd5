import { z } from "zod";

/** Who may call a route. */
export type Auth = "none" | "owner" | "agent" | "operator";

/** What a handler returns: status, JSON body (or JSON already serialised, or raw text) and extra headers. */
export type Reply = { status: number; body?: unknown; json?: string; raw?: { contentType: string; text: string }; headers?: Record<string, string> };

export type RouteContext = {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string | undefined>;
  /** The owner id when `auth` is `owner`. */
  ownerId: string;
  /** The presented bearer credential (agent key for `agent` routes). */
  credential: string;
};

/**
 * One HTTP route, declared once: the app validates with these schemas and the OpenAPI document
 * is generated from them, so the document cannot drift from what the server accepts.
 */
export type RouteSpec = {
  method: "get" | "post" | "put" | "delete";
  /** Express path, e.g. `/v1/agents/:id/checkins`. */
  path: string;
  summary: string;
  tag: string;
  auth: Auth;
  params?: z.ZodObject;
  query?: z.ZodObject;
  headers?: z.ZodObject;
  body?: z.ZodType;
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handler(ctx: RouteContext): Promise<Reply>;
};

/** A request's route and its path parameters, found by `createRouteTable`. */
export type RouteMatch = { route: RouteSpec; params: Record<string, string> };

// Paths the table answers for: one or more non-empty segments of unreserved and sub-delimiter
// characters. No trailing slash, no percent-escape (a parameter is then its own decoded value),
// no absolute-form URL: parseurl's fast path reads such a URL the same way.
const PLAIN_PATH = /^(?:\/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$/;
const PARAM_SEGMENT = /^:([A-Za-z_$][A-Za-z0-9_$]*)$/;
// Route path literals free of path-to-regexp syntax (`:`, `*`, `{}`, `()` and the like).
const LITERAL_SEGMENT = /^[A-Za-z0-9._~-]+$/;

/**
 * Finds the route of a request without walking Express's router, for the common request only: its
 * exact method and a plain path (see `PLAIN_PATH`). Anything else (HEAD, OPTIONS, a trailing slash,
 * escapes) returns null and is left to Express, where the same routes are registered too; on the
 * requests it answers, the table agrees with Express: literal segments compare case-insensitively,
 * a parameter is one whole segment, and the first route declared wins.
 * @throws when a route path uses syntax beyond literal and `:name` segments.
 */
export function createRouteTable(routes: readonly RouteSpec[]) {
  const byMethod = new Map<string, { route: RouteSpec; segments: (string | { param: string })[] }[]>();
  for (const route of routes) {
    const segments = route.path.split("/").slice(1).map((segment) => {
      const param = PARAM_SEGMENT.exec(segment);
      if (param) return { param: param[1] };
      if (!LITERAL_SEGMENT.test(segment)) throw new Error(`route path ${route.path}: only literal and :name segments are supported`);
      return segment.toLowerCase();
    });
    const method = route.method.toUpperCase();
    const list = byMethod.get(method) ?? [];
    list.push({ route, segments });
    byMethod.set(method, list);
  }

  /** The route for `method` and `url` (path and query), or null when Express's router must decide. */
  function match(method: string, url: string): RouteMatch | null {
    const candidates = byMethod.get(method);
    if (!candidates) return null;
    const queryAt = url.indexOf("?");
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    if (!PLAIN_PATH.test(path)) return null;
    const parts = path.split("/");
    next: for (const { route, segments } of candidates) {
      if (segments.length !== parts.length - 1) continue;
      const params: Record<string, string> = {};
      for (let i = 0; i < segments.length; i++) {
        const segment = segments[i];
        const part = parts[i + 1];
        if (typeof segment !== "string") params[segment.param] = part;
        else if (part !== segment && part.toLowerCase() !== segment) continue next;
      }
      return { route, params };
    }
    return null;
  }

  return { match };
}

/** The JSON error shape, for the OpenAPI document. */
export const errorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/** An agent id, owner id or other server id in a path. */
export const idSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "expected 1 to 64 letters, digits, _ or -");

/** Builds the OpenAPI 3.1 document of `routes`. */
export function openApiDocument(routes: readonly RouteSpec[], info: { version: string }): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  const schema = (s: z.ZodType) => {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    return rest;
  };
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z]+)/g, "{$1}");
    const parameters: unknown[] = [];
    for (const [where, obj] of [["path", r.params], ["query", r.query], ["header", r.headers]] as const) {
      if (!obj) continue;
      for (const [name, s] of Object.entries(obj.shape)) {
        const optional = (s as z.ZodType).safeParse(undefined).success;
        parameters.push({ name, in: where, required: where === "path" || !optional, schema: schema(s as z.ZodType) });
      }
    }
    const security = r.auth === "none" ? [] : [{ [`${r.auth}Token`]: [] }];
    (paths[path] ??= {})[r.method] = {
      summary: r.summary,
      tags: [r.tag],
      security,
      parameters,
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: schema(r.body) } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, resp]) => [
          status,
          { description: resp.description, ...(resp.schema ? { content: { "application/json": { schema: schema(resp.schema) } } } : {}) },
        ]),
      ),
    };
  }
  const bearer = (description: string) => ({ type: "http", scheme: "bearer", description });
  return {
    openapi: "3.1.0",
    info: {
      title: "Vrai API",
      version: info.version,
      description:
        "Vrai scores AI agents from evidence it can verify. Every score carries its scoreType (vrai, sdk-derived, platform-network); they are never mixed. Errors are always { error: { code, message } }.",
    },
    components: {
      securitySchemes: {
        ownerToken: bearer("An owner token from POST /v1/owners: Authorization: Bearer <token>"),
        agentToken: bearer("An agent key from a claim: Authorization: Bearer <agent key>"),
        operatorToken: bearer("The operator token from configuration"),
      },
    },
    paths,
  };
}
