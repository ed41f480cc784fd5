/**
 * Owner credentials through the API (issue #29): read-only owner tokens (created, listed, revoked) and the rotation
 * of the full owner token. A read-only token may list them and change nothing (src/api/express.ts refuses its writes).
 */
import { z } from "zod";
import { toRfc3339 } from "../method";
import type { OwnerTokens, ReadTokenView } from "../service/owner-tokens";
import { defineRoute, errorResponse as e, idSchema, type Route } from "./route";

const readToken = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.string(),
  /** When it was revoked; null while it works. */
  revokedAt: z.string().nullable(),
});

const example = { id: "tok_3f9c0d1e2b4a5968", name: "dashboard", createdAt: "2026-11-02T10:00:00Z", revokedAt: null };

const readTokenJson = (t: ReadTokenView): z.input<typeof readToken> => ({
  id: t.id,
  name: t.name,
  createdAt: toRfc3339(t.createdAt),
  revokedAt: t.revokedAt === null ? null : toRfc3339(t.revokedAt),
});

/** What a name of a read-only token may be: what its owner calls it, to tell it from the others. */
export const readTokenName = z.string().trim().min(1).max(100);

/** The routes of the owner's tokens. */
export function ownerTokenRoutes(tokens: OwnerTokens): Route[] {
  return [
    defineRoute({
      method: "post",
      path: "/v1/owner/read-tokens",
      operationId: "createReadToken",
      tag: "owners",
      auth: "owner",
      summary:
        "A read-only owner token (vor_…), returned once: it may call every owner route that reads (GET) and is refused every other " +
        "(403 read_only_token). Only its hash is stored.",
      body: z.object({ name: readTokenName }).strict(),
      bodyExample: { name: "dashboard" },
      responses: {
        201: {
          description: "created",
          schema: readToken.extend({ token: z.string() }),
          example: { ...example, token: "vor_tok_3f9c0d1e2b4a5968.r_…" },
        },
        409: e("limit_reached: the owner has 20 read-only tokens not revoked"),
      },
    }).handle(async ({ ownerId, body }) => {
      const created = await tokens.createReadToken(ownerId, body.name);
      return { status: 201, body: { ...readTokenJson(created), token: created.token } };
    }),
    defineRoute({
      method: "get",
      path: "/v1/owner/read-tokens",
      operationId: "listReadTokens",
      tag: "owners",
      auth: "owner",
      summary: "The owner's read-only tokens, revoked ones too, oldest first (never the tokens themselves).",
      responses: { 200: { description: "ok", schema: z.object({ tokens: z.array(readToken) }), example: { tokens: [example] } } },
    }).handle(async ({ ownerId }) => ({ status: 200, body: { tokens: (await tokens.listReadTokens(ownerId)).map(readTokenJson) } })),
    defineRoute({
      method: "post",
      path: "/v1/owner/read-tokens/:id/revoke",
      operationId: "revokeReadToken",
      tag: "owners",
      auth: "owner",
      summary: "Revokes a read-only token: it stops at once, and so do the console sessions signed in with it.",
      params: z.object({ id: idSchema }),
      body: z.object({}).strict(),
      responses: {
        200: {
          description: "revoked: the token as it is now",
          schema: readToken,
          example: { ...example, revokedAt: "2026-11-03T08:00:00Z" },
        },
        404: e("no read-only token of yours by that id that is not revoked already"),
      },
    }).handle(async ({ ownerId, params }) => ({ status: 200, body: readTokenJson(await tokens.revokeReadToken(ownerId, params.id)) })),
    defineRoute({
      method: "post",
      path: "/v1/owner/token/rotate",
      operationId: "rotateOwnerToken",
      tag: "owners",
      auth: "owner",
      summary:
        "A new owner token (vo_…), returned once: the one that called stops at once, and so do the console sessions signed in with an " +
        "owner token. Read-only tokens are not changed.",
      body: z.object({}).strict(),
      responses: {
        200: {
          description: "rotated",
          schema: z.object({ ownerId: z.string(), token: z.string() }),
          example: { ownerId: "own_3f9c0d1e2b4a5968", token: "vo_own_3f9c0d1e2b4a5968.t_…" },
        },
      },
    }).handle(async ({ ownerId }) => ({ status: 200, body: { ownerId, ...(await tokens.rotateOwnerToken(ownerId)) } })),
  ];
}
