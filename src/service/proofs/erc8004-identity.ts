/**
 * How Vrai names an ERC-8004 identity (a token of an identity registry on one chain): the subject of an erc8004 proof
 * and the binding it holds (V6). Apart from the kind's module (./kinds/erc8004.ts), which checks signatures, so that
 * what only names identities (a domain proven for one, its registration file) needs nothing else.
 */
import type { Address } from "viem";
import { proofError } from "./errors";
import { normalizeAddress } from "./subjects";

const UINT256_MAX = 2n ** 256n - 1n;

/** An ERC-8004 identity: a token of an ERC-721 identity registry on one chain. */
export type Erc8004Identity = { chainId: number; registry: Address; agentId: bigint };

/** `<chainId>:<registry lowercased>:<agentId decimal>`, e.g. `8453:0xabc…:42`. */
export function formatErc8004Subject(identity: Erc8004Identity): string {
  return `${identity.chainId}:${identity.registry.toLowerCase()}:${identity.agentId.toString(10)}`;
}

/** Parses `formatErc8004Subject` output (the registry in any case). @throws `proof_subject_invalid` */
export function parseErc8004Subject(subject: string): Erc8004Identity {
  const match = /^([1-9][0-9]{0,15}):(0x[0-9a-fA-F]{40}):(0|[1-9][0-9]{0,77})$/.exec(subject);
  const agentId = match ? BigInt(match[3]) : undefined;
  const chainId = match ? Number(match[1]) : undefined;
  if (!match || agentId === undefined || agentId > UINT256_MAX || !Number.isSafeInteger(chainId)) {
    throw proofError(
      "proof_subject_invalid",
      `invalid ERC-8004 subject ${JSON.stringify(subject)}: expected <chainId>:<registry>:<agentId>`,
    );
  }
  return { chainId: chainId as number, registry: normalizeAddress(match[2]), agentId };
}

/** The binding of an ERC-8004 identity: the one key its active proof holds (V6: one agent at a time). */
export const erc8004Binding = (identity: Erc8004Identity): string => `erc8004:${formatErc8004Subject(identity)}`;
