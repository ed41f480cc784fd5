/** The pages of the site, rendered from what the service reads. */
import { toRfc3339 } from "../method";
import type { OutageRow } from "../service/ports";
import type { Reads } from "../service/reads";
import { ID_PATTERN } from "../service/secrets";
import { renderAgentNotFoundPage, renderAgentPage, type AgentPageOutage, type AgentPageScore, type ScorePanel } from "./agent-page";
import { PAGE_HEADERS } from "./layout";

/** A rendered page: its status, its headers and its HTML. */
export type Page = { status: 200 | 404; headers: Readonly<Record<string, string>>; html: string };

export type Pages = { agentPage(id: string): Promise<Page> };

const outageView = (o: OutageRow): AgentPageOutage => ({
  start: toRfc3339(o.start), end: o.end === null ? null : toRfc3339(o.end), declared_at: toRfc3339(o.declaredAt), reason: o.reason,
});

const scoreLinks = (id: number) => ({ inputs: `/v1/scores/${id}/inputs`, self: `/v1/scores/${id}` });

/**
 * The site's pages.
 * @param deps.panels the agent's `sdk-derived` and `platform-network` panels (src/web/score-panels.ts), when the chain is indexed
 */
export function createPages(deps: { reads: Pick<Reads, "agentPage">; panels?: (agentId: string) => Promise<ScorePanel[]> }): Pages {
  const page = (status: 200 | 404, html: string): Page => ({ status, headers: PAGE_HEADERS, html });
  return {
    async agentPage(id) {
      if (!ID_PATTERN.test(id)) return page(404, renderAgentNotFoundPage({ reason: "invalid", id }));
      const data = await deps.reads.agentPage(id);
      if (!data) return page(404, renderAgentNotFoundPage({ reason: "unknown", id }));
      const panels = (await deps.panels?.(id)) ?? [];
      const agent = { id: data.agent.id, name: data.agent.name };
      const score: AgentPageScore | null = data.score && { id: data.score.id, result: data.score.result, links: scoreLinks(data.score.id) };
      return page(200, renderAgentPage({ agent, score, outages: data.outages.map(outageView), panels }));
    },
  };
}
