import type { MethodVersion } from "../method";
import type { Clock } from "./clock";
import { createAccounts } from "./accounts";
import { createCheckins } from "./checkins";
import { createIdentity } from "./identity";
import { createOperator } from "./operator";
import type { Store } from "./ports";
import { createScoring } from "./scoring";

export type VraiService = ReturnType<typeof createVraiService>;

/**
 * The service's rules wired together on one store and one clock; the HTTP API and `vrai replay`
 * both run exactly this.
 * @param deps.busy whether the service is busy now (operator switch or overload, V3.3)
 */
export function createVraiService(deps: { store: Store; clock: Clock; busy: () => boolean; onBusyChanged?: (on: boolean) => void; method?: MethodVersion }) {
  const { store, clock } = deps;
  const scoring = createScoring({ store, clock, method: deps.method });
  const accounts = createAccounts({ store, clock, onClaimed: scoring.onChange });
  const checkins = createCheckins({ store, clock, busy: deps.busy });
  const operator = createOperator({ store, clock, onPenaltyChanged: scoring.onChange, onBusyChanged: deps.onBusyChanged });
  const identity = createIdentity({ store, clock, onChanged: scoring.onChange });
  return { store, clock, scoring, accounts, checkins, operator, identity };
}
