import { expect } from "chai";
import { createAccounts } from "./accounts";
import { createManualClock } from "./clock";
import type { PageRequest, Store } from "./ports";
import { createScoring } from "./scoring";
import { EVERY_STORE } from "../test-helpers/stores";
import { createMigratedTestDb, TEST_STORES } from "../test-helpers/db";
import { createSqlStore } from "../store/sql-store";
import { buildScoreInputs, scoreFromInputs } from "../method";
import { createVraiService } from "./index";
import { BaseError } from "../errors";
import type { MethodVersion } from "../method";
import { addDailyScores, type PageScorer } from "./score-rows";

const DAY = "2026-10-05";
const MIDNIGHT = Date.UTC(2026, 9, 5) / 1000;
const PAGE = 3;

/**
 * `store` with its reads of agent pages and of daily facts recorded: the pages asked for, and the
 * agents of each batch of facts.
 */
function counting(store: Store): { store: Store; pages: Array<PageRequest<string>>; batches: string[][] } {
  const pages: Array<PageRequest<string>> = [];
  const batches: string[][] = [];
  const read = new Proxy(store.read, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (name === "listClaimedAgentIds")
        return (page: PageRequest<string>) => {
          pages.push(page);
          return value(page);
        };
      if (name === "dailyFactRows")
        return (ids: string[], ...rest: unknown[]) => {
          batches.push([...ids]);
          return (value as Store["read"]["dailyFactRows"])(ids, ...(rest as [string, number]));
        };
      return value;
    },
  });
  return { store: { ...store, transaction: store.transaction, read }, pages, batches };
}

