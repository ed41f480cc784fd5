/** `GET /agents/:id`: loads an agent's latest score from the store and serves the agent page. */
import express from "express";
import { dayStart, parseRfc3339, type ScoreResult } from "../method";
import { idSchema } from "../api/routes";
import { outageJson, scoreJson } from "../api/service-routes";
import type { OutageRow, StoreTx } from "../service/ports";
import { renderAgentNotFoundPage, renderAgentPage, type AgentNotFound, type AgentPageView, type ScorePanel } from "./agent-page";
import { PAGE_HEADERS } from "./layout";

/** Windows that touch the score's window, from its first day to `at` (open windows touch everything after their start). */
function outagesOfWindow(outages: readonly OutageRow[], result: ScoreResult): OutageRow[] {
  const from = result.window.length > 0 ? dayStart(result.window[0].day) : parseRfc3339(result.at);
  const to = parseRfc3339(result.at);
  return outages.filter((o) => o.start <= to && (o.end === null || o.end >= from));
}

/**
 * The view of an agent's page, or why there is none.
 * @param read the store's read side
 */
export async function loadAgentPageView(read: StoreTx, id: string, panels: readonly ScorePanel[] = []): Promise<AgentPageView | AgentNotFound> {
  if (!idSchema.safeParse(id).success) return { reason: "invalid", id };
  const agent = await read.getAgent(id);
  if (!agent) return { reason: "unknown", id };
  const row = await read.latestScore(id);
  if (!row) return { agent: { id: agent.id, name: agent.name }, score: null, outages: [], panels };
  const result = row.result as ScoreResult;
  const outages = outagesOfWindow(await read.listOutages(), result).map(outageJson);
  return { agent: { id: agent.id, name: agent.name }, score: { id: row.id, result, links: scoreJson(row).links }, outages, panels };
}

/**
 * The agent page router: `GET /agents/:id` as HTML, and a 404 HTML page for an unknown or invalid id.
 * @param options.panels the agent's `sdk-derived` and `platform-network` panels (src/indexer/panels.ts)
 * @example app.use(agentPageRouter(service.store.read))
 */
export function agentPageRouter(read: StoreTx, options: { panels?: (agentId: string) => Promise<ScorePanel[]> } = {}): express.Router {
  const router = express.Router();
  router.get("/agents/:id", async (req, res, next) => {
    try {
      const panels = options.panels && idSchema.safeParse(req.params.id).success ? await options.panels(req.params.id) : [];
      const view = await loadAgentPageView(read, req.params.id, panels);
      res.set(PAGE_HEADERS);
      if ("reason" in view) res.status(404).send(renderAgentNotFoundPage(view));
      else res.status(200).send(renderAgentPage(view));
    } catch (error) {
      next(error);
    }
  });
  return router;
}
