/**
 * AnchorRegistry under random sequences of calls (issue #30): anchors and roots by accounts holding either
 * role, both or neither, grants, revokes and renunciations, time passing. A model says what each call must
 * do (succeed, or revert with which error); after every call each anchor ever made reads back exactly as it
 * was made: no anchor is ever changed or removed (METHOD A6, write-once per role).
 */
import { expect } from "./helpers/expect";
import fc from "fast-check";
import { ethers } from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-toolbox/network-helpers";
import type { HardhatEthersSigner } from "@nomicfoundation/hardhat-ethers/signers";
import type { AnchorRegistry } from "../typechain-types";
import { waitCommand } from "./helpers/invariants";

const ANCHORER = 0;
const VERIFIER = 1;
/** A few digests, so that calls meet the same digest again; the zero digest is refused. */
const DIGESTS = [ethers.id("digest 0"), ethers.id("digest 1"), ethers.id("digest 2"), ethers.id("digest 3"), ethers.ZeroHash];
const KINDS = [ethers.encodeBytes32String("vrai-score-day"), ethers.encodeBytes32String("trace-root")];
/** IAnchorRegistry.kindTagOf: the first 4 bytes of keccak256(abi.encode(kind)). */
const tagOf = (kind: string) => ethers.dataSlice(ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["bytes32"], [kind])), 0, 4);

async function fixture() {
  const [admin, ...accounts] = await ethers.getSigners();
  const anchors = await ethers.deployContract("AnchorRegistry", [admin.address]);
  const roles = [await anchors.ANCHORER_ROLE(), await anchors.VERIFIER_ROLE()];
  // admin and four accounts: an anchorer, a verifier, one holding both and one holding neither, until the calls change that.
  const signers = [admin, ...accounts.slice(0, 4)];
  await anchors.grantRole(roles[ANCHORER], signers[1].address);
  await anchors.grantRole(roles[VERIFIER], signers[2].address);
  await anchors.grantRole(roles[ANCHORER], signers[3].address);
  await anchors.grantRole(roles[VERIFIER], signers[3].address);
  return { anchors, signers, roles };
}

type Real = { anchors: AnchorRegistry; signers: HardhatEthersSigner[]; roles: string[] };
type StoredAnchor = { anchoredAt: bigint; submitter: string; isRoot: boolean; kindTag: string };
/** Every anchor made, by digest and role, and the anchoring roles each signer holds. */
type Model = { anchors: Map<string, StoredAnchor>; holds: Array<[boolean, boolean]> };

const keyOf = (digest: string, role: number) => `${digest}/${role}`;

/** Each anchor of the model reads back from the contract exactly as it was made. */
async function expectEveryAnchorKept(m: Model, r: Real): Promise<void> {
  await Promise.all(
    [...m.anchors].map(async ([key, made]) => {
      const [digest, role] = key.split("/");
      const stored = await r.anchors.anchorOf(digest, Number(role));
      expect(
        { anchoredAt: stored.anchoredAt, submitter: stored.submitter, isRoot: stored.isRoot, kindTag: stored.kindTag },
        key,
      ).to.deep.equal(made);
    }),
  );
}

/** `anchor` or `anchorRoot` of one digest by one signer. */
class AnchorCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly signer: number,
    readonly digest: number,
    readonly kind: number,
    /** null: `anchor`; else `anchorRoot` with this leaf count. */
    readonly leafCount: number | null,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const signer = r.signers[this.signer];
    const digest = DIGESTS[this.digest];
    const kind = KINDS[this.kind];
    const [anchorer, verifier] = m.holds[this.signer];
    const role = verifier ? VERIFIER : ANCHORER;
    const call =
      this.leafCount === null
        ? r.anchors.connect(signer).anchor(digest, kind)
        : r.anchors.connect(signer).anchorRoot(digest, this.leafCount, kind);
    // The contract's order of checks: the caller's role, an empty batch, the zero digest, an anchor already made by that role.
    if (!anchorer && !verifier) {
      await expect(call).to.be.revertedWithCustomError(r.anchors, "AnchorRegistryUnauthorizedAnchorer").withArgs(signer.address);
    } else if (this.leafCount === 0) {
      await expect(call).to.be.revertedWithCustomError(r.anchors, "AnchorRegistryEmptyBatch").withArgs(digest);
    } else if (digest === ethers.ZeroHash) {
      await expect(call).to.be.revertedWithCustomError(r.anchors, "AnchorRegistryZeroDigest");
    } else if (m.anchors.has(keyOf(digest, role))) {
      await expect(call).to.be.revertedWithCustomError(r.anchors, "AnchorRegistryAlreadyAnchored").withArgs(digest, role);
    } else {
      if (this.leafCount === null) await expect(call).to.emit(r.anchors, "Anchored").withArgs(digest, kind, role);
      else await expect(call).to.emit(r.anchors, "RootAnchored").withArgs(digest, kind, this.leafCount, role);
      const made = {
        anchoredAt: BigInt(await time.latest()),
        submitter: signer.address,
        isRoot: this.leafCount !== null,
        kindTag: tagOf(kind),
      };
      m.anchors.set(keyOf(digest, role), made);
    }
    await expectEveryAnchorKept(m, r);
  }
  toString = () =>
    `${this.leafCount === null ? "anchor" : `anchorRoot(${this.leafCount})`} digest ${this.digest} kind ${this.kind} by ${this.signer}`;
}

