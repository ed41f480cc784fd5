import { expect } from "./helpers/expect";
import { ethers } from "hardhat";
import type { ContractTransactionResponse } from "ethers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import { time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import type { AgentIdentity } from "../typechain-types";
import { signAgentWallet } from "./helpers/agentWallet";

const WALLET_KEY = "agentWallet";
// The reference registry's bound on a wallet signature's deadline.
const MAX_DEADLINE_DELAY = 300n;

/** An identity registry with agent 0 registered by `owner` as "ipfs://agent-0", `approved` approved for it and `operator` approved for all. */
export type IdentityRegistryFixture = {
  identity: AgentIdentity;
  owner: HardhatEthersSigner;
  wallet: HardhatEthersSigner;
  approved: HardhatEthersSigner;
  operator: HardhatEthersSigner;
  stranger: HardhatEthersSigner;
  newOwner: HardhatEthersSigner;
  agentId: bigint;
};

/** Registers agent 0 and sets its approvals on a freshly deployed `identity` (the fixture both registries share). */
export async function registerFixtureAgent(identity: AgentIdentity): Promise<IdentityRegistryFixture> {
  const [owner, wallet, approved, operator, stranger, newOwner] = await ethers.getSigners();
  await identity.connect(owner)["register(string)"]("ipfs://agent-0");
  const agentId = 0n;
  await identity.connect(owner).approve(approved.address, agentId);
  await identity.connect(owner).setApprovalForAll(operator.address, true);
  return { identity, owner, wallet, approved, operator, stranger, newOwner, agentId };
}

/** The events of a transaction of `identity`, in order, as `Name(arg, ...)` (an indexed string shows as its hash). */
async function eventsOf(identity: AgentIdentity, tx: Promise<ContractTransactionResponse>): Promise<string[]> {
  const receipt = await (await tx).wait();
  return receipt!.logs.map((log) => {
    const parsed = identity.interface.parseLog(log);
    if (!parsed) return `unknown ${log.topics[0]}`;
    const args = parsed.args.map((arg: unknown) =>
      arg !== null && typeof arg === "object" && "hash" in arg ? String(arg.hash) : String(arg),
    );
    return `${parsed.name}(${args.join(",")})`;
  });
}

const keyTopic = (key: string) => ethers.id(key);

/** Sets `f.wallet` as the agent wallet of `f.agentId`, signed by it, with a 2-minute deadline. */
async function setWallet(f: IdentityRegistryFixture): Promise<void> {
  const deadline = BigInt(await time.latest()) + 120n;
  const signature = await signAgentWallet(f.identity, f.wallet, {
    agentId: f.agentId,
    newWallet: f.wallet.address,
    owner: f.owner.address,
    deadline,
  });
  await (await f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature)).wait();
}

/**
 * What an ERC-8004 user sees of an identity registry, shared by the reference `IdentityRegistryUpgradeable` and
 * the project's `AgentIdentity` (measured on the reference: test/fixtures/erc8004/README.md). Reverts are asserted
 * without their reason: the reference reverts with strings, AgentIdentity with custom errors (its own tests name them).
 * @param fixture a `loadFixture`-able function returning a registry prepared by {@link registerFixtureAgent}
 */
