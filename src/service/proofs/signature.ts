/**
 * Is a signature of a challenge by a given address? EOAs are checked offline (ECDSA recovery);
 * contract wallets through a chain client, where viem's `verifyMessage` / `verifyTypedData` call
 * ERC-1271 `isValidSignature` (and ERC-6492 for wallets not deployed yet).
 */
import { isAddressEqual, recoverMessageAddress, recoverTypedDataAddress, type Address, type Hex, type PublicClient } from "viem";
import { z } from "zod";
import { proofTypedData, type Challenge } from "./challenge";
import { retry, type Sleep } from "../../retry";
import { ProofSourceUnreachableError, unreachableRetry, type RetryPolicy } from "./errors";

/** EIP-191 signs `challenge.message`; EIP-712 signs `proofTypedData(challenge)`. */
export type SignatureType = "eip191" | "eip712";

/** The evidence fields of a kind proven by a signature of the challenge. */
export const signatureEvidence = {
  signature: z.string().regex(/^0x(?:[0-9a-fA-F]{2})+$/, "a 0x-prefixed hex signature"),
  signatureType: z.enum(["eip191", "eip712"]),
};

export type SignedChallenge = {
  challenge: Challenge;
  signature: Hex;
  signatureType: SignatureType;
};

/**
 * True when `signature` is `address`'s signature of the challenge.
 * @param client chain for ERC-1271/6492; without it only EOA signatures can be accepted
 * @throws ProofSourceUnreachableError when the chain cannot be reached after the retries
 */
export async function isSignedBy(
  address: Address,
  signed: SignedChallenge,
  chain: { client: PublicClient | undefined; retry: RetryPolicy; sleep: Sleep },
): Promise<boolean> {
  const recovered = await recoverSigner(signed);
  if (recovered && isAddressEqual(recovered, address)) return true;
  const { client } = chain;
  if (!client) return false;
  return retry(async () => {
    try {
      return signed.signatureType === "eip191"
        ? await client.verifyMessage({ address, message: signed.challenge.message, signature: signed.signature })
        : await client.verifyTypedData({ address, ...proofTypedData(signed.challenge), signature: signed.signature });
    } catch (error) {
      // viem answers `false` for signatures the wallet rejects; what it throws is the RPC failing.
      throw new ProofSourceUnreachableError(`checking the signature of ${address} on chain failed`, { cause: error });
    }
  }, unreachableRetry(chain));
}

/** The EOA that produced `signature`, or undefined when it is not a recoverable ECDSA signature. */
async function recoverSigner({ challenge, signature, signatureType }: SignedChallenge): Promise<Address | undefined> {
  try {
    return signatureType === "eip191"
      ? await recoverMessageAddress({ message: challenge.message, signature })
      : await recoverTypedDataAddress({ ...proofTypedData(challenge), signature });
  } catch {
    return undefined;
  }
}
