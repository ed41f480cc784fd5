/** The OpenAPI 3.1 document, generated from the route declarations so it cannot drift from what the server accepts. */
import { z } from "zod";
import { describeZodError, errorResponse as e, errorSchema, type ResponseSpec, type Responses, type Route } from "./route";

const jsonSchema = (schema: z.core.$ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  return rest;
};

/** The API's version, in its OpenAPI document's `info`. */
export const API_VERSION = "0.1.0";

/** The one error shape, referenced by every error response that has no fields of its own. */
const ERROR_REF = { $ref: "#/components/schemas/Error" };

/**
 * Every response a route can answer: its own, and those the HTTP layer answers for any route
 * (src/api/express.ts, src/api/http.ts) where they apply. A route's own description wins.
 */
export function answeredResponses(route: Route): Responses {
  const shared: Responses = {};
  // Express answers a GET whose If-None-Match matches the reply's ETag with 304 and no body.
  if (route.method === "get") shared[304] = { description: "not modified: If-None-Match matched the ETag" };
  if (route.params || route.query || route.headers || route.body) {
    shared[400] = e(
      `a request part is not valid (invalid_request, the field named)${route.body ? ", or the body is not JSON (malformed_json)" : ""}`,
    );
  }
  shared[401] =
    route.auth === "none"
      ? e("the Authorization header is not Bearer <token> (malformed_authorization)")
      : e(`no valid ${route.auth} credential`);
  if (route.body) {
    shared[413] = e("the body is larger than 32 kB (body_too_large)");
    shared[415] = e("the body is not application/json");
  }
  shared[429] = e("rate limited (rate_limited): retry after the Retry-After header's seconds");
  // Any route may find its database away (a PostgreSQL failover), or its write rolled back for a conflict with another
  // (src/store/errors.ts): nothing was done, retry after Retry-After.
  shared[503] = e(
    "the database is unavailable (database_unavailable, e.g. during a failover) or rolled back a write that conflicted with " +
      "another (database_conflict): nothing was done; retry after the Retry-After header's seconds",
  );
  const all: Responses = { ...shared, ...route.responses };
  // A read-only owner token is refused every owner route that is not a read (issue #29), whatever else its 403 says.
  if (route.auth === "owner" && route.method !== "get") {
    const readOnly = "a read-only owner token (vor_…) cannot change anything (read_only_token)";
    const own = route.responses[403];
    all[403] = own ? { ...own, description: `${own.description}; or ${readOnly}` } : e(readOnly);
  }
  return Object.fromEntries(
    Object.keys(all)
      .map(Number)
      .sort((a, b) => a - b)
      .map((status) => [status, all[status]]),
  );
}

/** The parameters of one request part (`path`, `query` or `header`) as OpenAPI parameter objects. */
function parametersOf(where: "path" | "query" | "header", part: z.ZodObject | undefined): unknown[] {
  if (!part) return [];
  return Object.entries(part.shape).map(([name, schema]) => ({
    name,
    in: where,
    required: where === "path" || !z.safeParse(schema, undefined).success,
    schema: jsonSchema(schema),
  }));
}

/** `example` as documented, once its schema accepts it: the types check its shape, this its formats and values too. */
function checkedExample(where: string, schema: z.ZodType, example: unknown): { example?: unknown } {
  if (example === undefined) return {};
  const parsed = schema.safeParse(example);
  if (!parsed.success) throw new Error(`the example of ${where} does not match its schema: ${describeZodError("example", parsed.error)}`);
  return { example };
}

/** One response object: its JSON schema and example, or its text's content type, or no content. */
function responseObject(where: string, response: ResponseSpec): unknown {
  const { description, schema, contentType, example } = response;
  if (schema) {
    return {
      description,
      content: {
        "application/json": { schema: schema === errorSchema ? ERROR_REF : jsonSchema(schema), ...checkedExample(where, schema, example) },
      },
    };
  }
  if (contentType) return { description, content: { [contentType]: { schema: { type: "string" } } } };
  return { description };
}

/** Builds the OpenAPI 3.1 document of `routes`. */
export function openApiDocument(routes: readonly Route[], info: { version: string }): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z]+)/g, "{$1}");
    const body = r.body && { schema: jsonSchema(r.body), ...checkedExample(`${r.operationId}'s body`, r.body, r.bodyExample) };
    paths[path] ??= {};
    paths[path][r.method] = {
      operationId: r.operationId,
      summary: r.summary,
      tags: [r.tag],
      security: r.auth === "none" ? [] : [{ [`${r.auth}Token`]: [] }],
      parameters: [...parametersOf("path", r.params), ...parametersOf("query", r.query), ...parametersOf("header", r.headers)],
      ...(body ? { requestBody: { required: true, content: { "application/json": body } } } : {}),
      responses: Object.fromEntries(
        Object.entries(answeredResponses(r)).map(([status, response]) => [status, responseObject(`${r.operationId} ${status}`, response)]),
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
        "Vrai scores AI agents from evidence it can verify. " +
        "Every score carries its scoreType (vrai, sdk-derived, platform-network); they are never mixed. " +
        "Errors are always { error: { code, message } }.",
      license: { name: "MIT", identifier: "MIT" },
    },
    // Relative: the server that serves this document at /v1/openapi.json.
    servers: [{ url: "/", description: "this server" }],
    components: {
      schemas: { Error: jsonSchema(errorSchema) },
      securitySchemes: {
        ownerToken: bearer(
          "An owner token from POST /v1/owners (vo_…), or a read-only owner token (vor_…, POST /v1/owner/read-tokens), " +
            "which owner routes that read (GET) take and every other refuses (403 read_only_token): Authorization: Bearer <token>",
        ),
        agentToken: bearer("An agent key from a claim: Authorization: Bearer <agent key>"),
        operatorToken: bearer("A named operator's token (vrai operator add) or OPERATOR_TOKEN: Authorization: Bearer <token>"),
      },
    },
    paths,
  };
}