for (const setup of EVERY_STORE) {
  describe(`daily recompute over keyset pages of agents on ${setup.name} (V9)`, () => {
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
        { after: undefined, limit: PAGE },
        { after: all[2], limit: PAGE },
        { after: all[5], limit: PAGE },
        { after: all[8], limit: PAGE },
      ]);
      expect(counted.batches).to.deep.equal([all.slice(0, 3), all.slice(3, 6), all.slice(6, 9), all.slice(9)]);
      expect(progress).to.deep.equal([3, 6, 9, 11]);
    });

    it("reads a page larger than the agents once, and counts its agents once", async () => {
      const counted = counting(store);
      const progress: number[] = [];
      const scoring = createScoring({ store: counted.store, clock, dailyPageSize: 20 });
      expect(await scoring.recomputeDay(DAY, (n) => progress.push(n))).to.equal(0);
      // The page read ahead of the first is known to be empty once the first is short: never read, nothing counted.
      expect(counted.pages).to.deep.equal([{ after: undefined, limit: 20 }]);
      expect(progress).to.deep.equal([claimed.length + 1]);
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

/**
 * The batched reads of the daily recompute (`dailyFactRows`) give each agent the facts its one-by-one
 * reads give (`factsAt`): every stored daily score is the score of the facts read agent by agent.
 */
for (const { name, create } of TEST_STORES) {
  describe(`daily facts read in batches on ${name} (V5-V9)`, () => {
    it(
      "equal the facts read one agent at a time: proofs of the agent and of its owner, penalties, a midnight check-in, " +
        "coverage-only days, an earlier claim (691 check-ins one at a time through the service: up to ~12 s on PGlite with a core busy)",
      async () => {
        const testDb = await createMigratedTestDb(create);
        const store = createSqlStore(testDb.db);
        try {
          const clock = createManualClock(MIDNIGHT - 40 * 86_400);
          const accounts = createAccounts({ store, clock });
          const service = createVraiService({ store, clock, busy: () => false });
          const owners = [(await accounts.createOwner()).ownerId, (await accounts.createOwner()).ownerId];
          const agents: string[] = [];
          for (let i = 0; i < 12; i++) agents.push((await accounts.claimNewAgent(owners[i % 2])).agentId);
          // Check-ins every 50 minutes over the last four days for some agents, and one at the scored midnight.
          for (let t = MIDNIGHT - 4 * 86_400; t <= MIDNIGHT - 1200; t += 3000) {
            clock.set(t);
            for (const agentId of agents.slice(0, 6)) await service.checkins.checkIn(agentId, `k${t}`, () => undefined);
          }
          clock.set(MIDNIGHT);
          await service.checkins.checkIn(agents[1], "midnight", () => undefined);
          const at = MIDNIGHT;
          await store.transaction(async (tx) => {
            const proof = (
              id: string,
              kind: "github" | "wallet" | "domain",
              ownerId: string,
              agentId: string | null,
              verifiedAt: number,
              removedAt: number | null,
            ) =>
              tx
                .insertProof({
                  id,
                  kind,
                  ownerId,
                  agentId,
                  subject: id,
                  binding: `${kind}:${id}`,
                  evidence: { n: id },
                  verifiedAt,
                  lastCheckedAt: verifiedAt,
                  consecutiveFailures: 0,
                  removedAt: null,
                  removedReason: null,
                })
                .then(() => (removedAt === null ? undefined : tx.removeProof(id, removedAt, "gone")));
            await proof("prf_o1", "github", owners[0], null, at - 9 * 86_400, null);
            await proof("prf_o2", "wallet", owners[0], null, at - 8 * 86_400, at - 86_400);
            await proof("prf_o3", "wallet", owners[1], null, at + 10, null);
            await proof("prf_a1", "domain", owners[1], agents[3], at - 7 * 86_400, null);
            await proof("prf_a2", "domain", owners[0], agents[4], at - 6 * 86_400, at + 5);
            const penalty = (id: string, agentId: string, addedAt: number, revokedAt: number | null) =>
              tx
                .insertPenalty({
                  id,
                  agentId,
                  code: "rate_abuse",
                  points: 10,
                  days: 30,
                  addedAt,
                  reason: "test",
                  revokedAt: null,
                  revokeReason: null,
                  addedBy: "admin",
                  revokedBy: null,
                })
                .then(() => (revokedAt === null ? undefined : tx.revokePenalty(id, revokedAt, "appeal", "admin")));
            await penalty("pen_1", agents[2], at - 3 * 86_400, null);
            await penalty("pen_2", agents[2], at - 2 * 86_400, at - 86_400);
            await penalty("pen_3", agents[5], at + 60, null);
            await penalty("pen_4", agents[7], at - 40 * 86_400, null);
          });
          // A day with coverage and no check-ins (digest ""), and a day aggregate of another claim, which never counts (V2).
          const agent8 = (await store.read.getAgent(agents[8]))!;
          await testDb.db.query(
            `INSERT INTO agent_days (agent_id, claim_id, day, checkins, on_time, credit_s, coverage_s, digest)
           VALUES ($1, $2, $3, 0, 0, 0, 3600, ''), ($1, $4, $5, 5, 5, 9000, 9000, $6)`,
            [agent8.id, agent8.claimId, "2026-10-01", agent8.claimId + 1000, "2026-10-02", "ab".repeat(32)],
          );
          // Days before the window (2026-09-05 to 10-04): two with check-ins, one with coverage only; and one in it.
          const agent9 = (await store.read.getAgent(agents[9]))!;
          await testDb.db.query(
            `INSERT INTO agent_days (agent_id, claim_id, day, checkins, on_time, credit_s, coverage_s, digest)
             VALUES ($1, $2, '2026-08-28', 2, 2, 4800, 7200, $3), ($1, $2, '2026-08-29', 0, 0, 0, 600, ''),
                    ($1, $2, '2026-09-04', 1, 1, 2400, 3600, $3), ($1, $2, '2026-09-10', 1, 0, 0, 3600, $3)`,
            [agent9.id, agent9.claimId, "cd".repeat(32)],
          );
          const scoring = createScoring({ store, clock, dailyPageSize: 5 });
          expect(await scoring.recomputeDay(DAY)).to.equal(agents.length);
          const stored = (await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily");
          for (const agentId of agents) {
            const one = await store.transaction(async (tx) =>
              scoreFromInputs(buildScoreInputs(await scoring.factsAt(tx, (await tx.getAgent(agentId))!, at))),
            );
            const batched = stored.find((s) => s.agentId === agentId)!;
            expect({ agentId, sha256: batched.sha256, inputs: batched.inputs }).to.deep.equal({
              agentId,
              sha256: one.sha256,
              inputs: one.canonical,
            });
          }
          // The scenario reaches what it is meant to: proofs of both kinds, an active penalty, the midnight check-in.
          const inputs = (agentId: string) => JSON.parse(stored.find((s) => s.agentId === agentId)!.inputs);
          expect(inputs(agents[0]).proofs).to.deep.equal(["github"]);
          expect(inputs(agents[3]).proofs).to.deep.equal(["domain"]);
          expect(inputs(agents[4]).proofs).to.deep.equal(["github", "domain"]);
          expect(inputs(agents[2]).penalties.map((p: { id: string }) => p.id)).to.deep.equal(["pen_1"]);
          // The check-in at the scored second counts as a day outside the window (V8).
          expect([inputs(agents[0]).other_checkin_days, inputs(agents[1]).other_checkin_days]).to.deep.equal([0, 1]);
          // Days before the window count when they had check-ins (V8), whether the store lists or counts them.
          expect(inputs(agents[9]).other_checkin_days).to.equal(2);
          expect(inputs(agents[9]).days.map((d: { day: string }) => d.day)).to.deep.equal(["2026-09-10"]);
          expect(inputs(agents[8]).days).to.deep.equal([
            { day: "2026-10-01", checkins: 0, on_time: 0, credit_s: 0, coverage_s: 3600, digest: "" },
          ]);
        } finally {
          await testDb.drop();
        }
      },
    );
  });
}

for (const setup of EVERY_STORE) {
  describe(`an agent's facts at a midnight and later that day on ${setup.name} (V7, V8, V9)`, () => {
    let store: Store;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, close } = await setup.open());
    });
    after(() => close());

    it("counts a check-in at the scored second as a day of its own, and the penalties added by then and not revoked by then", async () => {
      const clock = createManualClock(MIDNIGHT - 2 * 86_400);
      const service = createVraiService({ store, clock, busy: () => false });
      const { ownerId } = await service.accounts.createOwner();
      const { agentId } = await service.accounts.claimNewAgent(ownerId);
      // The claim scored the agent at once (V9 "on change").
      expect(await store.read.latestScore(agentId)).to.include({ trigger: "change", at: MIDNIGHT - 2 * 86_400 });
      for (let t = MIDNIGHT - 2 * 86_400 + 3600; t < MIDNIGHT; t += 3600) {
        clock.set(t);
        await service.checkins.checkIn(agentId, `k${t}`, () => undefined);
      }
      const penalty = (id: string, at: number) => {
        clock.set(at);
        return service.operator.addPenalty({ id: `${id}-${setup.name}`, agentId, code: "rate_abuse", points: 10, days: 30, reason: "t" });
      };
      await penalty("active", MIDNIGHT - 86_400);
      await penalty("revoked", MIDNIGHT - 86_400 + 10);
      await penalty("at", MIDNIGHT);
      await service.operator.revokePenalty(`revoked-${setup.name}`, "appeal");
      await service.checkins.checkIn(agentId, "midnight", () => undefined);
      await penalty("after", MIDNIGHT + 60);
      clock.set(MIDNIGHT + 1200);
      await service.checkins.checkIn(agentId, "later", () => undefined);
      clock.set(MIDNIGHT + 1300);
      await service.operator.revokePenalty(`active-${setup.name}`, "appeal");

      const scoring = createScoring({ store, clock });
      expect(await scoring.recomputeDay(DAY)).to.equal(1);
      const daily = (await store.read.scoresAfter(0, 1000)).find((s) => s.agentId === agentId && s.trigger === "daily")!;
      const inputs = JSON.parse(daily.inputs);
      // Revoked at the midnight itself: no longer active then (V7); added at it: active.
      expect(inputs.penalties.map((p: { id: string }) => p.id)).to.deep.equal([`active-${setup.name}`, `at-${setup.name}`]);
      // The window's days, and the check-in of the scored second as another day with a check-in (V8); not the one after it.
      expect(inputs.days.map((d: { day: string; checkins: number }) => [d.day, d.checkins])).to.deep.equal([
        ["2026-10-03", 23],
        ["2026-10-04", 24],
      ]);
      expect(inputs.other_checkin_days).to.equal(1);
      // The facts of this one agent at that instant make the same document as the recompute's pages.
      const factsAt = (at: number) =>
        store.transaction(async (tx) => buildScoreInputs(await scoring.factsAt(tx, (await tx.getAgent(agentId))!, at)));
      expect(scoreFromInputs(await factsAt(MIDNIGHT)).canonical).to.equal(daily.inputs);
      const later = await factsAt(MIDNIGHT + 1800);
      expect(later.penalties.map((p) => p.id)).to.deep.equal([`at-${setup.name}`, `after-${setup.name}`]);
      expect(later.other_checkin_days).to.equal(1);
    });

    it("scores a page of more agents than a slice (100), letting the event loop turn between slices", async () => {
      const clock = createManualClock(MIDNIGHT - 86_400);
      const accounts = createAccounts({ store, clock });
      const { ownerId } = await accounts.createOwner();
      for (let i = 0; i < 150; i++) await accounts.claimNewAgent(ownerId);
      const scoring = createScoring({ store, clock });
      let turned = false;
      setImmediate(() => {
        turned = true;
      });
      const stored = await scoring.recomputeDay("2026-10-05");
      expect(stored).to.be.at.least(150);
      expect(turned).to.equal(true);
    });

    it("scores an agent now, at the clock's instant, as a change, and refuses an agent that does not exist (V9)", async () => {
      const clock = createManualClock(MIDNIGHT + 7);
      const accounts = createAccounts({ store, clock });
      const { ownerId } = await accounts.createOwner();
      const { agentId } = await accounts.claimNewAgent(ownerId);
      clock.set(MIDNIGHT + 99);
      const scoring = createScoring({ store, clock });
      expect(await scoring.scoreNow(agentId)).to.include({ agentId, at: MIDNIGHT + 99, trigger: "change", day: null, total: 200 });
      const missing = await scoring.scoreNow("agt_missing").then(
        () => null,
        (e: unknown) => e,
      );
      expect(missing).to.include({ code: "agent_not_found", status: 404, message: "agent agt_missing does not exist" });
    });
  });
}

