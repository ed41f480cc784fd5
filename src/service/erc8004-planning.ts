/**
 * What Vrai gives an ERC-8004 Reputation Registry after a day's root is mined (issue #27): for each agent with publishing
 * on and an active erc8004 proof of an identity in the served registry, each tag whose value changed since the feedback
 * standing now (src/chain/feedback-file.ts: `vraiScore`, `uptime`) gets a new feedback of that day's daily score, with its
 * file; the one it replaces is asked to be revoked, so the registry's summary of Vrai's tag is the current value. At most
 * one feedback a tag per agent per day. Stored in one transaction per page of agents (the outbox), which a crash leaves
 * whole or not at all: a page planned is never planned again, one not planned is planned by the next pass.
 */
import { isAddressEqual, type Address } from "viem";
import { FEEDBACK_TAGS, feedbackValue, vraiFeedback, type FeedbackIdentity } from "../chain/feedback-file";
import type { Erc8004FeedbackRepository, MinedDay, PlanCandidate, PlannedFeedback } from "../store/erc8004-feedback";
import type { Clock } from "./clock";
import type { FeedbackTarget } from "./erc8004-publishing";
import type { Store } from "./ports";
import { parseErc8004Subject } from "./proofs/kinds/erc8004";
import { generateId } from "./secrets";

/** Agents planned per transaction. */
const PLAN_PAGE = 200;

export type FeedbackPlanner = {
  /** Plans the latest day whose root is mined for every publishing agent not planned for it yet; returns the feedbacks stored. */
  planLatest(): Promise<{ day: string | null; planned: number }>;
};

/**
 * The planner over `outbox` and `store`'s scores: feedback given to `target` by `client`, its file served under
 * `publicUrl()` (`/v1/erc8004/feedback/{id}`), its endpoint the agent's page there.
 * @example const planner = createFeedbackPlanner({ outbox, store, clock, target, client, publicUrl: () => "https://vrai.example" });
 */
export function createFeedbackPlanner(deps: {
  outbox: Erc8004FeedbackRepository;
  store: Pick<Store, "read">;
  clock: Clock;
  target: FeedbackTarget;
  client: Address;
  publicUrl: () => string;
}): FeedbackPlanner {
  const { outbox, store, clock, target } = deps;

  /** The identity of the agent's proof, when it is one the served registry keeps feedback about. */
  function servedIdentity(candidate: PlanCandidate): FeedbackIdentity | null {
    if (!candidate.proof) return null;
    const identity = parseErc8004Subject(candidate.proof.subject);
    if (identity.chainId !== target.chainId || !isAddressEqual(identity.registry, target.identityRegistry)) return null;
    return { chainId: identity.chainId, registry: identity.registry, tokenId: identity.agentId };
  }

  /** The page's new feedbacks, and the standing ones they replace. */
  async function planPage(day: MinedDay, page: PlanCandidate[]): Promise<{ planned: PlannedFeedback[]; replaced: string[] }> {
    const standing = await outbox.standing(page.map((c) => c.agentId));
    const planned: PlannedFeedback[] = [];
    const replaced: string[] = [];
    const base = deps.publicUrl().replace(/\/+$/, "");
    const at = clock.now();
    for (const candidate of page) {
      const identity = servedIdentity(candidate);
      // Nothing to give that day: no identity of the served registry, or no daily score (claimed after its 00:00).
      if (!identity || !candidate.proof || candidate.scoreId === null) continue;
      const row = await store.read.getScore(candidate.scoreId);
      if (!row) continue;
      const score = {
        vraiAgentId: candidate.agentId,
        scoreId: row.id,
        day: day.day,
        method: row.method,
        inputsSha256: row.sha256,
        total: row.total,
        creditS: row.result.components.reliability.creditS,
        dayRoot: day.root,
        anchor: { chainId: day.chainId, registry: day.contract, txHash: day.txHash },
      };
      for (const tag of FEEDBACK_TAGS) {
        const { value, valueDecimals, tag2 } = feedbackValue(tag, score);
        const current = standing.find((f) => f.agentId === candidate.agentId && f.tag1 === tag);
        const unchanged =
          current?.proofId === candidate.proof.id &&
          current.value === value &&
          current.valueDecimals === valueDecimals &&
          current.tag2 === tag2;
        if (unchanged) continue;
        const id = generateId("fbk");
        const endpoint = `${base}/agents/${candidate.agentId}`;
        const feedback = vraiFeedback(tag, { identity, client: deps.client, createdAt: at, endpoint, score });
        planned.push({
          id,
          agentId: candidate.agentId,
          proofId: candidate.proof.id,
          chainId: identity.chainId,
          identityRegistry: identity.registry,
          tokenId: identity.tokenId,
          registry: target.registry,
          client: deps.client,
          tag1: tag,
          tag2,
          value,
          valueDecimals,
          endpoint,
          uri: `${base}/v1/erc8004/feedback/${id}`,
          file: feedback.file,
          fileHash: feedback.fileHash,
          day: day.day,
          scoreId: row.id,
          plannedAt: at,
        });
        if (current) replaced.push(current.id);
      }
    }
    return { planned, replaced };
  }

  return {
    async planLatest() {
      const day = await outbox.latestMinedDay();
      if (!day) return { day: null, planned: 0 };
      let planned = 0;
      for (;;) {
        const page = await outbox.toPlan(day.day, PLAN_PAGE);
        if (page.length === 0) return { day: day.day, planned };
        const plan = await planPage(day, page);
        planned += await outbox.plan(
          day.day,
          page.map((c) => c.agentId),
          plan.planned,
          plan.replaced,
          clock.now(),
        );
      }
    },
  };
}
