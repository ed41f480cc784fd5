import { z } from "zod";
import { defineEvent } from "../event";

/** What `POST /v1/webhooks/{id}/test` sends: to that endpoint only, whatever events it asked for. */
export const ping = defineEvent({
  type: "ping",
  summary: "A test of one endpoint (POST /v1/webhooks/{id}/test), sent to it only, whatever events it asked for.",
  audience: "owner",
  data: z.object({ webhookId: z.string(), message: z.string() }),
  example: { webhookId: "whk_1c2d3e4f5a6b7c8d", message: "a test of this endpoint, asked for by its owner" },
});
