/** The server-rendered pages, declared like the API's routes but outside its OpenAPI document. */
import { z } from "zod";
import type { DirectoryRequest } from "../service/directory";
import { directoryQuery, directoryRequestOf } from "./directory-routes";
import { defineRoute, describeZodError, type Route } from "./route";

/** A rendered page or badge: its status, its headers (content type, security policy, caching) and its text (HTML or SVG). */
export type Page<S extends 200 | 400 | 404> = { status: S; headers: Readonly<Record<string, string>>; text: string };

/** What renders the pages (src/web/pages.ts). */
export type Pages = {
  /** The home page: what Vrai measures, the score types, a search, the directory's top, the latest windows. */
  home(): Promise<Page<200>>;
  /** The method page with one page of the declared windows, or a 400 page for a cursor no page gave. */
  methodPage(query: { cursor?: string }): Promise<Page<200 | 400>>;
  /** The agent page (V10), or a 404 page for an id that names no agent or cannot be one. */
  agentPage(id: string): Promise<Page<200 | 404>>;
  /** The SVG badge of an agent's latest score, or a neutral "unknown" badge with a 404. */
  badge(id: string): Promise<Page<200 | 404>>;
};

/** A GET route about one agent, for any id: what it renders says when the id cannot be one. */
function agentRoute(
  spec: { path: string; operationId: string; summary: string; contentType: string; found: string; missing: string },
  render: (id: string) => Promise<Page<200 | 404>>,
): Route {
  return defineRoute({
    method: "get",
    path: spec.path,
    operationId: spec.operationId,
    tag: "pages",
    auth: "none",
    summary: spec.summary,
    params: z.object({ id: z.string() }),
    responses: {
      200: { description: spec.found, contentType: spec.contentType },
      404: { description: spec.missing, contentType: spec.contentType },
    },
  }).handle(({ params }) => render(params.id));
}

/** The routes of the pages. */
export function pageRoutes(pages: Pages): Route[] {
  const html = "text/html";
  return [
    defineRoute({
      method: "get",
      path: "/",
      operationId: "homePage",
      tag: "pages",
      auth: "none",
      summary:
        "The home page: what Vrai measures and what it does not, the three score types, a search, the top agents, the latest declared windows.",
      responses: { 200: { description: "the home page", contentType: html } },
    }).handle(() => pages.home()),
    defineRoute({
      method: "get",
      path: "/method",
      operationId: "methodPage",
      tag: "pages",
      auth: "none",
      summary: "The method page: every version, the exact rules, how to verify, and every declared window (V4.4), newest first, by cursor.",
      query: z.object({ cursor: z.string().optional() }),
      responses: {
        200: { description: "the method page", contentType: html },
        400: { description: "a cursor no page gave", contentType: html },
      },
    }).handle(({ query }) => pages.methodPage(query)),
    agentRoute(
      {
        path: "/agents/:id/badge.svg",
        operationId: "agentBadge",
        contentType: "image/svg+xml",
        found: "the badge",
        missing: "no such agent, or one its owner unclaimed: a neutral unknown badge",
        summary: "The SVG badge of an agent's latest Vrai score (total and state), with an ETag; 304 for If-None-Match.",
      },
      pages.badge,
    ),
    agentRoute(
      {
        path: "/agents/:id",
        operationId: "agentPage",
        contentType: html,
        found: "the agent page",
        missing: "no such agent, or one its owner unclaimed (a page saying so)",
        summary: "The agent page: the latest Vrai score, its window, and the other score types apart.",
      },
      pages.agentPage,
    ),
  ];
}

/** What renders the directory page (src/web/directory-page.ts). */
export type DirectoryPages = {
  /** The page a valid request asks for, or a 400 page naming the parameter that is not valid. */
  directoryPage(
    request: DirectoryRequest | { invalid: string },
  ): Promise<{ status: 200 | 400; headers: Readonly<Record<string, string>>; text: string }>;
};

/** The directory page: the JSON route's query (src/api/directory-routes.ts), a bad parameter answered with a 400 page. */
export function directoryPageRoutes(pages: DirectoryPages): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/agents",
      operationId: "directoryPage",
      tag: "pages",
      auth: "none",
      summary:
        "The directory: claimed agents ranked by the total of their latest Vrai score, with band and state filters, a name search and pages by cursor.",
      // Any query: the page itself names a parameter that is not valid.
      query: z.looseObject({}),
      responses: {
        200: { description: "the directory page", contentType: "text/html" },
        400: { description: "a parameter is not valid", contentType: "text/html" },
      },
    }).handle(async ({ query }) => {
      const parsed = directoryQuery.safeParse(query);
      return pages.directoryPage(parsed.success ? directoryRequestOf(parsed.data) : { invalid: describeZodError("query", parsed.error) });
    }),
  ];
}
