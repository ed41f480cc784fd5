/** Wallet proofs (V6): an EIP-191 or EIP-712 signature of the challenge; EIP-1271 for contract wallets. Never re-checked. */
import { z } from "zod";
import type { Address } from "viem";
import { proofError } from "../errors";
import { isSignedBy, signatureEvidence } from "../signature";
import { normalizeAddress } from "../subjects";
import type { KindVerifier, ResolvedDeps } from "../types";
import type { ProofKindModule } from "./kind";

const evidence = z.strictObject({
  address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "a 20-byte hex address"),
  ...signatureEvidence,
});
export type WalletEvidence = z.infer<typeof evidence>;

/** What a wallet proof holds: the address that signed. */
export type WalletProof = { kind: "wallet"; subject: Address; address: Address };

/** The wallet kind (V6: owner-level). */
export const wallet: ProofKindModule<"wallet", WalletEvidence, WalletProof> = {
  kind: "wallet",
  title: "Wallet",
  noun: "a wallet",
  summary:
    "a wallet: a signature of the challenge by the address (EIP-191 or EIP-712; ERC-1271 for a contract wallet on the configured chain)",
  recheckNote: "a signature stays valid",
  normalizeSubject: normalizeAddress,
  subjectExample: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  purpose: (subject) => `I control the wallet ${subject}.`,
  signed: true,
  instructions: (challenge) => ({
    steps: [
      `With the wallet ${challenge.subject}, sign the challenge's message as it is (EIP-191, personal_sign), ` +
        "or its typed data (EIP-712, eth_signTypedData_v4).",
      "Send the address, the signature and which of the two you signed as the evidence, before the challenge expires.",
    ],
    publish: [],
    sign: { message: challenge.message, by: challenge.subject },
    evidence: { address: challenge.subject, signature: "<0x signature>", signatureType: "eip191" },
  }),
  evidence,
  evidenceExample: { address: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8", signature: `0x${"5f".repeat(65)}`, signatureType: "eip191" },
  settings: {},
  verifier: createWalletVerifier,
  binding: (proof) => `wallet:${proof.address.toLowerCase()}`,
};

/** Verifies wallet proofs; contract wallets are checked on `deps.walletChainId` when it is set. */
export function createWalletVerifier(deps: ResolvedDeps): KindVerifier<WalletEvidence, WalletProof> {
  return {
    async verify(challenge, evidence) {
      const address = normalizeAddress(evidence.address);
      if (address !== challenge.subject) {
        throw proofError("proof_subject_mismatch", `the challenge is for ${challenge.subject}, the evidence names ${address}`);
      }
      const client = deps.walletChainId === undefined ? undefined : deps.publicClientFor(deps.walletChainId);
      const signed = { challenge, signature: evidence.signature as `0x${string}`, signatureType: evidence.signatureType };
      if (!(await isSignedBy(address, signed, { client, retry: deps.retry, sleep: deps.sleep }))) {
        throw proofError(
          "proof_signature_invalid",
          `the signature is not a valid ${evidence.signatureType} signature of the challenge by ${address}`,
        );
      }
      return { kind: "wallet", subject: address, address };
    },
    // V6: a signature stays valid; wallet proofs are never re-checked.
    recheck: async () => ({ type: "ok" }),
  };
}
