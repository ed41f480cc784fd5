/**
 * What the removal of an agent's erc8004 proof does to Vrai's ERC-8004 feedback about it (issue #27), in the removal's
 * transaction: publishing off, the reason said, and every feedback of the agent asked to be revoked (the outbox sends it).
 * A module of its own, importing nothing of the proofs: the proofs' own modules (src/service/identity.ts,
 * src/service/accounts.ts) call it.
 */
import type { Erc8004PublishingTx } from "./ports";

/** Turns publishing off for `agentId` (its erc8004 proof went, for `reason`) and asks its feedback to be revoked. */
export async function stopErc8004Publishing(tx: Erc8004PublishingTx, agentId: string, at: number, reason: string): Promise<void> {
  const current = await tx.getErc8004Publishing(agentId);
  if (current?.enabled) await tx.setErc8004Publishing({ agentId, enabled: false, changedAt: at, reason });
  await tx.withdrawErc8004Feedback(agentId, at, reason);
}
