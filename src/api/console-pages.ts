/** The console's pages of agents, proofs and webhooks (src/api/console-routes.ts) on the console's router, behind its session. */
import type { ConsolePages } from "./console/router";
import { consoleOf } from "./console/session";
import type { ConsoleRoute } from "./console-routes";

/**
 * Registers `routes` on the console's router (mounted at /console): each runs after the router's session check, and a
 * POST after its Origin and CSRF checks and its refusal of a read-only session; it answers a page, or a 303 to one.
 */
export function consolePageModule(routes: readonly ConsoleRoute[]): ConsolePages {
  return (router) => {
    for (const route of routes) {
      router[route.method](route.path.slice("/console".length), async (req, res) => {
        const reply = await route.respond(consoleOf(res), { params: req.params, query: req.query, body: req.body });
        if (reply.status === 303) res.redirect(303, reply.location);
        else res.status(reply.status).type("html").send(reply.text);
      });
    }
  };
}
