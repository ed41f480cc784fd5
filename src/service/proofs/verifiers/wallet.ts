/** Wallet proofs (V6): an EIP-191 or EIP-712 signature of the challenge; EIP-1271 for contract wallets. Never re-checked. */
import { proofError } from '../errors';
import { isSignedBy } from '../signature';
import { normalizeAddress } from '../subjects';
import type { KindVerifier, ResolvedDeps, VerifiedProof, WalletEvidence } from '../types';

type WalletProof = Extract<VerifiedProof, { kind: 'wallet' }>;

/** Verifies wallet proofs; contract wallets are checked on `deps.walletChainId` when it is set. */
export function createWalletVerifier(deps: ResolvedDeps): KindVerifier<WalletEvidence, WalletProof> {
  return {
    async verify(challenge, evidence) {
      const address = normalizeAddress(evidence.address);
      if (address !== challenge.subject) {
        throw proofError('proof_subject_mismatch', `the challenge is for ${challenge.subject}, the evidence names ${address}`);
      }
      const client = deps.walletChainId === undefined ? undefined : deps.publicClientFor(deps.walletChainId);
      const signed = { challenge, signature: evidence.signature as `0x${string}`, signatureType: evidence.signatureType };
      if (!(await isSignedBy(address, signed, { client, retry: deps.retry, sleep: deps.sleep }))) {
        throw proofError('proof_signature_invalid', `the signature is not a valid ${evidence.signatureType} signature of the challenge by ${address}`);
      }
      return { kind: 'wallet', subject: address, address };
    },
    // V6: a signature stays valid; wallet proofs are never re-checked.
    recheck: async () => ({ type: 'ok' }),
  };
}
