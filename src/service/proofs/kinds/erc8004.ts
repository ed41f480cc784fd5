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
} from "viem";
import { z } from "zod";
import { executorId } from "../../../method";
import { erc8004Binding, formatErc8004Subject, parseErc8004Subject, type Erc8004Identity } from "../erc8004-identity";
import { retry } from "../../../retry";
import { proofError, ProofSourceUnreachableError, unreachableRetry } from "../errors";
import { isSignedBy, signatureEvidence } from "../signature";
import { normalizeAddress } from "../subjects";
import type { KindVerifier, ResolvedDeps } from "../types";
import type { ProofKindModule } from "./kind";

export { erc8004Binding, formatErc8004Subject, parseErc8004Subject, type Erc8004Identity };

/** The executor DID (A1) of the identity an erc8004 proof's subject names: how the chain's records name that agent. */
export function erc8004Executor(subject: string): string {
  const identity = parseErc8004Subject(subject);
  return executorId(identity.chainId, identity.registry, identity.agentId);
}

/** Reads the distinct first `length` characters of the active proofs' subjects of a kind that start with `prefix`. */
type SubjectHeads = (kind: "erc8004", prefix: string, length: number) => Promise<string[]>;

/** V6: the identity registries of chain `chainId` that back an active erc8004 proof, lowercase, each once. */
export async function erc8004RegistriesWithProofs(chainId: number, heads: SubjectHeads): Promise<Address[]> {
  const prefix = `${chainId}:`;
  const registryLength = 42;
  return (await heads("erc8004", prefix, prefix.length + registryLength)).map((head) => normalizeAddress(head.slice(prefix.length)));
}

const evidence = z.strictObject({
  chainId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  registry: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "a 20-byte hex address"),
  /** uint256 as a decimal string (or a safe integer). */
  agentId: z.union([z.string().regex(/^(0|[1-9][0-9]{0,77})$/), z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)]),
  ...signatureEvidence,
});
export type Erc8004Evidence = z.infer<typeof evidence>;

/** What an ERC-8004 proof holds: the identity, and the wallet that owned its token when it was proven. */
export type Erc8004Proof = { kind: "erc8004"; subject: string; chainId: number; registry: Address; agentId: string; owner: Address };

const settings = {
  /**
   * The IPFS gateway an `ipfs://<cid>/<path>` agentURI is read through (`<gateway>/<cid>/<path>`, e.g.
   * `https://ipfs.io/ipfs/`), at a public address like every source; unset: ipfs:// registration files are not read.
   */
  ERC8004_IPFS_GATEWAY: z.url({ protocol: /^https?$/ }).optional(),
};

/** The ERC-8004 kind (V6: agent-level). */
export const erc8004: ProofKindModule<"erc8004", Erc8004Evidence, Erc8004Proof, typeof settings> = {
  kind: "erc8004",
  title: "ERC-8004 identity",
  noun: "an ERC-8004 identity",
  summary:
    "an ERC-8004 identity: a signature of the challenge by the wallet that owns the identity token (ERC-721 ownerOf on the token's chain)",
  recheckNote: "and at once when the identity token moves",
  normalizeSubject: (input) => formatErc8004Subject(parseErc8004Subject(input)),
  subjectExample: "8453:0x8004A169FB4a3325136EB29fA0ceB6D2e539a432:42",
  purpose: (subject) => `I own the ERC-8004 identity ${subject} (chain id:registry:agent id).`,
  signed: true,
  instructions: (challenge) => {
    const identity = parseErc8004Subject(challenge.subject);
    return {
      steps: [
        `With the wallet that owns token ${identity.agentId} of the identity registry ${identity.registry} on chain ${identity.chainId} ` +
          "(its ownerOf), sign the challenge's message as it is (EIP-191) or its typed data (EIP-712).",
        "Send the identity and the signature as the evidence, before the challenge expires.",
        "The proof is checked again every week, and at once when the token moves to another wallet, which removes it.",
      ],
      publish: [],
      sign: {
        message: challenge.message,
        by: `the owner of token ${identity.agentId} of ${identity.registry} on chain ${identity.chainId}`,
      },
      evidence: {
        chainId: identity.chainId,
        registry: identity.registry,
        agentId: identity.agentId.toString(10),
        signature: "<0x signature>",
        signatureType: "eip191",
      },
    };
  },
  evidence,
  evidenceExample: {
    chainId: 8453,
    registry: "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432",
    agentId: "42",
    signature: `0x${"5f".repeat(65)}`,
    signatureType: "eip191",
  },
  settings,
  verifier: createErc8004Verifier,
  binding: (proof) => erc8004Binding(parseErc8004Subject(proof.subject)),
};

/** The one function the verifier needs from a registry (ERC-721). */
export const OWNER_OF_ABI = [
  {
    type: "function",
    name: "ownerOf",
    stateMutability: "view",
    inputs: [{ name: "tokenId", type: "uint256" }],
    outputs: [{ name: "owner", type: "address" }],
  },
] as const;

/** Verifies and re-checks ERC-8004 proofs through `deps.publicClientFor(chainId)`. */
export function createErc8004Verifier(deps: ResolvedDeps): KindVerifier<Erc8004Evidence, Erc8004Proof> {
  function clientFor(chainId: number): PublicClient {
    const client = deps.publicClientFor(chainId);
    if (!client) throw proofError("proof_chain_unsupported", `chain ${chainId} is not configured for ERC-8004 proofs`);
    return client;
  }

  /** `ownerOf(agentId)`, lowercased. @throws `proof_token_not_found`, `proof_registry_invalid`, unreachable */
  async function ownerOf(client: PublicClient, identity: Erc8004Identity): Promise<Address> {
    const label = formatErc8004Subject(identity);
    const owner = await retry(async () => {
      try {
        return await client.readContract({
          address: identity.registry,
          abi: OWNER_OF_ABI,
          functionName: "ownerOf",
          args: [identity.agentId],
        });
      } catch (error) {
        throw classifyReadError(error, label);
      }
    }, unreachableRetry(deps));
    // ERC-721 requires ownerOf to revert for tokens that do not exist; some registries answer 0x0 instead.
    if (isAddressEqual(owner, zeroAddress)) throw proofError("proof_token_not_found", `ERC-8004 identity ${label} has no owner`);
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
        throw proofError(
          "proof_subject_mismatch",
          `the challenge is for ERC-8004 identity ${challenge.subject}, the evidence names ${subject}`,
        );
      }
      const client = clientFor(identity.chainId);
      const owner = await ownerOf(client, identity);
      const signed = { challenge, signature: evidence.signature as `0x${string}`, signatureType: evidence.signatureType };
      if (!(await isSignedBy(owner, signed, { client, retry: deps.retry, sleep: deps.sleep }))) {
        throw proofError("proof_token_not_owned", `the signature is not by ${owner}, the owner of ERC-8004 identity ${subject}`);
      }
      return {
        kind: "erc8004",
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
      return isAddressEqual(owner, proof.owner) ? { type: "ok" } : { type: "moved", newOwner: owner };
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
      return proofError("proof_registry_invalid", `the registry of ${label} has no contract with ownerOf`, error);
    }
    if (error.walk((e) => e instanceof ContractFunctionRevertedError)) {
      return proofError("proof_token_not_found", `ownerOf reverted: ERC-8004 identity ${label} does not exist`, error);
    }
  }
  return new ProofSourceUnreachableError(`reading ownerOf of ${label} failed`, { cause: error });
}
