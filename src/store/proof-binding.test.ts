import { expect } from "chai";
import type { ProofRow, Store } from "../service/ports";
import { EVERY_STORE } from "../test-helpers/stores";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

const walletProof = (id: string, ownerId: string): ProofRow => ({
  id,
  kind: "wallet",
  ownerId,
  agentId: null,
  subject: "0x00000000000000000000000000000000000000aa",
  binding: "wallet:0x00000000000000000000000000000000000000aa",
  evidence: { kind: "wallet" },
  verifiedAt: T0,
  lastCheckedAt: T0,
  consecutiveFailures: 0,
  removedAt: null,
  removedReason: null,
});

/** `insertProof` (ports.ts): the store keeps V6's one active binding itself, so a lost race is an answer and not an error. */
for (const setup of EVERY_STORE) {
  describe(`proof bindings on ${setup.name}`, () => {
    let store: Store;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await setup.open());
      await store.transaction(async (tx) => {
        for (const id of ["own_a", "own_b"]) await tx.insertOwner({ id, tokenHash: id.repeat(8), createdAt: T0 });
      });
    });
    after(() => close());

    it("records a proof whose binding is free, and refuses (writing nothing) one whose binding an active proof holds", async () => {
      expect(await store.transaction((tx) => tx.insertProof(walletProof("prf_1", "own_a")))).to.equal(true);
      expect(await store.transaction((tx) => tx.insertProof(walletProof("prf_2", "own_b")))).to.equal(false);
      expect(await store.read.getProof("prf_2")).to.equal(null);
      expect((await store.read.findActiveBinding(walletProof("", "").binding!))?.id).to.equal("prf_1");
    });

    it("records the binding again once its proof is removed, and proofs without a binding side by side", async () => {
      await store.transaction((tx) => tx.removeProof("prf_1", T0 + 60, "removed by its owner"));
      expect(await store.transaction((tx) => tx.insertProof(walletProof("prf_3", "own_b")))).to.equal(true);
      const unbound = (id: string): ProofRow => ({ ...walletProof(id, "own_a"), kind: "github", subject: "octocat", binding: null });
      expect(await store.transaction((tx) => tx.insertProof(unbound("prf_4")))).to.equal(true);
      expect(await store.transaction((tx) => tx.insertProof(unbound("prf_5")))).to.equal(true);
    });
  });
}
