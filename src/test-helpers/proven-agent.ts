/** An owner and its agent with a proof of each V6 kind but the wallet, recorded through the service as verified (no source read). */
import type { VraiService } from "../service";

/**
 * A new owner with a github proof, and a new agent of it (named `tag`) with a domain and an ERC-8004 proof, each proof's id
 * `<kind>-<tag>` and its subject `tag`, at the service's clock now.
 * @example const { agentId, ownerId, agentKey } = await provenAgent(service, "memory-1");
 */
export async function provenAgent(service: VraiService, tag: string): Promise<{ agentId: string; ownerId: string; agentKey: string }> {
  const { ownerId } = await service.accounts.createOwner();
  const { agentId, agentKey } = await service.accounts.claimNewAgent(ownerId, { name: tag });
  const proof = (kind: string, agent: string | null) => ({
    id: `${kind}-${tag}`,
    kind,
    ownerId,
    agentId: agent,
    subject: tag,
    binding: agent && `${kind}:${tag}`,
    evidence: {},
  });
  await service.identity.recordProof(proof("github", null));
  await service.identity.recordProof(proof("domain", agentId));
  await service.identity.recordProof(proof("erc8004", agentId));
  return { agentId, ownerId, agentKey };
}
