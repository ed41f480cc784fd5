import { expect } from "chai";
import { hashMessage, hashTypedData, type Address, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startTestChain, type TestChain } from "../../../test-helpers/chain";
import { proofTypedData } from "../challenge";
import { challengeFor, expectProofError, NOW, recordingSleep } from "../test-support";
import { createProofVerifier } from "../verifiers";

// Fixed test keys (never funded anywhere).
const alice = privateKeyToAccount("0x1111111111111111111111111111111111111111111111111111111111111111");
const mallory = privateKeyToAccount("0x2222222222222222222222222222222222222222222222222222222222222222");

describe("wallet proofs (V6)", () => {
  const verifier = createProofVerifier({ now: () => NOW + 60 });

  it("accepts an EIP-191 signature of the challenge message by the wallet", async () => {
    const challenge = challengeFor("wallet", alice.address);
    const signature = await alice.signMessage({ message: challenge.message });
    const result = await verifier.verify(challenge, { address: alice.address, signature, signatureType: "eip191" });
    const address = alice.address.toLowerCase();
    expect(result).to.deep.equal({
      type: "verified",
      kind: "wallet",
      binding: `wallet:${address}`,
      proof: { kind: "wallet", subject: address, address },
    });
  });

  it("accepts an EIP-712 VraiProof signature by the wallet", async () => {
    const challenge = challengeFor("wallet", alice.address);
    const signature = await alice.signTypedData(proofTypedData(challenge));
    const result = await verifier.verify(challenge, { address: alice.address, signature, signatureType: "eip712" });
    expect(result.binding).to.equal(`wallet:${alice.address.toLowerCase()}`);
  });

  it("rejects a signature by another wallet (proof_signature_invalid, 422)", async () => {
    const challenge = challengeFor("wallet", alice.address);
    const signature = await mallory.signMessage({ message: challenge.message });
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature, signatureType: "eip191" }),
      "proof_signature_invalid",
      422,
    );
  });

  it("rejects a signature of a tampered message (another nonce)", async () => {
    const challenge = challengeFor("wallet", alice.address);
    const signature = await alice.signMessage({ message: challenge.message.replace(challenge.nonce, "0".repeat(32)) });
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature, signatureType: "eip191" }),
      "proof_signature_invalid",
      422,
    );
  });

  it("rejects an EIP-191 signature submitted as EIP-712", async () => {
    const challenge = challengeFor("wallet", alice.address);
    const signature = await alice.signMessage({ message: challenge.message });
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature, signatureType: "eip712" }),
      "proof_signature_invalid",
      422,
    );
  });

  it("rejects a garbage signature as invalid, not as a crash", async () => {
    const challenge = challengeFor("wallet", alice.address);
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature: "0xdeadbeef", signatureType: "eip191" }),
      "proof_signature_invalid",
      422,
    );
  });

  it("rejects an expired challenge (proof_challenge_expired, 422)", async () => {
    const challenge = challengeFor("wallet", alice.address, { ttlS: 60 });
    const signature = await alice.signMessage({ message: challenge.message });
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature, signatureType: "eip191" }),
      "proof_challenge_expired",
      422,
    );
  });

  it("rejects evidence for another address than the challenge (proof_subject_mismatch, 422)", async () => {
    const challenge = challengeFor("wallet", alice.address);
    const signature = await mallory.signMessage({ message: challenge.message });
    await expectProofError(
      verifier.verify(challenge, { address: mallory.address, signature, signatureType: "eip191" }),
      "proof_subject_mismatch",
      422,
    );
  });

  it("rejects evidence of the wrong shape (proof_evidence_invalid, 400)", async () => {
    const challenge = challengeFor("wallet", alice.address);
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature: "nope", signatureType: "eip191" }),
      "proof_evidence_invalid",
      400,
    );
    await expectProofError(
      verifier.verify(challenge, { address: alice.address, signature: "0x00", signatureType: "eip4361" }),
      "proof_evidence_invalid",
      400,
    );
    await expectProofError(verifier.verify(challenge, null), "proof_evidence_invalid", 400);
  });

  it("is never re-checked: recheck answers ok", async () => {
    const address = alice.address.toLowerCase() as Address;
    expect(await verifier.recheck({ kind: "wallet", subject: address, address })).to.deep.equal({ type: "ok" });
  });

  describe("contract wallets (EIP-1271) on a real chain", () => {
    let chain: TestChain;
    let wallet: Address;
    before(async () => {
      chain = await startTestChain();
      ({ address: wallet } = await chain.deployContract("MockERC1271Wallet", [alice.address]));
    });
    after(() => chain.close());

    const onChain = () =>
      createProofVerifier({
        now: () => NOW + 60,
        walletChainId: chain.chain.id,
        publicClientFor: (id) => (id === chain.chain.id ? (chain.publicClient as PublicClient) : undefined),
        sleep: recordingSleep(),
      });

    it("accepts an EIP-191 proof when isValidSignature approves the owner’s signature", async () => {
      const challenge = challengeFor("wallet", wallet);
      const signature = await alice.sign({ hash: hashMessage(challenge.message) });
      const result = await onChain().verify(challenge, { address: wallet, signature, signatureType: "eip191" });
      expect(result.binding).to.equal(`wallet:${wallet.toLowerCase()}`);
    });

    it("accepts an EIP-712 proof when isValidSignature approves the owner’s signature", async () => {
      const challenge = challengeFor("wallet", wallet);
      const signature = await alice.sign({ hash: hashTypedData(proofTypedData(challenge)) });
      const result = await onChain().verify(challenge, { address: wallet, signature, signatureType: "eip712" });
      expect(result.proof).to.deep.include({ address: wallet.toLowerCase() });
    });

    it("rejects a contract-wallet proof that isValidSignature refuses (signed by a non-owner)", async () => {
      const challenge = challengeFor("wallet", wallet);
      const signature = await mallory.sign({ hash: hashMessage(challenge.message) });
      await expectProofError(
        onChain().verify(challenge, { address: wallet, signature, signatureType: "eip191" }),
        "proof_signature_invalid",
        422,
      );
    });

    it("rejects a contract-wallet proof when no chain is configured for wallet proofs", async () => {
      const challenge = challengeFor("wallet", wallet);
      const signature = await alice.sign({ hash: hashMessage(challenge.message) });
      await expectProofError(
        verifier.verify(challenge, { address: wallet, signature, signatureType: "eip191" }),
        "proof_signature_invalid",
        422,
      );
    });
  });
});
