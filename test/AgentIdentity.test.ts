import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { ethers, artifacts } from "hardhat";
import { Interface, type EventFragment, type FunctionFragment } from "ethers";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import { signAgentWallet } from "./helpers/agentWallet";

const WALLET_KEY = "agentWallet";
const MAX_DEADLINE_DELAY = 300n;

async function fixture() {
  const [owner, wallet, approved, operator, stranger, newOwner] = await ethers.getSigners();
  const identity = await ethers.deployContract("AgentIdentity");
  await identity.connect(owner)["register(string)"]("ipfs://agent-0");
  const agentId = 0n;
  await identity.connect(owner).approve(approved.address, agentId);
  await identity.connect(owner).setApprovalForAll(operator.address, true);
  return { identity, owner, wallet, approved, operator, stranger, newOwner, agentId };
}

/** Sets `wallet` as the agent wallet of `agentId`, signed by `wallet`, with a 2-minute deadline. */
async function setWallet(f: Awaited<ReturnType<typeof fixture>>) {
  const deadline = BigInt(await time.latest()) + 120n;
  const signature = await signAgentWallet(f.identity, f.wallet, {
    agentId: f.agentId,
    newWallet: f.wallet.address,
    owner: f.owner.address,
    deadline,
  });
  await f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature);
}

