import { InvalidInputError } from "../../errors";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * The executor DID of an ERC-8004 agent (A1 `executor`), docs/inputs.md "Executor ids":
 * `did:erc8004:<chainId>:<identityRegistry, lowercase>:<agentId>`, numbers in decimal.
 * @throws InvalidInputError `invalid_executor_id` for a non-positive chain id, a malformed address or a negative agent id.
 * @example executorId(8453, "0xAbC0000000000000000000000000000000000001", 42n)
 * // "did:erc8004:8453:0xabc0000000000000000000000000000000000001:42"
 */
export function executorId(chainId: number | bigint, identityRegistry: string, agentId: number | bigint | string): string {
  const chain = typeof chainId === "bigint" || Number.isSafeInteger(chainId) ? BigInt(chainId) : 0n;
  if (chain <= 0n) throw new InvalidInputError("invalid_executor_id", `chainId: expected a positive integer, got ${chainId}`);
  if (!ADDRESS.test(identityRegistry))
    throw new InvalidInputError("invalid_executor_id", `identityRegistry: expected a 0x address, got ${JSON.stringify(identityRegistry)}`);
  const agent =
    typeof agentId === "string"
      ? DECIMAL.test(agentId)
        ? BigInt(agentId)
        : -1n
      : typeof agentId === "bigint" || Number.isSafeInteger(agentId)
        ? BigInt(agentId)
        : -1n;
  if (agent < 0n) throw new InvalidInputError("invalid_executor_id", `agentId: expected a whole number >= 0, got ${String(agentId)}`);
  return `did:erc8004:${chain}:${identityRegistry.toLowerCase()}:${agent}`;
}
