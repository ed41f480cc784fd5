/**
 * ERC-8004 proofs (V6): a signature of the challenge by the wallet that owns identity token
 * `agentId` of `registry` on `chainId`. Only ERC-721 `ownerOf` is read, so any ERC-8004 identity
 * registry works, not only Vrai's (tests run it on AgentIdentity and on the reference `IdentityRegistryUpgradeable`).
 * The owner may be an EOA or an ERC-1271 contract wallet on that chain. Whatever registry backs a proof, the chain
 * indexer follows its transfers while the proof is active, so a moved token is re-checked at once (V6).
 */
import {
  BaseError as ViemBaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  isAddressEqual,
  zeroAddress,
  type Address,
  type PublicClient,
} from 'viem';
import { retry } from '../../../retry';
import { proofError, ProofSourceUnreachableError, unreachableRetry } from '../errors';
import { isSignedBy } from '../signature';
import { formatErc8004Subject, normalizeAddress, type Erc8004Identity } from '../subjects';
import type { Erc8004Evidence, KindVerifier, ResolvedDeps, VerifiedProof } from '../types';

type Erc8004Proof = Extract<VerifiedProof, { kind: 'erc8004' }>;

/** The one function the verifier needs from a registry (ERC-721). */
export const OWNER_OF_ABI = [
  {
    type: 'function',
    name: 'ownerOf',
    stateMutability: 'view',
    inputs: [{ name: 'tokenId', type: 'uint256' }],
    outputs: [{ name: 'owner', type: 'address' }],
  },
] as const;

/** Verifies and re-checks ERC-8004 proofs through `deps.publicClientFor(chainId)`. */
export function createErc8004Verifier(deps: ResolvedDeps): KindVerifier<Erc8004Evidence, Erc8004Proof> {
  function clientFor(chainId: number): PublicClient {
    const client = deps.publicClientFor(chainId);
    if (!client) throw proofError('proof_chain_unsupported', `chain ${chainId} is not configured for ERC-8004 proofs`);
    return client;
  }

  /** `ownerOf(agentId)`, lowercased. @throws `proof_token_not_found`, `proof_registry_invalid`, unreachable */
  async function ownerOf(client: PublicClient, identity: Erc8004Identity): Promise<Address> {
    const label = formatErc8004Subject(identity);
    const owner = await retry(
      async () => {
        try {
          return await client.readContract({ address: identity.registry, abi: OWNER_OF_ABI, functionName: 'ownerOf', args: [identity.agentId] });
        } catch (error) {
          throw classifyReadError(error, label);
        }
      },
      unreachableRetry(deps),
    );
    // ERC-721 requires ownerOf to revert for tokens that do not exist; some registries answer 0x0 instead.
    if (isAddressEqual(owner, zeroAddress)) throw proofError('proof_token_not_found', `ERC-8004 identity ${label} has no owner`);
    return owner.toLowerCase() as Address;
  }

  return {
    async verify(challenge, evidence) {
      const identity: Erc8004Identity = {
        chainId: evidence.chainId,
        registry: normalizeAddress(evidence.registry),
        agentId: BigInt(evidence.agentId),
      };
      const subject = formatErc8004Subject(identity);
      if (subject !== challenge.subject) {
        throw proofError('proof_subject_mismatch', `the challenge is for ERC-8004 identity ${challenge.subject}, the evidence names ${subject}`);
      }
      const client = clientFor(identity.chainId);
      const owner = await ownerOf(client, identity);
      const signed = { challenge, signature: evidence.signature as `0x${string}`, signatureType: evidence.signatureType };
      if (!(await isSignedBy(owner, signed, { client, retry: deps.retry, sleep: deps.sleep }))) {
        throw proofError('proof_token_not_owned', `the signature is not by ${owner}, the owner of ERC-8004 identity ${subject}`);
      }
      return {
        kind: 'erc8004',
        subject,
        chainId: identity.chainId,
        registry: identity.registry,
        agentId: identity.agentId.toString(10),
        owner,
      };
    },
    async recheck(proof) {
      const identity = { chainId: proof.chainId, registry: proof.registry, agentId: BigInt(proof.agentId) };
      const owner = await ownerOf(clientFor(proof.chainId), identity);
      return isAddressEqual(owner, proof.owner) ? { type: 'ok' } : { type: 'moved', newOwner: owner };
    },
  };
}

/**
 * A revert of `ownerOf` means the token does not exist; no code (or no `ownerOf`) at the address
 * means it is no registry. Anything else is the RPC failing: retried, then counted as unreachable.
 */
function classifyReadError(error: unknown, label: string): Error {
  if (error instanceof ViemBaseError) {
    if (error.walk((e) => e instanceof ContractFunctionZeroDataError)) {
      return proofError('proof_registry_invalid', `the registry of ${label} has no contract with ownerOf`, error);
    }
    if (error.walk((e) => e instanceof ContractFunctionRevertedError)) {
      return proofError('proof_token_not_found', `ownerOf reverted: ERC-8004 identity ${label} does not exist`, error);
    }
  }
  return new ProofSourceUnreachableError(`reading ownerOf of ${label} failed`, { cause: error });
}
