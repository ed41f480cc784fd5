import { expect } from "chai";
import { createAccounts } from "./accounts";
import { createManualClock } from "./clock";
import type { PageRequest, Store } from "./ports";
import { createScoring, type DailyBatchTx } from "./scoring";
import { EVERY_STORE } from "../test-helpers/stores";

const DAY = "2026-10-05";
const MIDNIGHT = Date.UTC(2026, 9, 5) / 1000;
const PAGE = 3;

/**
 * `store` with its reads of agent pages and of daily facts recorded: the pages asked for, and the
 * agents of each batch of facts (none on a store without the batch reads).
 */
function counting(store: Store): { store: Store; pages: Array<PageRequest<string>>; batches: string[][] } {
  const pages: Array<PageRequest<string>> = [];
  const batches: string[][] = [];
  const read = new Proxy(store.read, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name === "listClaimedAgentIds") return (page: PageRequest<string>) => (pages.push(page), value(page));
      if (name === "dailyFactRows") return (ids: string[], ...rest: unknown[]) => (batches.push([...ids]), (value as DailyBatchTx["dailyFactRows"])(ids, ...(rest as [string, number])));
      return value;
    },
  });
  return { store: { ...store, transaction: store.transaction, read }, pages, batches };
}

for (const setup of EVERY_STORE) {
  describe(`daily recompute over keyset pages of agents on ${setup.name} (V9)`, function () {
    let store: Store;
    let close: () => Promise<void>;
    const clock = createManualClock(MIDNIGHT - 86_400);
    /** Agents claimed the day before, in id order, and one claimed after the midnight scored. */
    let claimed: string[];
    let late: string;

    before(async () => {
      ({ store, close } = await setup.open());
      const accounts = createAccounts({ store, clock });
      const { ownerId } = await accounts.createOwner();
      claimed = [];
      for (let i = 0; i < 3 * PAGE + 1; i++) claimed.push((await accounts.claimNewAgent(ownerId)).agentId);
      claimed.sort();
      clock.set(MIDNIGHT + 60);
      late = (await accounts.claimNewAgent(ownerId)).agentId;
    });
    after(() => close());

    it("stores every agent claimed by the midnight once, in agent order, reading one page after the other", async () => {
      const counted = counting(store);
      const progress: number[] = [];
      const scoring = createScoring({ store: counted.store, clock, dailyPageSize: PAGE });
      expect(await scoring.recomputeDay(DAY, (n) => progress.push(n))).to.equal(claimed.length);

      const daily = (await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily");
      // Score ids follow agent order: each agent once, none claimed after the midnight (V9).
      expect(daily.map((s) => s.agentId)).to.deep.equal(claimed);
      expect(daily.every((s) => s.day === DAY && s.at === MIDNIGHT)).to.equal(true);
      expect(daily.map((s) => s.agentId)).to.not.include(late);

      // 11 agents in pages of 3: four pages, each after the last id of the one before; never a list of every agent.
      const all = [...claimed, late].sort();
      expect(counted.pages).to.deep.equal([
        { after: undefined, limit: PAGE }, { after: all[2], limit: PAGE }, { after: all[5], limit: PAGE }, { after: all[8], limit: PAGE },
      ]);
      if (setup.name === "memory") {
        // One agent at a time without the batch reads.
        expect(counted.batches).to.deep.equal([]);
        expect(progress).to.deep.equal(all.map((_, i) => i + 1));
      } else {
        expect(counted.batches).to.deep.equal([all.slice(0, 3), all.slice(3, 6), all.slice(6, 9), all.slice(9)]);
        expect(progress).to.deep.equal([3, 6, 9, 11]);
      }
    });

    it("stores nothing when rerun, and a page size that divides the agents exactly ends on an empty page", async () => {
      const counted = counting(store);
      const scoring = createScoring({ store: counted.store, clock, dailyPageSize: 11 });
      expect(await scoring.recomputeDay(DAY)).to.equal(0);
      expect(counted.pages.map((p) => p.limit)).to.deep.equal([11, 11]);
      expect((await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily")).to.have.length(claimed.length);
    });
  });
}
