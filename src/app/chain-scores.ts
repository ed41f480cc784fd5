/** The chain's scores in the service: their use-cases over the indexer's tables, their routes and the agent page's panels. */
import { chainScoreRoutes } from "../api/chain-score-routes";
import type { Route } from "../api/route";
import type { Accounts } from "../service/accounts";
import { createChainScores } from "../service/chain-scores";
import type { Clock } from "../service/clock";
import { createDerivedScores } from "../service/derived-scores";
import type { StoreTx } from "../service/ports";
import { createChainStore } from "../store/chain-store";
import type { Db } from "../store/db";
import type { ScorePanel } from "../web/agent-page";
import { renderScorePanels } from "../web/score-panels";

/** The routes of the chain's scores, and the panels they add to the agent page. */
export type ChainScoreParts = { routes: Route[]; panels(agentId: string): Promise<ScorePanel[]> };

/** The chain's scores over the indexer's tables in `db`. */
export function chainScoreParts(deps: { db: Db; accounts: Accounts; agents: Pick<StoreTx, "getAgent">; clock: Clock }): ChainScoreParts {
  const store = createChainStore(deps.db);
  const chainScores = createChainScores({ store, derivedScores: createDerivedScores({ store }), agents: deps.agents, clock: deps.clock });
  return {
    routes: chainScoreRoutes({ chainScores, accounts: deps.accounts }),
    panels: async (agentId) => renderScorePanels(await chainScores.agentPanels(agentId)),
  };
}
