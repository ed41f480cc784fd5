/**
 * The service's health as its daily cycle sees it (issue #30): whether every day's score root is anchored, and if not,
 * since which day. Answered 200 either way: the API serves while the chain is away (a balancer checks `GET /v1/method`);
 * a monitor reads `status`, or the metrics' `vrai_anchor_*` gauges.
 */
import { z } from "zod";
import { toRfc3339 } from "../method";
import type { Anchoring } from "../service/anchoring";
import { defineRoute, errorResponse, type Route } from "./route";

const healthResponse = z.object({
  status: z.enum(["ok", "behind"]).describe("behind while a day's score root is not anchored on chain"),
  anchoring: z.object({
    writing: z.boolean().describe("whether this instance anchors (it has ANCHOR_PRIVATE_KEY); another instance may"),
    unanchoredDays: z.number().int().describe("days whose scores' tree is stored and whose root is not anchored yet"),
    oldestUnanchoredDay: z.string().nullable().describe("the oldest of them (YYYY-MM-DD); null when every day is anchored"),
    oldestBuiltAt: z.string().nullable().describe("when the oldest one's tree was built, right after its daily recompute (RFC 3339)"),
    failingSince: z
      .string()
      .nullable()
      .describe("since when this instance's anchoring attempts fail (RFC 3339; its log says why); null while they succeed"),
  }),
});

/** How long a balancer waits before it asks a warming server again (`Retry-After` of the 503). */
const READY_RETRY_AFTER_S = 1;

/**
 * The health route, and the readiness route a balancer checks (issue #30): 503 `warming_up` until the server has filled
 * its latest-score cache and warmed its request path (src/app/warm-up.ts), then 200 for good. Answered from memory: a
 * check that read the database would take every instance out at once while the database is away.
 */
export function healthRoutes(anchoring: Pick<Anchoring, "status">, ready: () => boolean): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/ready",
      operationId: "getReady",
      tag: "health",
      auth: "none",
      summary:
        "Whether this instance takes traffic: 503 while it warms up after a start (its latest-score cache filled, its request path " +
        "run), then 200. A balancer's health check; answered from memory.",
      responses: {
        200: { description: "ready", schema: z.object({ status: z.literal("ready") }), example: { status: "ready" } },
        503: errorResponse("warming_up: the instance is filling its cache and warming its code; ask again after Retry-After"),
      },
    }).handle(async () =>
      ready()
        ? { status: 200, body: { status: "ready" } }
        : {
            status: 503,
            headers: { "Retry-After": String(READY_RETRY_AFTER_S) },
            body: {
              error: {
                code: "warming_up",
                message: "this instance is warming up after its start: send its traffic to another one for now",
              },
            },
          },
    ),
    defineRoute({
      method: "get",
      path: "/v1/health",
      operationId: "getHealth",
      tag: "health",
      auth: "none",
      summary:
        "Whether the daily cycle is behind: days whose score root is not anchored on chain yet (the oldest first), and since when this " +
        "instance's anchoring attempts fail. Always 200: the API serves while the chain is unreachable.",
      responses: {
        200: {
          description: "ok, or behind",
          schema: healthResponse,
          example: {
            status: "behind",
            anchoring: {
              writing: true,
              unanchoredDays: 1,
              oldestUnanchoredDay: "2026-11-02",
              oldestBuiltAt: "2026-11-02T00:00:41Z",
              failingSince: "2026-11-02T00:00:42Z",
            },
          },
        },
      },
    }).handle(async () => {
      const now = await anchoring.status();
      const at = (t: number | null) => (t === null ? null : toRfc3339(t));
      return {
        status: 200,
        body: {
          status: now.unanchoredDays > 0 ? "behind" : "ok",
          anchoring: {
            writing: now.writing,
            unanchoredDays: now.unanchoredDays,
            oldestUnanchoredDay: now.oldestUnanchoredDay,
            oldestBuiltAt: at(now.oldestBuiltAt),
            failingSince: at(now.failingSince),
          },
        },
      };
    }),
  ];
}