/**
 * A PageScorer that scores on this thread as the recompute would (`addDailyScores`) and records what it was
 * given: the recompute's seam for worker threads (src/app/score-workers.ts tests the threads themselves).
 */
function recordingScorer(store: Store, minRows: number, fail?: { onPageOf: string }) {
  const seen = { pages: [] as string[][], created: 0, closed: 0 };
  const factory = (method: MethodVersion): PageScorer => {
    seen.created++;
    return {
      minRows,
      async score(rows, at) {
        seen.pages.push(rows.map((r) => r.agent.id));
        // By the page's agents, not by the order of the calls: pages read ahead on PostgreSQL may be scored in either order.
        if (fail && rows.some((r) => r.agent.id === fail.onPageOf)) throw new BaseError("score_worker_failed", "page refused by the test");
        const batch = store.read.scoreBatch();
        addDailyScores(rows, at, method, batch);
        return batch;
      },
      async close() {
        seen.closed++;
      },
    };
  };
  return { seen, factory };
}

for (const setup of EVERY_STORE)
  describe(`daily recompute with a page scorer (issue #30: pages scored off the calling thread), on ${setup.name}`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let agents: string[];
    const clock = createManualClock(MIDNIGHT - 86_400);
    beforeEach(async () => {
      ({ store, close } = await setup.open());
      const accounts = createAccounts({ store, clock });
      const { ownerId } = await accounts.createOwner();
      agents = [];
      for (let i = 0; i < 7; i++) agents.push((await accounts.claimNewAgent(ownerId)).agentId);
      agents.sort();
    });
    afterEach(() => close());

    it("sends it the pages of at least its minRows, scores shorter ones itself, stores the same scores, and closes it once", async () => {
      const { seen, factory } = recordingScorer(store, 3);
      const scoring = createScoring({ store, clock, dailyPageSize: 3, pageScorers: factory });
      expect(await scoring.recomputeDay(DAY)).to.equal(7);
      // Pages of 3, 3 and 1: the last is shorter than minRows. The first two in either order: the one read ahead may be ready first.
      expect(seen.pages).to.have.deep.members([agents.slice(0, 3), agents.slice(3, 6)]);
      expect([seen.created, seen.closed]).to.deep.equal([1, 1]);
      const daily = (await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily");
      expect(daily.map((s) => s.agentId)).to.deep.equal(agents);
      for (const s of daily) {
        const one = await store.transaction(async (tx) =>
          scoreFromInputs(buildScoreInputs(await createScoring({ store, clock }).factsAt(tx, (await tx.getAgent(s.agentId))!, MIDNIGHT))),
        );
        expect([s.sha256, s.inputs]).to.deep.equal([one.sha256, one.canonical]);
      }
    });

    it("starts no scorer for a day with no agent to score (every agent claimed after its midnight)", async () => {
      const { seen, factory } = recordingScorer(store, 1);
      const scoring = createScoring({ store, clock, dailyPageSize: 3, pageScorers: factory });
      expect(await scoring.recomputeDay("2026-10-01")).to.equal(0);
      expect([seen.pages, seen.created, seen.closed]).to.deep.equal([[], 0, 0]);
    });

    it("fails with the scorer's error, keeps the pages written before it, closes the scorer, and a rerun completes the day", async () => {
      const { seen, factory } = recordingScorer(store, 1, { onPageOf: agents[3] });
      const scoring = createScoring({ store, clock, dailyPageSize: 3, pageScorers: factory });
      const failed = await scoring.recomputeDay(DAY).then(
        () => null,
        (e: unknown) => e,
      );
      expect(failed).to.include({ code: "score_worker_failed" });
      expect(seen.closed).to.equal(1);
      const before = (await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily").map((s) => s.agentId);
      expect(before).to.deep.equal(agents.slice(0, 3));
      const rerun = createScoring({ store, clock, dailyPageSize: 3, pageScorers: recordingScorer(store, 1).factory });
      expect(await rerun.recomputeDay(DAY)).to.equal(4);
      const after = (await store.read.scoresAfter(0, 1000)).filter((s) => s.trigger === "daily").map((s) => s.agentId);
      expect(after).to.deep.equal(agents);
    });
  });
