/** The directory of agents as JSON: `GET /v1/agents`, ranked by the total of the latest score (V8). */
import { z } from "zod";
import { BANDS, toRfc3339, type Band } from "../method";
import {
  decodeCursor,
  DIRECTORY_LIMIT,
  DIRECTORY_QUERY_MAX,
  DIRECTORY_STATES,
  type Directory,
  type DirectoryEntry,
  type DirectoryFilter,
  type DirectoryRequest,
  type DirectoryState,
} from "../service/directory";
import { defineRoute, errorResponse as e, type Route } from "./route";

/** An empty parameter (`band=` from a form left on "any") means the parameter is absent. */
const optionalEnum = <const T extends readonly [string, ...string[]]>(values: T) =>
  z
    .enum(["", ...values])
    .optional()
    .transform((v): T[number] | undefined => (v === "" ? undefined : v));

/**
 * The directory's query, for the JSON route and the page alike: sort (only `total`), band (a V8
 * range), state, a search (name substring in any case, or an exact agent id), a cursor from an
 * earlier answer, and the page size.
 */
export const directoryQuery = z
  .object({
    sort: z.enum(["total"]).default("total"),
    band: optionalEnum(BANDS),
    state: optionalEnum(DIRECTORY_STATES),
    q: z
      .string()
      .max(DIRECTORY_QUERY_MAX)
      .optional()
      .transform((q) => (q?.trim() ? q.trim() : undefined)),
    cursor: z
      .string()
      .max(200)
      .optional()
      .transform((cursor) => cursor || undefined),
    limit: z.coerce.number().int().min(DIRECTORY_LIMIT.min).max(DIRECTORY_LIMIT.max).default(DIRECTORY_LIMIT.default),
  })
  .superRefine((query, context) => {
    // A cursor belongs to the directory under one filter (issue #33): another filter's, or another list's, is refused.
    if (query.cursor !== undefined && decodeCursor(query.cursor, filterOf(query)) === null) {
      context.addIssue({
        code: "custom",
        path: ["cursor"],
        message: "not a cursor of this directory and filter: use nextCursor or prevCursor of an earlier answer",
      });
    }
  });

/** The filter a parsed query names. */
const filterOf = (query: { band?: Band; state?: DirectoryState; q?: string }): DirectoryFilter => ({
  band: query.band,
  state: query.state,
  q: query.q,
});

export type DirectoryQuery = z.output<typeof directoryQuery>;

const entryResponse = z.object({
  agentId: z.string(),
  name: z.string().nullable(),
  registeredName: z
    .string()
    .nullable()
    .describe(
      "the name in the agent's ERC-8004 registration file: self-declared, not verified by Vrai (GET /v1/agents/{id}, selfDeclared)",
    ),
  scoreType: z.literal("vrai"),
  total: z.number().int(),
  band: z.string(),
  state: z.string(),
  at: z.string(),
  links: z.object({ score: z.string(), page: z.string() }),
});
const directoryResponse = z.object({
  agents: z.array(entryResponse),
  nextCursor: z.string().nullable(),
  prevCursor: z.string().nullable(),
});

const directoryExample: z.input<typeof directoryResponse> = {
  agents: [
    {
      agentId: "agt_3f9c0d1e2b4a5968",
      name: "research-agent",
      registeredName: "Research Agent",
      scoreType: "vrai",
      total: 410,
      band: "400-599",
      state: "provisional",
      at: "2026-11-02T10:00:00Z",
      links: { score: "/v1/agents/agt_3f9c0d1e2b4a5968/score", page: "/agents/agt_3f9c0d1e2b4a5968" },
    },
  ],
  nextCursor: null,
  prevCursor: null,
};

const entryJson = (a: DirectoryEntry): z.input<typeof entryResponse> => ({
  agentId: a.agentId,
  name: a.name,
  registeredName: a.registeredName,
  scoreType: "vrai",
  total: a.total,
  band: a.band,
  state: a.state,
  at: toRfc3339(a.at),
  links: { score: `/v1/agents/${a.agentId}/score`, page: `/agents/${a.agentId}` },
});

/** What a parsed query asks the directory for. */
export function directoryRequestOf(query: DirectoryQuery): DirectoryRequest {
  const filter = filterOf(query);
  // The query's check made sure a cursor names a position of this filter.
  return { filter, cursor: query.cursor === undefined ? undefined : (decodeCursor(query.cursor, filter) ?? undefined), limit: query.limit };
}

/** The directory's JSON route. */
export function directoryRoutes(directory: Directory): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/agents",
      operationId: "listAgents",
      tag: "directory",
      auth: "none",
      cors: "public",
      summary:
        "Claimed agents ranked by the total of their latest Vrai score (V8: active components only), ties by agent id; " +
        "filter by band and state, search names (any case) or an exact agent id; keyset pages through nextCursor and prevCursor.",
      query: directoryQuery,
      responses: {
        200: { description: "one page of the directory", schema: directoryResponse, example: directoryExample },
        400: e("a parameter is not valid (named in the message)"),
      },
    }).handle(async ({ query }) => {
      const page = await directory.page(directoryRequestOf(query));
      return { status: 200, body: { agents: page.agents.map(entryJson), nextCursor: page.nextCursor, prevCursor: page.prevCursor } };
    }),
  ];
}
