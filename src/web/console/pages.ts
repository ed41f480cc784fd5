/** The console's pages (issue #29), each read from the services the API reads and rendered by its module. */
import type { OwnerAgents } from "../../service/owner-agents";
import type { ProofChecks } from "../../service/proof-checks";
import type { Reads } from "../../service/reads";
import type { Webhooks } from "../../service/webhooks/webhooks";
import { html } from "../html";
import { renderAgentKeyPage, renderAgentPage, renderAgentsPage, renderUnclaimPage, type WebhookSummary } from "./agents-page";
import type { RenderedPage, ConsoleViewer, Notice } from "./common";
import { consolePage } from "./document";
import { offeredKindViews, renderChallengePage, renderProofsPage } from "./proofs-page";
import { renderWebhookPage, renderWebhooksPage, type WebhookFormValues } from "./webhooks-page";

/** Agents on a page of the agents list. */
export const CONSOLE_AGENTS_PAGE = 20;
/** Endpoints on a page of the webhooks list, and tries on a page of an endpoint's log. */
export const CONSOLE_ROWS_PAGE = 20;
/** Endpoints read for the summary of where events go (MAX_WEBHOOKS_PER_OWNER's default: every one, as configured by default). */
const SUMMARY_ENDPOINTS = 100;

/** The statuses a console page has. */
type Status = 200 | 201 | 400 | 403 | 404 | 409 | 422 | 503;
type Shown = { status?: Status; notice?: Notice };

/** What the console's routes render (src/api/console-routes.ts's `ManagePages`). */
export type ManagePages = {
  agents(viewer: ConsoleViewer, query: { cursor?: string; unclaimed?: string }, shown?: Shown): Promise<RenderedPage<Status>>;
  agent(viewer: ConsoleViewer, agentId: string, shown?: Shown): Promise<RenderedPage<Status>>;
  unclaim(viewer: ConsoleViewer, agentId: string, shown?: Shown): Promise<RenderedPage<Status>>;
  agentKey(
    viewer: ConsoleViewer,
    key: { agentId: string; agentKey: string; rotated: boolean },
    status: 200 | 201,
  ): Promise<RenderedPage<Status>>;
  proofs(viewer: ConsoleViewer, shown?: Shown): Promise<RenderedPage<Status>>;
  challenge(
    viewer: ConsoleViewer,
    challengeId: string,
    shown?: Shown & { values?: Readonly<Record<string, string>> },
  ): Promise<RenderedPage<Status>>;
  webhooks(
    viewer: ConsoleViewer,
    query: { cursor?: string },
    shown?: Shown & { values?: WebhookFormValues },
  ): Promise<RenderedPage<Status>>;
  webhook(
    viewer: ConsoleViewer,
    id: string,
    query: { cursor?: string },
    shown?: Shown & { secret?: string },
  ): Promise<RenderedPage<Status>>;
  failure(viewer: ConsoleViewer, status: Status, message: string): RenderedPage<Status>;
};

/**
 * The console's pages over the services.
 * @param deps.origin the service's public URL, for the commands a key page shows
 */
export function createManagePages(deps: {
  ownerAgents: OwnerAgents;
  reads: Pick<Reads, "agent">;
  proofs: Pick<ProofChecks, "challenge">;
  webhooks: Webhooks;
  origin: () => string;
}): ManagePages {
  const { ownerAgents, webhooks } = deps;
  const kinds = offeredKindViews();

  async function webhookSummary(ownerId: string): Promise<WebhookSummary> {
    const { items } = await webhooks.list(ownerId, { limit: SUMMARY_ENDPOINTS });
    return {
      endpoints: items.length,
      enabled: items.filter((w) => w.disabledAt === null).length,
      failing: items.filter((w) => w.disabledAt === null && w.failingSince !== null).length,
    };
  }

  return {
    async agents(viewer, query, shown = {}) {
      const [page, summary, unclaimed] = await Promise.all([
        ownerAgents.page(viewer.ownerId, { cursor: query.cursor, limit: CONSOLE_AGENTS_PAGE }),
        webhookSummary(viewer.ownerId),
        // Said only when true: a link cannot make the page say an agent was unclaimed.
        query.unclaimed === undefined ? false : ownerAgents.unclaimedBy(viewer.ownerId, query.unclaimed),
      ]);
      const notice: Notice | undefined = unclaimed
        ? {
            kind: "done",
            text:
              `Agent ${query.unclaimed} is unclaimed: its key no longer works, its proofs of one agent were removed, ` +
              "and it has no score. Any owner may claim it again, with a new key.",
          }
        : undefined;
      return renderAgentsPage(shown.status ?? 200, {
        viewer,
        agents: page.items,
        nextCursor: page.nextCursor,
        later: query.cursor !== undefined,
        webhooks: summary,
        notice: shown.notice ?? notice,
      });
    },
    async agent(viewer, agentId, shown = {}) {
      const [overview, summary] = await Promise.all([ownerAgents.one(viewer.ownerId, agentId), webhookSummary(viewer.ownerId)]);
      return renderAgentPage(shown.status ?? 200, { viewer, overview, webhooks: summary, kinds, notice: shown.notice });
    },
    async unclaim(viewer, agentId, shown = {}) {
      const overview = await ownerAgents.one(viewer.ownerId, agentId);
      return renderUnclaimPage(shown.status ?? 200, { viewer, overview, notice: shown.notice });
    },
    async agentKey(viewer, key, status) {
      const agent = await deps.reads.agent(key.agentId);
      return renderAgentKeyPage(status, { viewer, ...key, name: agent.name, origin: deps.origin() });
    },
    async proofs(viewer, shown = {}) {
      const proofs = await ownerAgents.ownerProofs(viewer.ownerId);
      return renderProofsPage(shown.status ?? 200, { viewer, proofs, kinds, notice: shown.notice });
    },
    async challenge(viewer, challengeId, shown = {}) {
      const challenge = await deps.proofs.challenge(viewer.ownerId, challengeId);
      return renderChallengePage(shown.status ?? 200, { viewer, challenge, values: shown.values, notice: shown.notice });
    },
    async webhooks(viewer, query, shown = {}) {
      const page = await webhooks.list(viewer.ownerId, { cursor: query.cursor, limit: CONSOLE_ROWS_PAGE });
      return renderWebhooksPage(shown.status ?? 200, {
        viewer,
        endpoints: page.items,
        nextCursor: page.nextCursor,
        later: query.cursor !== undefined,
        values: shown.values,
        notice: shown.notice,
      });
    },
    async webhook(viewer, id, query, shown = {}) {
      const [endpoint, log] = await Promise.all([
        webhooks.get(viewer.ownerId, id),
        webhooks.deliveries(viewer.ownerId, id, { cursor: query.cursor, limit: CONSOLE_ROWS_PAGE }),
      ]);
      return renderWebhookPage(shown.status ?? 200, {
        viewer,
        endpoint,
        attempts: log.items,
        nextCursor: log.nextCursor,
        later: query.cursor !== undefined,
        secret: shown.secret,
        notice: shown.notice,
      });
    },
    failure(viewer, status, message) {
      const main = html`<header><h1>This page cannot be shown</h1></header>
<p><a href="/console/agents">Your agents</a></p>`;
      return consolePage(status, { title: "Not shown", main, viewer, notice: { kind: "error", text: message } });
    },
  };
}