export function shouldBehaveLikeERC8004IdentityRegistry(fixture: () => Promise<IdentityRegistryFixture>): void {
  describe("as an ERC-8004 identity registry", () => {
    it("is the ERC-721 AgentIdentity (AGENT) with ERC-721 and ERC-4906 interfaces and the ERC-8004 EIP-712 domain", async () => {
      const { identity } = await fixture();
      expect(await identity.name()).to.equal("AgentIdentity");
      expect(await identity.symbol()).to.equal("AGENT");
      expect(await identity.supportsInterface("0x80ac58cd")).to.equal(true);
      expect(await identity.supportsInterface("0x49064906")).to.equal(true);
      const domain = await identity.eip712Domain();
      expect([domain.name, domain.version, domain.chainId, domain.verifyingContract]).to.deep.equal([
        "ERC8004IdentityRegistry",
        "1",
        31337n,
        await identity.getAddress(),
      ]);
    });

    describe("register", () => {
      it("register() mints id 1 after 0: Transfer, Registered, then the agent wallet's MetadataSet", async () => {
        const { identity, stranger } = await fixture();
        expect(await eventsOf(identity, identity.connect(stranger)["register()"]())).to.deep.equal([
          `Transfer(${ethers.ZeroAddress},${stranger.address},1)`,
          `Registered(1,,${stranger.address})`,
          `MetadataSet(1,${keyTopic(WALLET_KEY)},${WALLET_KEY},${stranger.address.toLowerCase()})`,
        ]);
        expect(await identity.ownerOf(1n)).to.equal(stranger.address);
        expect(await identity.tokenURI(1n)).to.equal("");
      });

      it("register(agentURI): Transfer, MetadataUpdate, Registered, then the agent wallet's MetadataSet", async () => {
        const { identity, owner, stranger } = await fixture();
        expect(await eventsOf(identity, identity.connect(stranger)["register(string)"]("ipfs://agent-1"))).to.deep.equal([
          `Transfer(${ethers.ZeroAddress},${stranger.address},1)`,
          "MetadataUpdate(1)",
          `Registered(1,ipfs://agent-1,${stranger.address})`,
          `MetadataSet(1,${keyTopic(WALLET_KEY)},${WALLET_KEY},${stranger.address.toLowerCase()})`,
        ]);
        expect(await identity.tokenURI(1n)).to.equal("ipfs://agent-1");
        expect(await identity.getAgentWallet(1n)).to.equal(stranger.address);
        expect(await identity.getAgentWallet(0n)).to.equal(owner.address);
        expect(await identity.getMetadata(1n, WALLET_KEY)).to.equal(stranger.address.toLowerCase());
        expect(await identity.balanceOf(stranger.address)).to.equal(1n);
      });

      it("register(agentURI, metadata) emits every entry after the agent wallet and stores them", async () => {
        const { identity, stranger } = await fixture();
        const metadata = [
          { metadataKey: "name", metadataValue: ethers.toUtf8Bytes("Scout") },
          { metadataKey: "did", metadataValue: ethers.toUtf8Bytes("did:web:scout.example") },
        ];
        const [name, did] = metadata.map((entry) => ethers.hexlify(entry.metadataValue));
        expect(await eventsOf(identity, identity.connect(stranger)["register(string,(string,bytes)[])"]("", metadata))).to.deep.equal([
          `Transfer(${ethers.ZeroAddress},${stranger.address},1)`,
          "MetadataUpdate(1)",
          `Registered(1,,${stranger.address})`,
          `MetadataSet(1,${keyTopic(WALLET_KEY)},${WALLET_KEY},${stranger.address.toLowerCase()})`,
          `MetadataSet(1,${keyTopic("name")},name,${name})`,
          `MetadataSet(1,${keyTopic("did")},did,${did})`,
        ]);
        expect(await identity.getMetadata(1n, "name")).to.equal(name);
        expect(await identity.getMetadata(1n, "did")).to.equal(did);
        expect(await identity.getMetadata(1n, "unset")).to.equal("0x");
      });

      it("refuses the reserved agentWallet key in registration metadata", async () => {
        const { identity, stranger } = await fixture();
        await expect(
          identity
            .connect(stranger)
            ["register(string,(string,bytes)[])"]("ipfs://x", [{ metadataKey: WALLET_KEY, metadataValue: stranger.address }]),
        ).to.be.reverted;
      });
    });

    describe("URI and metadata", () => {
      it("lets the owner, the approved account and an operator change the URI: MetadataUpdate, then URIUpdated", async () => {
        const { identity, owner, approved, operator, agentId } = await fixture();
        for (const [caller, uri] of [
          [owner, "ipfs://by-owner"],
          [approved, "ipfs://by-approved"],
          [operator, "ipfs://by-operator"],
        ] as const) {
          expect(await eventsOf(identity, identity.connect(caller).setAgentURI(agentId, uri))).to.deep.equal([
            `MetadataUpdate(${agentId})`,
            `URIUpdated(${agentId},${uri},${caller.address})`,
          ]);
          expect(await identity.tokenURI(agentId)).to.equal(uri);
        }
      });

      it("refuses a URI or metadata change by anyone else, and of an unknown agent", async () => {
        const { identity, owner, stranger, agentId } = await fixture();
        await expect(identity.connect(stranger).setAgentURI(agentId, "ipfs://mine")).to.be.reverted;
        await expect(identity.connect(stranger).setMetadata(agentId, "endpoint", "0x01")).to.be.reverted;
        await expect(identity.connect(owner).setAgentURI(7n, "ipfs://x"))
          .to.be.revertedWithCustomError(identity, "ERC721NonexistentToken")
          .withArgs(7n);
      });

      it("lets a controller set an entry and reads it back, but not the reserved agentWallet key", async () => {
        const { identity, owner, operator, stranger, agentId } = await fixture();
        const value = ethers.hexlify(ethers.toUtf8Bytes("https://scout.example/a2a"));
        expect(await eventsOf(identity, identity.connect(operator).setMetadata(agentId, "endpoint", value))).to.deep.equal([
          `MetadataSet(${agentId},${keyTopic("endpoint")},endpoint,${value})`,
        ]);
        expect(await identity.getMetadata(agentId, "endpoint")).to.equal(value);
        await expect(identity.connect(owner).setMetadata(agentId, WALLET_KEY, stranger.address)).to.be.reverted;
        expect(await identity.getAgentWallet(agentId)).to.equal(owner.address);
      });
    });

    describe("control", () => {
      it("isAuthorizedOrOwner: the owner, the approved account and an operator, nobody else", async () => {
        const { identity, owner, approved, operator, stranger, wallet, agentId } = await fixture();
        for (const account of [owner, approved, operator])
          expect(await identity.isAuthorizedOrOwner(account.address, agentId), account.address).to.equal(true);
        for (const account of [stranger, wallet])
          expect(await identity.isAuthorizedOrOwner(account.address, agentId), account.address).to.equal(false);
      });

      it("isAuthorizedOrOwner refuses an unknown agent", async () => {
        const { identity, owner } = await fixture();
        await expect(identity.isAuthorizedOrOwner(owner.address, 99n))
          .to.be.revertedWithCustomError(identity, "ERC721NonexistentToken")
          .withArgs(99n);
      });

      it("getAgentWallet of an agent that does not exist is the zero address", async () => {
        const { identity } = await fixture();
        expect(await identity.getAgentWallet(5n)).to.equal(ethers.ZeroAddress);
        expect(await identity.getMetadata(5n, WALLET_KEY)).to.equal("0x");
      });
    });

    describe("agent wallet", () => {
      it("sets a wallet that signed the EIP-712 proof, by any controller", async () => {
        const f = await fixture();
        const deadline = BigInt(await time.latest()) + 120n;
        const signature = await signAgentWallet(f.identity, f.wallet, {
          agentId: f.agentId,
          newWallet: f.wallet.address,
          owner: f.owner.address,
          deadline,
        });
        expect(
          await eventsOf(f.identity, f.identity.connect(f.approved).setAgentWallet(f.agentId, f.wallet.address, deadline, signature)),
        ).to.deep.equal([`MetadataSet(${f.agentId},${keyTopic(WALLET_KEY)},${WALLET_KEY},${f.wallet.address.toLowerCase()})`]);
        expect(await f.identity.getAgentWallet(f.agentId)).to.equal(f.wallet.address);
        expect(await f.identity.getMetadata(f.agentId, WALLET_KEY)).to.equal(f.wallet.address.toLowerCase());
      });

      it("sets an ERC-1271 contract wallet whose owner signed, and refuses one whose owner did not", async () => {
        const f = await fixture();
        const contractWallet = await ethers.deployContract("ERC1271OwnerWallet", [f.wallet.address]);
        const newWallet = await contractWallet.getAddress();
        const deadline = BigInt(await time.latest()) + 60n;
        const message = { agentId: f.agentId, newWallet, owner: f.owner.address, deadline };
        await expect(
          f.identity
            .connect(f.owner)
            .setAgentWallet(f.agentId, newWallet, deadline, await signAgentWallet(f.identity, f.stranger, message)),
        ).to.be.reverted;
        await f.identity
          .connect(f.owner)
          .setAgentWallet(f.agentId, newWallet, deadline, await signAgentWallet(f.identity, f.wallet, message));
        expect(await f.identity.getAgentWallet(f.agentId)).to.equal(newWallet);
      });

      it("refuses a signature by another account, or over another owner, agent or deadline", async () => {
        const f = await fixture();
        const deadline = BigInt(await time.latest()) + 120n;
        const good = { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline };
        const bad = [
          await signAgentWallet(f.identity, f.stranger, good),
          await signAgentWallet(f.identity, f.wallet, { ...good, owner: f.newOwner.address }),
          await signAgentWallet(f.identity, f.wallet, { ...good, agentId: 1n }),
          await signAgentWallet(f.identity, f.wallet, { ...good, deadline: deadline + 1n }),
          "0x1234",
        ];
        for (const signature of bad)
          await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature)).to.be.reverted;
        expect(await f.identity.getAgentWallet(f.agentId)).to.equal(f.owner.address);
      });

      it("accepts a deadline exactly 5 minutes ahead, refuses one second more and one past", async () => {
        const f = await fixture();
        const now = BigInt(await time.latest()) + 10n;
        const sign = (deadline: bigint) =>
          signAgentWallet(f.identity, f.wallet, { agentId: f.agentId, newWallet: f.wallet.address, owner: f.owner.address, deadline });
        await time.setNextBlockTimestamp(now);
        await expect(
          f.identity
            .connect(f.owner)
            .setAgentWallet(f.agentId, f.wallet.address, now + MAX_DEADLINE_DELAY + 1n, await sign(now + MAX_DEADLINE_DELAY + 1n)),
        ).to.be.reverted;
        await time.setNextBlockTimestamp(now + 1n);
        await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, f.wallet.address, now, await sign(now))).to.be.reverted;
        await time.setNextBlockTimestamp(now + 2n);
        await f.identity
          .connect(f.owner)
          .setAgentWallet(f.agentId, f.wallet.address, now + 2n + MAX_DEADLINE_DELAY, await sign(now + 2n + MAX_DEADLINE_DELAY));
        expect(await f.identity.getAgentWallet(f.agentId)).to.equal(f.wallet.address);
      });

      it("refuses the zero wallet, and a caller that does not control the agent even with the wallet's signature", async () => {
        const f = await fixture();
        const deadline = BigInt(await time.latest()) + 60n;
        await expect(f.identity.connect(f.owner).setAgentWallet(f.agentId, ethers.ZeroAddress, deadline, "0x")).to.be.reverted;
        const signature = await signAgentWallet(f.identity, f.wallet, {
          agentId: f.agentId,
          newWallet: f.wallet.address,
          owner: f.owner.address,
          deadline,
        });
        await expect(f.identity.connect(f.wallet).setAgentWallet(f.agentId, f.wallet.address, deadline, signature)).to.be.reverted;
      });

      it("unsetAgentWallet clears the wallet, emitting its MetadataSet even when none is set; others are refused", async () => {
        const f = await fixture();
        await setWallet(f);
        for (const caller of [f.stranger, f.wallet]) await expect(f.identity.connect(caller).unsetAgentWallet(f.agentId)).to.be.reverted;
        const cleared = `MetadataSet(${f.agentId},${keyTopic(WALLET_KEY)},${WALLET_KEY},0x)`;
        expect(await eventsOf(f.identity, f.identity.connect(f.operator).unsetAgentWallet(f.agentId))).to.deep.equal([cleared]);
        expect(await eventsOf(f.identity, f.identity.connect(f.owner).unsetAgentWallet(f.agentId))).to.deep.equal([cleared]);
        expect(await f.identity.getAgentWallet(f.agentId)).to.equal(ethers.ZeroAddress);
        expect(await f.identity.getMetadata(f.agentId, WALLET_KEY)).to.equal("0x");
      });
    });

    describe("transfer", () => {
      for (const method of [
        "transferFrom",
        "safeTransferFrom(address,address,uint256)",
        "safeTransferFrom(address,address,uint256,bytes)",
      ] as const) {
        it(`clears the agent wallet on ${method}: its MetadataSet, then Transfer`, async () => {
          const f = await fixture();
          await setWallet(f);
          const identity = f.identity.connect(f.owner);
          const tx =
            method === "transferFrom"
              ? identity.transferFrom(f.owner.address, f.newOwner.address, f.agentId)
              : method === "safeTransferFrom(address,address,uint256)"
                ? identity["safeTransferFrom(address,address,uint256)"](f.owner.address, f.newOwner.address, f.agentId)
                : identity["safeTransferFrom(address,address,uint256,bytes)"](f.owner.address, f.newOwner.address, f.agentId, "0x");
          expect(await eventsOf(f.identity, tx)).to.deep.equal([
            `MetadataSet(${f.agentId},${keyTopic(WALLET_KEY)},${WALLET_KEY},0x)`,
            `Transfer(${f.owner.address},${f.newOwner.address},${f.agentId})`,
          ]);
          expect(await f.identity.getAgentWallet(f.agentId)).to.equal(ethers.ZeroAddress);
          expect(await f.identity.ownerOf(f.agentId)).to.equal(f.newOwner.address);
        });
      }

      it("emits the cleared wallet before Transfer even when no wallet is set, and on a transfer to oneself", async () => {
        const { identity, owner, newOwner, agentId } = await fixture();
        const cleared = `MetadataSet(${agentId},${keyTopic(WALLET_KEY)},${WALLET_KEY},0x)`;
        expect(await eventsOf(identity, identity.connect(owner).transferFrom(owner.address, owner.address, agentId))).to.deep.equal([
          cleared,
          `Transfer(${owner.address},${owner.address},${agentId})`,
        ]);
        expect(await identity.getAgentWallet(agentId)).to.equal(ethers.ZeroAddress);
        expect(await eventsOf(identity, identity.connect(owner).transferFrom(owner.address, newOwner.address, agentId))).to.deep.equal([
          cleared,
          `Transfer(${owner.address},${newOwner.address},${agentId})`,
        ]);
      });

      it("moves control with the token and invalidates a wallet proof signed for the previous owner", async () => {
        const f = await fixture();
        const deadline = BigInt(await time.latest()) + 120n;
        const signature = await signAgentWallet(f.identity, f.wallet, {
          agentId: f.agentId,
          newWallet: f.wallet.address,
          owner: f.owner.address,
          deadline,
        });
        await f.identity.connect(f.owner).transferFrom(f.owner.address, f.newOwner.address, f.agentId);
        for (const account of [f.owner, f.approved, f.operator])
          expect(await f.identity.isAuthorizedOrOwner(account.address, f.agentId)).to.equal(false);
        expect(await f.identity.isAuthorizedOrOwner(f.newOwner.address, f.agentId)).to.equal(true);
        await expect(f.identity.connect(f.newOwner).setAgentWallet(f.agentId, f.wallet.address, deadline, signature)).to.be.reverted;
      });
    });
  });
}
