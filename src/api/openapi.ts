/** The OpenAPI 3.1 document, generated from the route declarations so it cannot drift from what the server accepts. */
import { z } from "zod";
import type { Route } from "./route";

const jsonSchema = (schema: z.core.$ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" });
  return rest;
};

/** The parameters of one request part (`path`, `query` or `header`) as OpenAPI parameter objects. */
function parametersOf(where: "path" | "query" | "header", part: z.ZodObject | undefined): unknown[] {
  if (!part) return [];
  return Object.entries(part.shape).map(([name, schema]) => ({
    name, in: where, required: where === "path" || !z.safeParse(schema, undefined).success, schema: jsonSchema(schema),
  }));
}

/** Builds the OpenAPI 3.1 document of `routes`. */
export function openApiDocument(routes: readonly Route[], info: { version: string }): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z]+)/g, "{$1}");
    (paths[path] ??= {})[r.method] = {
      summary: r.summary,
      tags: [r.tag],
      security: r.auth === "none" ? [] : [{ [`${r.auth}Token`]: [] }],
      parameters: [...parametersOf("path", r.params), ...parametersOf("query", r.query), ...parametersOf("header", r.headers)],
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(r.body) } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, response]) => [
          status,
          { description: response.description, ...(response.schema ? { content: { "application/json": { schema: jsonSchema(response.schema) } } } : {}) },
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
        operatorToken: bearer("A named operator's token (vrai operator add) or OPERATOR_TOKEN: Authorization: Bearer <token>"),
      },
    },
    paths,
  };
}
