import { expect } from "chai";
import { createVraiService } from ".";
import { EVERY_STORE } from "../test-helpers/stores";
import { createManualClock } from "./clock";
import { createOwnerRecomputes } from "./owner-recomputes";

const T0 = Date.UTC(2026, 10, 2, 10) / 1000;

for (const setup of EVERY_STORE) {
  describe(`owner recomputes on ${setup.name} (V6, V9)`, () => {
    it("scores every agent of the owner, a few ids per read, and only that owner's, at the drain's instant", async () => {
      const { store, close } = await setup.open();
      try {
        const clock = createManualClock(T0);
        const service = createVraiService({ store, clock, busy: () => false });
        const { ownerId } = await service.accounts.createOwner();
        const { ownerId: other } = await service.accounts.createOwner();
        const agents: string[] = [];
        for (let i = 0; i < 5; i++) agents.push((await service.accounts.claimNewAgent(ownerId)).agentId);
        const bystander = (await service.accounts.claimNewAgent(other)).agentId;
        await service.identity.recordProof({
          id: "gh-1",
          kind: "github",
          ownerId,
          agentId: null,
          subject: "octocat",
          binding: null,
          evidence: {},
        });
        clock.set(T0 + 60);
        const recomputes = createOwnerRecomputes({ store, clock, scoring: service.scoring, agentsPerPage: 2 });
        expect(await recomputes.drain()).to.deep.equal({ owners: 1, scores: 5, failed: 0 });
        for (const id of agents) {
          const latest = await store.read.latestScore(id);
          expect(latest).to.deep.include({ at: T0 + 60, total: 230 });
        }
        expect(await store.read.latestScore(bystander)).to.deep.include({ at: T0, total: 200 });
        expect(await recomputes.drain()).to.deep.equal({ owners: 0, scores: 0, failed: 0 });
      } finally {
        await close();
      }
    });
  });
}
