/** The pages of the site, rendered from what the service reads. */
import { toRfc3339 } from "../method";
import { InvalidInputError } from "../errors";
import type { Directory } from "../service/directory";
import type { PublishingStatus } from "../service/erc8004-publishing";
import { NotFoundError } from "../service/errors";
import type { OutageRow, ScoreSummary } from "../service/ports";
import { shownFields } from "../service/proofs/registration-file";
import type { Reads, SiteReads } from "../service/reads";
import type { StoredRegistration } from "../service/registration-files";
import { ID_PATTERN } from "../service/secrets";
import {
  renderAgentNotFoundPage,
  renderAgentPage,
  type AgentPageOutage,
  type AgentPageScore,
  type AgentPageSelfDeclared,
  type ScorePanel,
} from "./agent-page";
import { BADGE_HEADERS, renderBadge, type BadgeView } from "./badge";
import type { AgentPageErc8004 } from "./erc8004-section";
import { HISTORY_DAYS, historyDays } from "./history-chart";
import { renderHomePage, type HomePageAgent } from "./home-page";
import { PAGE_HEADERS } from "./layout";
import { renderMethodBadRequestPage, renderMethodPage, type MethodPageOutage } from "./method-page";

/** A rendered page or badge: its status, its headers and its text (HTML or SVG). */
export type Page<S extends 200 | 400 | 404> = { status: S; headers: Readonly<Record<string, string>>; text: string };

export type Pages = {
  home(): Promise<Page<200>>;
  methodPage(query: { cursor?: string }): Promise<Page<200 | 400>>;
  agentPage(id: string): Promise<Page<200 | 404>>;
  badge(id: string): Promise<Page<200 | 404>>;
};

/** Declared windows per page of the method page, and on the home page. */
const METHOD_PAGE_WINDOWS = 20;
const HOME_WINDOWS = 3;
/** Scores whose state the badge keeps in memory (a badge request then parses no JSON). */
const BADGE_STATES_MAX = 100_000;

type BadgeState = "provisional" | "established";

/** Agents of the directory's top on the home page. */
const HOME_TOP_AGENTS = 5;

const methodOutage = (o: OutageRow): MethodPageOutage => ({
  start: toRfc3339(o.start),
  end: o.end === null ? null : toRfc3339(o.end),
  declaredAt: toRfc3339(o.declaredAt),
  reason: o.reason,
});

const outageView = (o: OutageRow): AgentPageOutage => ({
  start: toRfc3339(o.start),
  end: o.end === null ? null : toRfc3339(o.end),
  declared_at: toRfc3339(o.declaredAt),
  reason: o.reason,
});

const scoreLinks = (id: number) => ({ inputs: `/v1/scores/${id}/inputs`, self: `/v1/scores/${id}` });

/** The agent page's ERC-8004 section of an agent's publishing; null when the service gives no feedback. */
function erc8004View(status: PublishingStatus): AgentPageErc8004 | null {
  if (status.target === null) return null;
  const latest = status.feedback[0];
  return {
    enabled: status.enabled,
    reason: status.reason,
    registry: {
      chainId: status.target.chainId,
      reputationRegistry: status.target.registry,
      identityRegistry: status.target.identityRegistry,
    },
    tokenId: latest?.tokenId.toString() ?? null,
    client: latest?.client ?? null,
    standing: status.feedback
      .filter((f) => f.state === "given" && f.revokeAskedAt === null)
      .map((f) => ({
        tag1: f.tag1,
        tag2: f.tag2,
        value: f.value,
        valueDecimals: f.valueDecimals,
        day: f.day,
        feedbackIndex: f.feedbackIndex === null ? null : Number(f.feedbackIndex),
        feedbackURI: f.uri,
      })),
  };
}

/** What the agent says of itself (issue #27), as its page shows it: the image only when https, and then as text. */
const selfDeclaredView = (r: StoredRegistration): AgentPageSelfDeclared => ({
  identity: r.subject,
  uri: r.uri,
  readAt: toRfc3339(r.readAt),
  status: r.status,
  reason: r.reason,
  ...shownFields(r.file),
});

/**
 * The site's pages.
 * @param deps.panels the agent's `sdk-derived` and `platform-network` panels (src/web/score-panels.ts), when the chain is indexed
 */