describe("AgentIdentity", function () {
  it("is the ERC-721 AgentIdentity (AGENT) with ERC-721 and ERC-4906 interfaces", async function () {
    const { identity } = await loadFixture(fixture);
    expect(await identity.name()).to.equal("AgentIdentity");
    expect(await identity.symbol()).to.equal("AGENT");
    expect(await identity.supportsInterface("0x80ac58cd")).to.equal(true);
    expect(await identity.supportsInterface("0x49064906")).to.equal(true);
    expect(await identity.getVersion()).to.equal("vrai-1.0.0");
    expect(await identity.MAX_DEADLINE_DELAY()).to.equal(MAX_DEADLINE_DELAY);
  });

  describe("register", function () {
    it("register() mints the next sequential id, from 0, to the caller", async function () {
      const [caller] = await ethers.getSigners();
      const identity = await ethers.deployContract("AgentIdentity");
      await expect(identity.connect(caller)["register()"]())
        .to.emit(identity, "Registered")
        .withArgs(0n, "", caller.address)
        .and.to.emit(identity, "Transfer")
        .withArgs(ethers.ZeroAddress, caller.address, 0n)
        .and.to.emit(identity, "MetadataSet")
        .withArgs(0n, WALLET_KEY, WALLET_KEY, caller.address.toLowerCase());
      await expect(identity.connect(caller)["register()"]()).to.emit(identity, "Registered").withArgs(1n, "", caller.address);
      expect(await identity.ownerOf(1n)).to.equal(caller.address);
      expect(await identity.balanceOf(caller.address)).to.equal(2n);
      expect(await identity.tokenURI(0n)).to.equal("");
    });

    it("register(agentURI) sets the token URI and starts the agent wallet as the owner", async function () {
      const { identity, owner, stranger } = await loadFixture(fixture);
      await expect(identity.connect(stranger)["register(string)"]("ipfs://agent-1"))
        .to.emit(identity, "Registered")
        .withArgs(1n, "ipfs://agent-1", stranger.address);
      expect(await identity.tokenURI(1n)).to.equal("ipfs://agent-1");
      expect(await identity.getAgentWallet(1n)).to.equal(stranger.address);
      expect(await identity.getAgentWallet(0n)).to.equal(owner.address);
      expect(await identity.getMetadata(1n, WALLET_KEY)).to.equal(stranger.address.toLowerCase());
    });

    it("register(agentURI, metadata) stores and emits every entry", async function () {
      const { identity, stranger } = await loadFixture(fixture);
      const metadata = [
        { metadataKey: "name", metadataValue: ethers.toUtf8Bytes("Scout") },
        { metadataKey: "did", metadataValue: ethers.toUtf8Bytes("did:web:scout.example") },
      ];
      await expect(identity.connect(stranger)["register(string,(string,bytes)[])"]("ipfs://agent-1", metadata))
        .to.emit(identity, "Registered")
        .withArgs(1n, "ipfs://agent-1", stranger.address)
        .and.to.emit(identity, "MetadataSet")
        .withArgs(1n, "name", "name", ethers.hexlify(metadata[0].metadataValue))
        .and.to.emit(identity, "MetadataSet")
        .withArgs(1n, "did", "did", ethers.hexlify(metadata[1].metadataValue));
      expect(await identity.getMetadata(1n, "name")).to.equal(ethers.hexlify(metadata[0].metadataValue));
      expect(await identity.getMetadata(1n, "did")).to.equal(ethers.hexlify(metadata[1].metadataValue));
    });

    it("refuses the reserved agentWallet key in registration metadata", async function () {
      const { identity, stranger } = await loadFixture(fixture);
      const metadata = [{ metadataKey: WALLET_KEY, metadataValue: stranger.address }];
      await expect(identity.connect(stranger)["register(string,(string,bytes)[])"]("ipfs://x", metadata))
        .to.be.revertedWithCustomError(identity, "AgentIdentityReservedMetadataKey")
        .withArgs(WALLET_KEY);
    });

    it("refuses a contract caller that cannot receive ERC-721 tokens", async function () {
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
    });
  });

  describe("setAgentURI", function () {
    it("lets the owner, the approved account and an operator change the URI", async function () {
      const { identity, owner, approved, operator, agentId } = await loadFixture(fixture);
      for (const [caller, uri] of [
        [owner, "ipfs://by-owner"],
        [approved, "ipfs://by-approved"],
        [operator, "ipfs://by-operator"],
      ] as const) {
        await expect(identity.connect(caller).setAgentURI(agentId, uri))
          .to.emit(identity, "URIUpdated")
          .withArgs(agentId, uri, caller.address);
        expect(await identity.tokenURI(agentId)).to.equal(uri);
      }
    });

    it("refuses anyone else", async function () {
      const { identity, stranger, agentId } = await loadFixture(fixture);
      await expect(identity.connect(stranger).setAgentURI(agentId, "ipfs://mine"))
        .to.be.revertedWithCustomError(identity, "ERC721InsufficientApproval")
        .withArgs(stranger.address, agentId);
    });

    it("refuses an unknown agent", async function () {
      const { identity, owner } = await loadFixture(fixture);
      await expect(identity.connect(owner).setAgentURI(7n, "ipfs://x"))
        .to.be.revertedWithCustomError(identity, "ERC721NonexistentToken")
        .withArgs(7n);
    });
  });

  describe("metadata", function () {
    it("lets a controller set an entry and reads it back", async function () {
      const { identity, operator, agentId } = await loadFixture(fixture);
      const value = ethers.toUtf8Bytes("https://scout.example/a2a");
      await expect(identity.connect(operator).setMetadata(agentId, "endpoint", value))
        .to.emit(identity, "MetadataSet")
        .withArgs(agentId, "endpoint", "endpoint", ethers.hexlify(value));
      expect(await identity.getMetadata(agentId, "endpoint")).to.equal(ethers.hexlify(value));
      expect(await identity.getMetadata(agentId, "unset")).to.equal("0x");
    });

    it("refuses a non-controller", async function () {
      const { identity, stranger, agentId } = await loadFixture(fixture);
      await expect(identity.connect(stranger).setMetadata(agentId, "endpoint", "0x01"))
        .to.be.revertedWithCustomError(identity, "ERC721InsufficientApproval")
        .withArgs(stranger.address, agentId);
    });

    it("refuses the reserved agentWallet key", async function () {
      const { identity, owner, stranger, agentId } = await loadFixture(fixture);
      await expect(identity.connect(owner).setMetadata(agentId, WALLET_KEY, stranger.address))
        .to.be.revertedWithCustomError(identity, "AgentIdentityReservedMetadataKey")
        .withArgs(WALLET_KEY);
      expect(await identity.getAgentWallet(agentId)).to.equal(owner.address);
    });

    it("refuses an unknown agent", async function () {
      const { identity, owner } = await loadFixture(fixture);
      await expect(identity.connect(owner).setMetadata(9n, "k", "0x01"))
        .to.be.revertedWithCustomError(identity, "ERC721NonexistentToken")
        .withArgs(9n);
    });
  });

  describe("agent wallet", function () {
    it("getAgentWallet refuses an unknown agent", async function () {
      const { identity } = await loadFixture(fixture);
      await expect(identity.getAgentWallet(5n)).to.be.revertedWithCustomError(identity, "ERC721NonexistentToken").withArgs(5n);
    });

    it("sets a wallet that signed the EIP-712 proof", async function () {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 120n;
      const signature = await signAgentWallet(f.identity, f.wallet, {
        agentId: f.agentId,
        newWallet: f.wallet.address,
        owner: f.owner.address,
        deadline,
      });
      await expect(f.identity.connect(f.approved).setAgentWallet(f.agentId, f.wallet.address, deadline, signature))
        .to.emit(f.identity, "MetadataSet")
        .withArgs(f.agentId, WALLET_KEY, WALLET_KEY, f.wallet.address.toLowerCase());
      expect(await f.identity.getAgentWallet(f.agentId)).to.equal(f.wallet.address);
      expect(await f.identity.getMetadata(f.agentId, WALLET_KEY)).to.equal(f.wallet.address.toLowerCase());
    });

    it("sets an ERC-1271 contract wallet whose owner signed", async function () {
      const f = await loadFixture(fixture);
      const contractWallet = await ethers.deployContract("ERC1271OwnerWallet", [f.wallet.address]);
      const newWallet = await contractWallet.getAddress();
      const deadline = BigInt(await time.latest()) + 60n;
      const signature = await signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet, owner: f.owner.address, deadline });
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, newWallet, deadline, signature))
        .to.emit(f.identity, "MetadataSet")
        .withArgs(f.agentId, WALLET_KEY, WALLET_KEY, newWallet.toLowerCase());
      expect(await f.identity.getAgentWallet(f.agentId)).to.equal(newWallet);
    });

    it("refuses an ERC-1271 wallet that rejects the signature", async function () {
      const f = await loadFixture(fixture);
      const contractWallet = await ethers.deployContract("ERC1271OwnerWallet", [f.wallet.address]);
      const newWallet = await contractWallet.getAddress();
      const deadline = BigInt(await time.latest()) + 60n;
      const signature = await signAgentWallet(f.identity, f.stranger, { agentId: f.agentId, newWallet, owner: f.owner.address, deadline });
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, newWallet, deadline, signature))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityInvalidWalletSignature")
        .withArgs(newWallet);
    });

    it("refuses a signature by another account, or over another owner, agent or deadline", async function () {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 120n;
      const good = { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline };
      const bad = [
        await signAgentWallet(f.identity, f.stranger, good),
        await signAgentWallet(f.identity, f.wallet, { ...good, owner: f.newOwner.address }),
        await signAgentWallet(f.identity, f.wallet, { ...good, agentId: 1n }),
        await signAgentWallet(f.identity, f.wallet, { ...good, deadline: deadline + 1n }),
        "0x1234",
      ];
      for (const signature of bad) {
        await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature))
          .to.be.revertedWithCustomError(f.identity, "AgentIdentityInvalidWalletSignature")
          .withArgs(f.wallet.address);
      }
    });

    it("refuses an expired deadline", async function () {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 10n;
      const signature = await signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline });
      await time.setNextBlockTimestamp(deadline + 1n);
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityExpiredDeadline")
        .withArgs(deadline);
    });

    it("accepts a deadline exactly 5 minutes ahead and refuses one second more", async function () {
      const f = await loadFixture(fixture);
      const now = BigInt(await time.latest()) + 10n;
      const sign = (deadline: bigint) =>
        signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline });
      const tooFar = now + MAX_DEADLINE_DELAY + 1n;
      await time.setNextBlockTimestamp(now);
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, tooFar, await sign(tooFar)))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityDeadlineTooFar")
        .withArgs(tooFar, now + MAX_DEADLINE_DELAY);
      const limit = now + 1n + MAX_DEADLINE_DELAY;
      await time.setNextBlockTimestamp(now + 1n);
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, limit, await sign(limit))).to.emit(
        f.identity,
        "MetadataSet",
      );
    });

    it("refuses the zero wallet", async function () {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 60n;
      await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, ethers.ZeroAddress, deadline, "0x"))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityInvalidAgentWallet")
        .withArgs(ethers.ZeroAddress);
    });

    it("refuses a caller that does not control the agent, even with the wallet's signature", async function () {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 60n;
      const signature = await signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline });
      await expect(f.identity.connect(f.wallet).setAgentWallet(f.agentId, f.wallet.address, deadline, signature))
        .to.be.revertedWithCustomError(f.identity, "ERC721InsufficientApproval")
        .withArgs(f.wallet.address, f.agentId);
    });

    it("unsetAgentWallet clears the wallet", async function () {
      const f = await loadFixture(fixture);
      await setWallet(f);
      await expect(f.identity.connect(f.operator).unsetAgentWallet(f.agentId))
        .to.emit(f.identity, "MetadataSet")
        .withArgs(f.agentId, WALLET_KEY, WALLET_KEY, "0x");
      expect(await f.identity.getAgentWallet(f.agentId)).to.equal(ethers.ZeroAddress);
      expect(await f.identity.getMetadata(f.agentId, WALLET_KEY)).to.equal("0x");
    });

    it("unsetAgentWallet refuses a non-controller, including the wallet itself", async function () {
      const f = await loadFixture(fixture);
      await setWallet(f);
      for (const caller of [f.stranger, f.wallet]) {
        await expect(f.identity.connect(caller).unsetAgentWallet(f.agentId))
          .to.be.revertedWithCustomError(f.identity, "ERC721InsufficientApproval")
          .withArgs(caller.address, f.agentId);
      }
    });
  });

  describe("transfer", function () {
    for (const method of ["transferFrom", "safeTransferFrom(address,address,uint256)", "safeTransferFrom(address,address,uint256,bytes)"]) {
      it(`clears the agent wallet on ${method}`, async function () {
        const f = await loadFixture(fixture);
        await setWallet(f);
        const args =
          method === "safeTransferFrom(address,address,uint256,bytes)"
            ? [f.owner.address, f.newOwner.address, f.agentId, "0x"]
            : [f.owner.address, f.newOwner.address, f.agentId];
        const identity = f.identity.connect(f.owner) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
        await expect(identity[method](...args))
          .to.emit(f.identity, "MetadataSet")
          .withArgs(f.agentId, WALLET_KEY, WALLET_KEY, "0x")
          .and.to.emit(f.identity, "Transfer")
          .withArgs(f.owner.address, f.newOwner.address, f.agentId);
        expect(await f.identity.getAgentWallet(f.agentId)).to.equal(ethers.ZeroAddress);
        expect(await f.identity.ownerOf(f.agentId)).to.equal(f.newOwner.address);
      });
    }

    it("clears the wallet set at registration, even on a transfer to oneself", async function () {
      const { identity, owner, agentId } = await loadFixture(fixture);
      expect(await identity.getAgentWallet(agentId)).to.equal(owner.address);
      await expect(identity.connect(owner).transferFrom(owner.address, owner.address, agentId))
        .to.emit(identity, "MetadataSet")
        .withArgs(agentId, WALLET_KEY, WALLET_KEY, "0x");
      expect(await identity.getAgentWallet(agentId)).to.equal(ethers.ZeroAddress);
    });

    it("emits no wallet change when no wallet is set", async function () {
      const { identity, owner, newOwner, agentId } = await loadFixture(fixture);
      await identity.connect(owner).unsetAgentWallet(agentId);
      await expect(identity.connect(owner).transferFrom(owner.address, newOwner.address, agentId)).not.to.emit(identity, "MetadataSet");
    });

    it("invalidates a wallet proof signed for the previous owner", async function () {
      const f = await loadFixture(fixture);
      const deadline = BigInt(await time.latest()) + 120n;
      const signature = await signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline });
      await f.identity.connect(f.owner).transferFrom(f.owner.address, f.newOwner.address, f.agentId);
      await expect(f.identity.connect(f.newOwner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature))
        .to.be.revertedWithCustomError(f.identity, "AgentIdentityInvalidWalletSignature")
        .withArgs(f.wallet.address);
    });
  });

  describe("ERC-8004 ABI", function () {
    const vectorFile = path.join(__dirname, "..", "..", "shared", "vectors", "erc8004", "IdentityRegistry.abi.json");
    const FUNCTIONS = [
      "register",
      "setAgentURI",
      "getMetadata",
      "setMetadata",
      "getAgentWallet",
      "setAgentWallet",
      "unsetAgentWallet",
      "balanceOf",
      "ownerOf",
      "approve",
      "getApproved",
      "setApprovalForAll",
      "isApprovedForAll",
      "transferFrom",
      "safeTransferFrom",
      "tokenURI",
      "name",
      "symbol",
      "supportsInterface",
      "getVersion",
      "eip712Domain",
    ];
    const EVENTS = ["Registered", "MetadataSet", "URIUpdated", "Transfer", "Approval", "ApprovalForAll", "MetadataUpdate", "BatchMetadataUpdate"];

    it("has every ERC-8004 identity function of the canonical ABI, with the same selector and outputs", async function () {
      const canonical = new Interface(JSON.parse(fs.readFileSync(vectorFile, "utf8")));
      const ours = new Interface((await artifacts.readArtifact("AgentIdentity")).abi);
      const expected = canonical.fragments.filter(
        (fragment): fragment is FunctionFragment => fragment.type === "function" && FUNCTIONS.includes((fragment as FunctionFragment).name),
      );
      expect(expected.map((fragment) => fragment.name).filter((name) => name === "register")).to.have.length(3);
      for (const fragment of expected) {
        const mine = ours.getFunction(fragment.selector);
        expect(mine, fragment.format("sighash")).to.not.equal(null);
        expect(mine!.format("full"), fragment.format("sighash")).to.equal(fragment.format("full"));
      }
    });

    it("has every ERC-8004 identity event of the canonical ABI, with the same topic and indexed parameters", async function () {
      const canonical = new Interface(JSON.parse(fs.readFileSync(vectorFile, "utf8")));
      const ours = new Interface((await artifacts.readArtifact("AgentIdentity")).abi);
      const expected = canonical.fragments.filter(
        (fragment): fragment is EventFragment => fragment.type === "event" && EVENTS.includes((fragment as EventFragment).name),
      );
      expect(expected).to.have.length(EVENTS.length);
      for (const fragment of expected) {
        const mine = ours.getEvent(fragment.topicHash);
        expect(mine, fragment.format("sighash")).to.not.equal(null);
        expect(mine!.inputs.map((input) => input.indexed)).to.deep.equal(fragment.inputs.map((input) => input.indexed));
      }
    });
  });
});
