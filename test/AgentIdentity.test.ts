import { expect } from "./helpers/expect";
import { ethers, artifacts } from "hardhat";
import { Interface, type EventFragment, type FunctionFragment } from "ethers";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import { signAgentWallet } from "./helpers/agentWallet";
import { deployReferenceIdentity } from "./helpers/erc8004Reference";
import referenceIdentity from "./fixtures/erc8004/IdentityRegistryUpgradeable.json";
import { registerFixtureAgent, shouldBehaveLikeERC8004IdentityRegistry } from "./IdentityRegistry.behavior";

const WALLET_KEY = "agentWallet";
const MAX_DEADLINE_DELAY = 300n;

async function fixture() {
  return registerFixtureAgent(await ethers.deployContract("AgentIdentity"));
}

/** The reference registry behind its proxy, prepared as {@link fixture}. */
async function referenceFixture() {
  return registerFixtureAgent(await deployReferenceIdentity());
}

describe("AgentIdentity", () => {
  shouldBehaveLikeERC8004IdentityRegistry(() => loadFixture(fixture));

  it("answers its own version", async () => {
    const { identity } = await loadFixture(fixture);
    expect(await identity.getVersion()).to.equal("vrai-1.0.0");
  });

  describe("reverts with custom errors (the reference reverts with strings)", () => {
    it("refuses the reserved agentWallet key in registration metadata and in setMetadata", async () => {
      const { identity, owner, stranger, agentId } = await loadFixture(fixture);
      const metadata = [{ metadataKey: WALLET_KEY, metadataValue: stranger.address }];
      await expect(identity.connect(stranger)["register(string,(string,bytes)[])"]("ipfs://x", metadata))
        .to.be.revertedWithCustomError(identity, "AgentIdentityReservedMetadataKey")
        .withArgs(WALLET_KEY);
      await expect(identity.connect(owner).setMetadata(agentId, WALLET_KEY, stranger.address))
        .to.be.revertedWithCustomError(identity, "AgentIdentityReservedMetadataKey")
        .withArgs(WALLET_KEY);
    });

    it("refuses a contract caller that cannot receive ERC-721 tokens, after registering nothing", async () => {
      const { identity } = await loadFixture(fixture);
      const nonReceiver = await ethers.deployContract("AnchorRegistry", [ethers.ZeroAddress]);
      const data = identity.interface.encodeFunctionData("register()");
      const nonReceiverAddress = await nonReceiver.getAddress();
      await ethers.provider.send("hardhat_setBalance", [nonReceiverAddress, "0xde0b6b3a7640000"]);
      await ethers.provider.send("hardhat_impersonateAccount", [nonReceiverAddress]);
      const signer = await ethers.getSigner(nonReceiverAddress);
      await expect(signer.sendTransaction({ to: await identity.getAddress(), data }))
        .to.be.revertedWithCustomError(identity, "ERC721InvalidReceiver")
        .withArgs(nonReceiverAddress);
      expect(await identity.getAgentWallet(1n)).to.equal(ethers.ZeroAddress);
    });

    it("refuses a non-controller's URI, metadata and wallet changes with ERC721InsufficientApproval", async () => {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 60n;
      const signature = await signAgentWallet(f.identity, f.wallet, {
        agentId: f.agentId,
        newWallet: f.wallet.address,
        owner: f.owner.address,
        deadline,
      });
      const calls = [
        [f.stranger, () => f.identity.connect(f.stranger).setAgentURI(f.agentId, "ipfs://mine")],
        [f.stranger, () => f.identity.connect(f.stranger).setMetadata(f.agentId, "endpoint", "0x01")],
        [f.wallet, () => f.identity.connect(f.wallet).setAgentWallet(f.agentId, f.wallet.address, deadline, signature)],
        [f.wallet, () => f.identity.connect(f.wallet).unsetAgentWallet(f.agentId)],
      ] as const;
      for (const [caller, call] of calls) {
        await expect(call()).to.be.revertedWithCustomError(f.identity, "ERC721InsufficientApproval").withArgs(caller.address, f.agentId);
      }
    });

    it("names a bad wallet signature, the zero wallet and deadlines past or too far", async () => {
      const f = await loadFixture(fixture);
      const now = BigInt(await time.latest()) + 10n;
      const sign = (deadline: bigint) =>
        signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline });
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, now + 60n, "0x1234"))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityInvalidWalletSignature")
        .withArgs(f.wallet.address);
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, ethers.ZeroAddress, now + 60n, "0x"))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityInvalidAgentWallet")
        .withArgs(ethers.ZeroAddress);
      const tooFar = now + MAX_DEADLINE_DELAY + 1n;
      await time.setNextBlockTimestamp(now);
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, tooFar, await sign(tooFar)))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityDeadlineTooFar")
        .withArgs(tooFar, now + MAX_DEADLINE_DELAY);
      await time.setNextBlockTimestamp(now + 2n);
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, now + 1n, await sign(now + 1n)))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityExpiredDeadline")
        .withArgs(now + 1n);
    });
  });

  describe("ERC-8004 ABI, against the compiled reference", () => {
    const reference = new Interface(referenceIdentity.abi);
    // The reference's UUPS upgrade and Ownable administration of its proxy: no ERC-8004 function, and AgentIdentity
    // is not upgradeable.
    const PROXY_ADMINISTRATION = [
      "UPGRADE_INTERFACE_VERSION()",
      "initialize()",
      "owner()",
      "proxiableUUID()",
      "renounceOwnership()",
      "transferOwnership(address)",
      "upgradeToAndCall(address,bytes)",
    ];
    const PROXY_EVENTS = ["Initialized(uint64)", "OwnershipTransferred(address,address)", "Upgraded(address)"];
    const functionsOf = (abi: Interface) =>
      abi.fragments
        .filter((fragment): fragment is FunctionFragment => fragment.type === "function")
        .map((fragment) => fragment.format("full"))
        .sort();

    it("has the reference's functions, with the same inputs, outputs and mutability, and no other", async () => {
      const ours = new Interface((await artifacts.readArtifact("AgentIdentity")).abi);
      const expected = functionsOf(reference).filter(
        (full) => !PROXY_ADMINISTRATION.some((sighash) => full === reference.getFunction(sighash)!.format("full")),
      );
      expect(expected).to.have.length(functionsOf(reference).length - PROXY_ADMINISTRATION.length);
      expect(expected.filter((full) => full.startsWith("function register("))).to.have.length(3);
      expect(expected.some((full) => full.startsWith("function isAuthorizedOrOwner("))).to.equal(true);
      expect(functionsOf(ours)).to.deep.equal(expected);
    });

    it("has every event of the reference but its proxy's, with the same topic and indexed parameters", async () => {
      const ours = new Interface((await artifacts.readArtifact("AgentIdentity")).abi);
      const expected = reference.fragments.filter(
        (fragment): fragment is EventFragment =>
          fragment.type === "event" && !PROXY_EVENTS.includes((fragment as EventFragment).format("sighash")),
      );
      expect(expected.map((fragment) => fragment.name).sort()).to.deep.equal([
        "Approval",
        "ApprovalForAll",
        "BatchMetadataUpdate",
        "EIP712DomainChanged",
        "MetadataSet",
        "MetadataUpdate",
        "Registered",
        "Transfer",
        "URIUpdated",
      ]);
      for (const fragment of expected) {
        const mine = ours.getEvent(fragment.topicHash);
        expect(mine, fragment.format("sighash")).to.not.equal(null);
        expect(mine!.inputs.map((input) => input.indexed)).to.deep.equal(fragment.inputs.map((input) => input.indexed));
      }
    });
  });
});

describe("the reference IdentityRegistryUpgradeable behind its ERC1967 proxy (what AgentIdentity stands in for)", () => {
  shouldBehaveLikeERC8004IdentityRegistry(() => loadFixture(referenceFixture));

  it("answers the reference's version", async () => {
    const { identity } = await loadFixture(referenceFixture);
    expect(await identity.getVersion()).to.equal("2.0.0");
  });
});
