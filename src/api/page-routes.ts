/** The server-rendered pages, declared like the API's routes but outside its OpenAPI document. */
import { z } from "zod";
import { defineRoute, type Route } from "./route";

/** A rendered page: its status, its headers (content type and security policy) and its HTML. */
export type Page = { status: 200 | 404; headers: Readonly<Record<string, string>>; html: string };

/** What renders the pages (src/web/pages.ts). */
export type Pages = {
  /** The agent page (V10), or a 404 page for an id that names no agent or cannot be one. */
  agentPage(id: string): Promise<Page>;
};

/** The routes of the pages. */
export function pageRoutes(pages: Pages): Route[] {
  return [
    defineRoute({
      method: "get", path: "/agents/:id", tag: "pages", auth: "none",
      summary: "The agent page: the latest Vrai score, its window, and the other score types apart.",
      // Any id: the page itself says when it cannot be one.
      params: z.object({ id: z.string() }),
      responses: { 200: { description: "the agent page", contentType: "text/html" }, 404: { description: "no such agent", contentType: "text/html" } },
    }).handle(async ({ params }) => {
      const page = await pages.agentPage(params.id);
      return { status: page.status, headers: page.headers, text: page.html };
    }),
  ];
}