/** The admin grants or revokes, or the holder renounces, one anchoring role. */
class RoleCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly action: "grant" | "revoke" | "renounce",
    readonly role: number,
    readonly signer: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const account = r.signers[this.signer];
    const role = r.roles[this.role];
    if (this.action === "grant") await r.anchors.connect(r.signers[0]).grantRole(role, account.address);
    else if (this.action === "revoke") await r.anchors.connect(r.signers[0]).revokeRole(role, account.address);
    else await r.anchors.connect(account).renounceRole(role, account.address);
    m.holds[this.signer][this.role] = this.action === "grant";
    expect(await r.anchors.hasRole(role, account.address)).to.equal(this.action === "grant");
    await expectEveryAnchorKept(m, r);
  }
  toString = () => `${this.action} ${this.role === ANCHORER ? "anchorer" : "verifier"} of ${this.signer}`;
}

const signerArb = fc.integer({ min: 0, max: 4 });
const commandsArb = fc.commands(
  [
    fc
      .tuple(signerArb, fc.nat(DIGESTS.length - 1), fc.nat(KINDS.length - 1), fc.option(fc.constantFrom(0, 1, 7, 2 ** 40), { nil: null }))
      .map(([s, d, k, leaves]) => new AnchorCommand(s, d, k, leaves)),
    fc
      .tuple(fc.constantFrom("grant" as const, "revoke" as const, "renounce" as const), fc.constantFrom(ANCHORER, VERIFIER), signerArb)
      .map(([action, role, s]) => new RoleCommand(action, role, s)),
    fc.integer({ min: 1, max: 86_400 }).map((s) => waitCommand<Model, Real>(s, expectEveryAnchorKept)),
  ],
  { maxCommands: 20, size: "max" },
);

describe("AnchorRegistry invariants (random sequences of calls)", () => {
  it("never changes or removes an anchor, refuses exactly what its rules refuse, and reads and verifies what was anchored", async () => {
    await fc.assert(
      fc.asyncProperty(commandsArb, async (commands) => {
        const real = await loadFixture(fixture);
        const model: Model = {
          anchors: new Map(),
          holds: [
            [false, false],
            [true, false],
            [false, true],
            [true, true],
            [false, false],
          ],
        };
        await fc.asyncModelRun(() => ({ model, real }), commands);
        // What the reads make of the anchors: isAnchored, isVerified and rootAnchoredAt, for every digest and kind.
        for (const digest of DIGESTS) {
          const byRole = [model.anchors.get(keyOf(digest, ANCHORER)), model.anchors.get(keyOf(digest, VERIFIER))];
          expect(await real.anchors.isAnchored(digest)).to.equal(byRole.some((a) => a !== undefined));
          expect(await real.anchors.isVerified(digest)).to.equal(byRole[VERIFIER] !== undefined);
          for (const kind of KINDS) {
            const root = byRole.find((a) => a?.isRoot && a.kindTag === tagOf(kind));
            expect(await real.anchors.rootAnchoredAt(digest, kind)).to.equal(root?.anchoredAt ?? 0n);
          }
        }
        // One Anchored or RootAnchored event per anchor made, none for a refused call.
        const events = [
          ...(await real.anchors.queryFilter(real.anchors.filters.Anchored())),
          ...(await real.anchors.queryFilter(real.anchors.filters.RootAnchored())),
        ].map((e) => keyOf(String(e.args[0]), Number(e.args[e.args.length - 1])));
        expect(events.sort()).to.deep.equal([...model.anchors.keys()].sort());
      }),
      { numRuns: 12, seed: 3030 },
    );
  });
});
