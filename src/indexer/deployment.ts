/** Reads what the indexer follows from `deployments/<network>.json` (shape: scripts/deploy.ts `Deployment`). */
import fs from "node:fs";
import { getAddress, type Address } from "viem";
import { IndexerConfigError } from "./errors";
import type { FollowedContracts } from "./events";

export type FollowedDeployment = { chainId: number; contracts: FollowedContracts; startBlock: number };

/**
 * The chain id, the three contracts and the block to start from: the earliest deployment block of the contracts
 * this deployment created (a reused identity registry has none).
 * @throws IndexerConfigError naming the file and the field
 */
export function readDeployment(file: string): FollowedDeployment {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (error) {
    throw new IndexerConfigError(`${file}: cannot read the deployment file`, { cause: error });
  }
  return parseDeployment(json, file);
}

/** Validates a deployment file's content (see `readDeployment`). */
export function parseDeployment(json: unknown, file = "deployment"): FollowedDeployment {
  const d = json as { chainId?: unknown; contracts?: Record<string, { address?: unknown; blockNumber?: unknown } | undefined> };
  if (typeof d?.chainId !== "number" || !Number.isSafeInteger(d.chainId) || d.chainId <= 0) throw new IndexerConfigError(`${file}: chainId: expected a positive integer`);
  const address = (name: string): Address => {
    const value = d.contracts?.[name]?.address;
    if (typeof value !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(value)) throw new IndexerConfigError(`${file}: contracts.${name}.address: expected a 0x address`);
    return getAddress(value);
  };
  const contracts = { registry: address("Registry"), anchorRegistry: address("AnchorRegistry"), identityRegistry: address("IdentityRegistry") };
  const blocks = ["Registry", "AnchorRegistry", "IdentityRegistry"]
    .map((name) => d.contracts?.[name]?.blockNumber)
    .filter((b): b is number => typeof b === "number" && Number.isSafeInteger(b) && b >= 0);
  if (blocks.length === 0) throw new IndexerConfigError(`${file}: contracts.Registry.blockNumber: expected the deployment block`);
  return { chainId: d.chainId, contracts, startBlock: Math.min(...blocks) };
}
