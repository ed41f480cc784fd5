/** The pages of the site, rendered from what the service reads. */
import { toRfc3339 } from "../method";
import { NotFoundError } from "../service/errors";
import type { OutageRow } from "../service/ports";
import type { Reads } from "../service/reads";
import { ID_PATTERN } from "../service/secrets";
import { renderAgentNotFoundPage, renderAgentPage, type AgentPageOutage, type AgentPageScore, type ScorePanel } from "./agent-page";
import { BADGE_HEADERS, renderBadge, type BadgeView } from "./badge";
import { PAGE_HEADERS } from "./layout";

/** A rendered page or badge: its status, its headers and its text (HTML or SVG). */
export type Page = { status: 200 | 404; headers: Readonly<Record<string, string>>; text: string };

export type Pages = { agentPage(id: string): Promise<Page>; badge(id: string): Promise<Page> };

const outageView = (o: OutageRow): AgentPageOutage => ({
  start: toRfc3339(o.start), end: o.end === null ? null : toRfc3339(o.end), declared_at: toRfc3339(o.declaredAt), reason: o.reason,
});

const scoreLinks = (id: number) => ({ inputs: `/v1/scores/${id}/inputs`, self: `/v1/scores/${id}` });

/**
 * The site's pages.
 * @param deps.panels the agent's `sdk-derived` and `platform-network` panels (src/web/score-panels.ts), when the chain is indexed
 */
export function createPages(deps: { reads: Pick<Reads, "agentPage" | "latestScore">; panels?: (agentId: string) => Promise<ScorePanel[]> }): Pages {
  const page = (status: 200 | 404, text: string): Page => ({ status, headers: PAGE_HEADERS, text });
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
    // From the latest-score read the score route uses (cached by the SQL store), not from the page's query.
    async badge(id) {
      const unknown: Page = { status: 404, headers: BADGE_HEADERS, text: renderBadge({ type: "unknown" }) };
      if (!ID_PATTERN.test(id)) return unknown;
      try {
        const score = await deps.reads.latestScore(id);
        const { state } = JSON.parse(score.resultJson);
        const view: BadgeView = { type: "score", total: score.total, state: state === "established" ? "established" : "provisional" };
        return { status: 200, headers: { ...BADGE_HEADERS, ETag: `W/"badge-${score.id}-${score.sha256.slice(0, 16)}"` }, text: renderBadge(view) };
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        if (error.code === "agent_not_found") return unknown;
        return { status: 200, headers: BADGE_HEADERS, text: renderBadge({ type: "no-score" }) };
      }
    },
  };
}
