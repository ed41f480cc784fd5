import type { Logger } from "pino";
import type { MethodVersion } from "../method";
import type { Clock } from "./clock";
import { createAccounts, type Accounts } from "./accounts";
import { createCheckins, type Checkins } from "./checkins";
import { createIdentity, type Identity } from "./identity";
import type { OwnerLimits } from "./limits";
import { createOperator, type Operator } from "./operator";
import { createOwnerRecomputes, type OwnerRecomputes } from "./owner-recomputes";
import { createOwnerTokens, type OwnerTokens } from "./owner-tokens";
import type { Store } from "./ports";
import type { PageScorer } from "./score-rows";
import { createScoring, type Scoring } from "./scoring";

/** The service's use-cases on one store and one clock. */
export type VraiService = {
  store: Store;
  clock: Clock;
  scoring: Scoring;
  accounts: Accounts;
  /** Owner credentials: the full token's rotation and read-only tokens (issue #29). */
  ownerTokens: OwnerTokens;
  checkins: Checkins;
  operator: Operator;
  identity: Identity;
  ownerRecomputes: OwnerRecomputes;
};

/**
 * The service's rules wired together on one store and one clock; the HTTP API and `vrai replay`
 * both run exactly this.
 * @param deps.busy whether the service is busy now (operator switch or overload, V3.3)
 * @param deps.limits what one owner may keep (none: no limit, as in `vrai replay`)
 */
export function createVraiService(deps: {
  store: Store;
  clock: Clock;
  busy: () => boolean;
  onBusyChanged?: (on: boolean) => void;
  method?: MethodVersion;
  limits?: OwnerLimits;
  logger?: Logger;
  /** Threads for the daily recompute's pages (src/app/score-workers.ts); none: the calling thread scores them. */
  pageScorers?: (method: MethodVersion) => PageScorer;
}): VraiService {
  const { store, clock } = deps;
  const scoring = createScoring({ store, clock, method: deps.method, pageScorers: deps.pageScorers });
  const accounts = createAccounts({ store, clock, onClaimed: scoring.onChange, limits: deps.limits });
  const ownerTokens = createOwnerTokens({ store, clock, accounts });
  const checkins = createCheckins({ store, clock, busy: deps.busy });
  const operator = createOperator({ store, clock, onPenaltyChanged: scoring.onChange, onBusyChanged: deps.onBusyChanged });
  const ownerRecomputes = createOwnerRecomputes({ store, clock, scoring, logger: deps.logger });
  const identity = createIdentity({ store, clock, onChanged: scoring.onChange, onOwnerRecomputeRequested: ownerRecomputes.wake });
  return { store, clock, scoring, accounts, ownerTokens, checkins, operator, identity, ownerRecomputes };
}
