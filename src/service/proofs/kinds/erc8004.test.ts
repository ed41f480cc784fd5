import { expect } from "chai";
import { createPublicClient, hashMessage, http, type Address, type PublicClient } from "viem";
import { startHttpServer, type TestHttpServer } from "../../../test-helpers/http-server";
import { startTestChain, type DeployedContract, type TestChain } from "../../../test-helpers/chain";
import { proofTypedData } from "../challenge";
import { challengeFor, expectProofError, NOW, recordingSleep } from "../test-support";
import { createProofVerifier, type VerifiedProof } from "../verifiers";

describe("ERC-8004 proofs (V6)", () => {
  let chain: TestChain;
  let registry: DeployedContract;
  /** The reference ERC-8004 registry behind its proxy, as public networks run it. */
  let referenceRegistry: DeployedContract;
  /** A third-party registry: a bare ERC-721 with a public mint. */
  let foreignRegistry: DeployedContract;

  before(async () => {
    chain = await startTestChain();
    registry = await chain.deployContract("AgentIdentity");
    referenceRegistry = await chain.deployReferenceIdentity();
    foreignRegistry = await chain.deployContract("MockERC721Identity");
    // accounts[0] registers agent 0 and accounts[1] agent 1 on Vrai's registry and on the reference.
    for (const identity of [registry, referenceRegistry]) {
      for (const wallet of chain.walletClients.slice(0, 2)) {
        const hash = await wallet.writeContract({ address: identity.address, abi: identity.abi, functionName: "register", args: [] });
        await chain.publicClient.waitForTransactionReceipt({ hash });
      }
    }
  });
  after(() => chain.close());

  let snapshot: `0x${string}`;
  beforeEach(async () => (snapshot = await chain.snapshot()));
  afterEach(() => chain.revert(snapshot));

  const sleep = recordingSleep();
  const verifier = () =>
    createProofVerifier({
      now: () => NOW + 60,
      publicClientFor: (id) => (id === chain.chain.id ? (chain.publicClient as PublicClient) : undefined),
      sleep,
      retry: { tries: 3, baseDelayMs: 5 },
    });
  const subjectOf = (address: Address, agentId: number) => `${chain.chain.id}:${address}:${agentId}`;

  it("accepts an EIP-712 signature by the owner on any ERC-721 registry (only ownerOf is used)", async () => {
    const owner = chain.accounts[2];
    const hash = await chain.walletClient.writeContract({
      address: foreignRegistry.address,
      abi: foreignRegistry.abi,
      functionName: "mint",
      args: [owner.address, 42n],
    });
    await chain.publicClient.waitForTransactionReceipt({ hash });
    const challenge = challengeFor("erc8004", subjectOf(foreignRegistry.address, 42));
    const signature = await owner.signTypedData(proofTypedData(challenge));
    const result = await verifier().verify(challenge, {
      chainId: chain.chain.id,
      registry: foreignRegistry.address,
      agentId: 42,
      signature,
      signatureType: "eip712",
    });
    expect(result.binding).to.equal(`erc8004:${chain.chain.id}:${foreignRegistry.address.toLowerCase()}:42`);
  });

  it("accepts a token owned by an ERC-1271 contract wallet when isValidSignature approves", async () => {
    const signer = chain.accounts[3];
    const wallet = await chain.deployContract("MockERC1271Wallet", [signer.address]);
    const hash = await chain.walletClient.writeContract({
      address: foreignRegistry.address,
      abi: foreignRegistry.abi,
      functionName: "mint",
      args: [wallet.address, 7n],
    });
    await chain.publicClient.waitForTransactionReceipt({ hash });
    const challenge = challengeFor("erc8004", subjectOf(foreignRegistry.address, 7));
    const signature = await signer.sign({ hash: hashMessage(challenge.message) });
    const result = await verifier().verify(challenge, {
      chainId: chain.chain.id,
      registry: foreignRegistry.address,
      agentId: "7",
      signature,
      signatureType: "eip191",
    });
    expect(result.proof).to.deep.include({ owner: wallet.address.toLowerCase() });
  });

  it("rejects a registry address without a contract (proof_registry_invalid, 422)", async () => {
    const empty = chain.accounts[4].address;
    const challenge = challengeFor("erc8004", subjectOf(empty, 0));
    const signature = await chain.accounts[0].signMessage({ message: challenge.message });
    await expectProofError(
      verifier().verify(challenge, { chainId: chain.chain.id, registry: empty, agentId: "0", signature, signatureType: "eip191" }),
      "proof_registry_invalid",
      422,
    );
  });

  it("rejects a chain that is not configured (proof_chain_unsupported, 422)", async () => {
    const challenge = challengeFor("erc8004", `1:${registry.address}:0`);
    const signature = await chain.accounts[0].signMessage({ message: challenge.message });
    await expectProofError(
      verifier().verify(challenge, { chainId: 1, registry: registry.address, agentId: "0", signature, signatureType: "eip191" }),
      "proof_chain_unsupported",
      422,
    );
  });

  const provenAgent0 = (identity: DeployedContract): Extract<VerifiedProof, { kind: "erc8004" }> => ({
    kind: "erc8004",
    subject: `${chain.chain.id}:${identity.address.toLowerCase()}:0`,
    chainId: chain.chain.id,
    registry: identity.address.toLowerCase() as Address,
    agentId: "0",
    owner: chain.accounts[0].address.toLowerCase() as Address,
  });

  for (const [label, identityOf] of [
    ["Vrai's AgentIdentity", () => registry],
    ["the reference IdentityRegistryUpgradeable", () => referenceRegistry],
  ] as const) {
    describe(`on ${label}`, () => {
      let registry: DeployedContract;
      before(() => {
        registry = identityOf();
      });

      it("accepts an EIP-191 signature by the token owner", async () => {
        const [owner] = chain.accounts;
        const challenge = challengeFor("erc8004", subjectOf(registry.address, 0));
        const signature = await owner.signMessage({ message: challenge.message });
        const result = await verifier().verify(challenge, {
          chainId: chain.chain.id,
          registry: registry.address,
          agentId: "0",
          signature,
          signatureType: "eip191",
        });
        const registryLower = registry.address.toLowerCase();
        expect(result).to.deep.equal({
          type: "verified",
          kind: "erc8004",
          binding: `erc8004:${chain.chain.id}:${registryLower}:0`,
          proof: {
            kind: "erc8004",
            subject: `${chain.chain.id}:${registryLower}:0`,
            chainId: chain.chain.id,
            registry: registryLower,
            agentId: "0",
            owner: owner.address.toLowerCase(),
          },
        });
      });

      it("rejects a signature by a wallet that does not own the token (proof_token_not_owned, 422)", async () => {
        const challenge = challengeFor("erc8004", subjectOf(registry.address, 0));
        const signature = await chain.accounts[1].signMessage({ message: challenge.message });
        await expectProofError(
          verifier().verify(challenge, {
            chainId: chain.chain.id,
            registry: registry.address,
            agentId: "0",
            signature,
            signatureType: "eip191",
          }),
          "proof_token_not_owned",
          422,
        );
      });

      it("fails clearly for a token that does not exist (proof_token_not_found, 422)", async () => {
        const challenge = challengeFor("erc8004", subjectOf(registry.address, 99));
        const signature = await chain.accounts[0].signMessage({ message: challenge.message });
        await expectProofError(
          verifier().verify(challenge, {
            chainId: chain.chain.id,
            registry: registry.address,
            agentId: "99",
            signature,
            signatureType: "eip191",
          }),
          "proof_token_not_found",
          422,
        );
      });

      it("rejects evidence for another token than the challenge (proof_subject_mismatch, 422)", async () => {
        const challenge = challengeFor("erc8004", subjectOf(registry.address, 0));
        const signature = await chain.accounts[1].signMessage({ message: challenge.message });
        await expectProofError(
          verifier().verify(challenge, {
            chainId: chain.chain.id,
            registry: registry.address,
            agentId: "1",
            signature,
            signatureType: "eip191",
          }),
          "proof_subject_mismatch",
          422,
        );
      });

      describe("recheck", () => {
        it("answers ok while the proven wallet still owns the token", async () => {
          expect(await verifier().recheck(provenAgent0(registry))).to.deep.equal({ type: "ok" });
        });

        it("reports moved, with the new owner, after a transfer", async () => {
          const [from, to] = chain.accounts;
          const hash = await chain.walletClient.writeContract({
            address: registry.address,
            abi: registry.abi,
            functionName: "transferFrom",
            args: [from.address, to.address, 0n],
          });
          await chain.publicClient.waitForTransactionReceipt({ hash });
          expect(await verifier().recheck(provenAgent0(registry))).to.deep.equal({ type: "moved", newOwner: to.address.toLowerCase() });
        });

        it("reports a failed check (rejected) when the token no longer exists", async () => {
          const outcome = await verifier().recheck({
            ...provenAgent0(registry),
            agentId: "99",
            subject: `${chain.chain.id}:${registry.address.toLowerCase()}:99`,
          });
          expect(outcome).to.deep.include({ type: "failed", reason: "rejected", code: "proof_token_not_found" });
        });
      });
    });
  }

  describe("recheck", () => {
    describe("with an RPC node answering 500", () => {
      let rpc: TestHttpServer;
      before(async () => {
        rpc = await startHttpServer();
        rpc.route("POST", "/", { status: 500, body: "internal error" });
      });
      after(() => rpc.close());

      const brokenChain = () => {
        const broken = createPublicClient({ chain: chain.chain, transport: http(rpc.url, { retryCount: 0 }) });
        return createProofVerifier({
          now: () => NOW,
          publicClientFor: () => broken as PublicClient,
          sleep,
          retry: { tries: 3, baseDelayMs: 5 },
        });
      };

      it("tries 3 times with backoff, then reports the check failed as unreachable", async () => {
        const before = rpc.requests.length;
        sleep.delays.length = 0;
        const outcome = await brokenChain().recheck(provenAgent0(registry));
        expect(outcome).to.deep.include({ type: "failed", reason: "unreachable", code: "proof_source_unreachable" });
        expect(rpc.requests.length - before).to.equal(3);
        expect(sleep.delays).to.deep.equal([5, 10]);
      });

      it("answers an initial proof with a retryable 503, not a rejection", async () => {
        const challenge = challengeFor("erc8004", subjectOf(registry.address, 0));
        const signature = await chain.accounts[0].signMessage({ message: challenge.message });
        const error = await expectProofError(
          brokenChain().verify(challenge, {
            chainId: chain.chain.id,
            registry: registry.address,
            agentId: "0",
            signature,
            signatureType: "eip191",
          }),
          "proof_source_unreachable",
          503,
        );
        expect(error.retryable).to.equal(true);
      });
    });
  });
});
