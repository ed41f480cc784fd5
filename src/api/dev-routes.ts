/** The development clock's routes: served by `vrai dev` only, never by `vrai serve` (issue #31). */
import { z } from "zod";
import { MAX_DEV_DAYS, type DevClock } from "../service/dev-clock";
import { defineRoute, errorResponse as e, type Route } from "./route";

const stateResponse = z.object({
  now: z.string().describe("the service's time (RFC 3339), which check-ins, scores and the schedule follow"),
  offsetDays: z.number().int().describe("whole days ahead of the machine's clock"),
  nextDailyAt: z.string().describe("the next 00:00 UTC: the next daily recompute (V9)"),
});
const dayResponse = z.object({
  day: z.string(),
  scores: z.number().int().describe("daily scores of the day (0: no agent was claimed by its 00:00)"),
  anchor: z
    .union([
      z.object({ status: z.literal("mined"), txHash: z.string(), blockNumber: z.number().int() }),
      z.object({ status: z.enum(["pending", "off"]).describe("pending: sent or being retried; off: no anchoring configured") }),
    ])
    .nullable()
    .describe("null when the day had no score to anchor"),
});
const example = { now: "2026-11-03T10:00:00Z", offsetDays: 1, nextDailyAt: "2026-11-04T00:00:00Z" };

/** `GET /v1/dev/clock` and `POST /v1/dev/clock/advance`, over `devClock`. */
export function devRoutes(devClock: DevClock): Route[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/dev/clock",
      operationId: "getDevClock",
      tag: "development",
      auth: "none",
      summary: "vrai dev only: where the development clock stands.",
      responses: { 200: { description: "ok", schema: stateResponse, example } },
    }).handle(async () => ({ status: 200, body: devClock.state() })),
    defineRoute({
      method: "post",
      path: "/v1/dev/clock/advance",
      operationId: "advanceDevClock",
      tag: "development",
      auth: "operator",
      summary:
        "vrai dev only: moves the service's clock and the local chain's time forward by whole days, one at a time, each day's daily " +
        "recompute (V9) and anchoring run as they would have run; answers once they have.",
      body: z.object({ days: z.number().int().min(1).max(MAX_DEV_DAYS) }).strict(),
      bodyExample: { days: 1 },
      responses: {
        200: {
          description: "moved",
          schema: stateResponse.extend({ days: z.array(dayResponse) }),
          example: {
            ...example,
            days: [{ day: "2026-11-03", scores: 1, anchor: { status: "mined", txHash: `0x${"ab".repeat(32)}`, blockNumber: 12 } }],
          },
        },
        400: e("days is not a whole number 1-60"),
        401: e("not an operator"),
      },
    }).handle(async ({ body }) => ({ status: 200, body: await devClock.advance(body.days) })),
  ];
}
