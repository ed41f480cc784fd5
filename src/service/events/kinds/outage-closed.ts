import { z } from "zod";
import { defineEvent } from "../event";

/** V4.1: an open outage window got its end. */
export const outageClosed = defineEvent({
  type: "outage.closed",
  summary: "An operator closed an open outage window by setting its end (V4.1). Sent to every owner.",
  audience: "every owner",
  data: z.object({ outageId: z.string(), start: z.string(), end: z.string(), closedAt: z.string() }),
  example: {
    outageId: "out_9a8b7c6d5e4f3a2b",
    start: "2026-11-02T08:00:00Z",
    end: "2026-11-02T09:30:00Z",
    closedAt: "2026-11-02T09:31:12Z",
  },
});