export function createPages(deps: {
  reads: Pick<Reads, "agentPage" | "latestScore">;
  site: SiteReads;
  directory: Pick<Directory, "page">;
  panels?: (agentId: string) => Promise<ScorePanel[]>;
  /** The site's public origin, for absolute links in the badge snippet (read when a page is rendered). */
  origin: () => string;
  /** The agent's ERC-8004 publishing (issue #27), when the service gives feedback. */
  publishing?: (agentId: string) => Promise<PublishingStatus>;
}): Pages {
  // A stored score never changes (V9), so its state is read from its result once.
  const states = new Map<number, BadgeState>();
  const stateOf = (score: ScoreSummary): BadgeState => {
    let state = states.get(score.id);
    if (state === undefined) {
      state = JSON.parse(score.resultJson).state === "established" ? "established" : "provisional";
      if (states.size >= BADGE_STATES_MAX) states.clear();
      states.set(score.id, state);
    }
    return state;
  };
  const page = <S extends 200 | 400 | 404>(status: S, text: string): Page<S> => ({ status, headers: PAGE_HEADERS, text });
  return {
    async home() {
      const [top, windows] = await Promise.all([
        deps.directory.page({ filter: {}, limit: HOME_TOP_AGENTS }),
        deps.site.outagesPage({ limit: HOME_WINDOWS }),
      ]);
      const agents: HomePageAgent[] = top.agents.map((a) => ({
        id: a.agentId,
        name: a.name,
        total: a.total,
        band: a.band,
        state: a.state,
      }));
      return page(200, renderHomePage({ topAgents: agents, outages: windows.outages.map(methodOutage) }));
    },
    async methodPage(query) {
      try {
        const { outages, nextCursor } = await deps.site.outagesPage({ cursor: query.cursor, limit: METHOD_PAGE_WINDOWS });
        const nextPage = nextCursor === null ? null : `/method?cursor=${encodeURIComponent(nextCursor)}#outages-heading`;
        return page(200, renderMethodPage({ outages: outages.map(methodOutage), nextPage, laterPage: query.cursor !== undefined }));
      } catch (error) {
        if (error instanceof InvalidInputError) return page(400, renderMethodBadRequestPage(error.message));
        throw error;
      }
    },
    async agentPage(id) {
      if (!ID_PATTERN.test(id)) return page(404, renderAgentNotFoundPage({ reason: "invalid", id }));
      const data = await deps.reads.agentPage(id);
      if (data === null) return page(404, renderAgentNotFoundPage({ reason: "unknown", id }));
      if (data === "unclaimed") return page(404, renderAgentNotFoundPage({ reason: "unclaimed", id }));
      const [panels, totals, today, publishing] = await Promise.all([
        deps.panels?.(id) ?? [],
        deps.site.dailyTotals(id, HISTORY_DAYS),
        deps.site.today(data.agent),
        deps.publishing?.(id),
      ]);
      const agent = { id: data.agent.id, name: data.agent.name, claimedAt: toRfc3339(data.agent.claimedAt) };
      const score: AgentPageScore | null = data.score && { id: data.score.id, result: data.score.result, links: scoreLinks(data.score.id) };
      return page(
        200,
        renderAgentPage({
          agent,
          score,
          outages: data.outages.map(outageView),
          panels,
          history: historyDays(totals, data.agent.claimedAt),
          origin: deps.origin(),
          selfDeclared: data.selfDeclared && selfDeclaredView(data.selfDeclared),
          today: { ...today, now: toRfc3339(today.now), firstDailyAt: today.firstDailyAt === null ? null : toRfc3339(today.firstDailyAt) },
          erc8004: publishing && erc8004View(publishing),
        }),
      );
    },
    // From the latest-score read the score route uses (cached by the SQL store), not from the page's query.
    async badge(id) {
      const unknown: Page<404> = { status: 404, headers: BADGE_HEADERS, text: renderBadge({ type: "unknown" }) };
      if (!ID_PATTERN.test(id)) return unknown;
      try {
        const score = await deps.reads.latestScore(id);
        const view: BadgeView = { type: "score", total: score.total, state: stateOf(score) };
        return {
          status: 200,
          headers: { ...BADGE_HEADERS, ETag: `W/"badge-${score.id}-${score.sha256.slice(0, 16)}"` },
          text: renderBadge(view),
        };
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        if (error.code === "agent_not_found" || error.code === "agent_unclaimed") return unknown;
        return { status: 200, headers: BADGE_HEADERS, text: renderBadge({ type: "no-score" }) };
      }
    },
  };
}
