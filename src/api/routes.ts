import type { Request, Response } from "express";
import { z } from "zod";

/** Who may call a route. */
export type Auth = "none" | "owner" | "agent" | "operator";

/** What a handler returns: status, JSON body (or raw text) and extra headers. */
export type Reply = { status: number; body?: unknown; raw?: { contentType: string; text: string }; headers?: Record<string, string> };

export type RouteContext = {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  headers: Record<string, string | undefined>;
  /** The owner id when `auth` is `owner`. */
  ownerId: string;
  /** The presented bearer credential (agent key for `agent` routes). */
  credential: string;
  req: Request;
  res: Response;
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
