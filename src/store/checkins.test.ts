import { expect } from "chai";
import { GRACE_S, playCheckins, utcDay, type DayAggregate } from "../method";
import { createVraiService, type VraiService } from "../service";
import { createManualClock } from "../service/clock";
import type { AgentRow, CheckinExpectation, Store } from "../service/ports";
import { createMigratedTestDb, TEST_STORES } from "../test-helpers/db";
import { createPgDb, type Db } from "./db";
import { secretMatches } from "../service/secrets";
import { createCheckinWrites } from "./checkin-writes";
import { createMemoryStore } from "./memory-store";
import { migrate } from "./migrate";
import { createSqlStore } from "./sql-store";

const T0 = Date.UTC(2026, 10, 2, 22, 0, 0) / 1000; // 2026-11-02T22:00:00Z: the hourly run below crosses midnight
const agentKnown = (agent: AgentRow | null): asserts agent is AgentRow => {
  if (!agent) throw new Error("no such agent");
};

type Setup = { name: string; open(): Promise<{ store: Store; db: Db | null; close(): Promise<void> }> };

const SETUPS: Setup[] = [
  ...TEST_STORES.map(({ name, create }) => ({
    name,
    async open() {
      const testDb = await createMigratedTestDb(create);
      return { store: createSqlStore(testDb.db), db: testDb.db, close: () => testDb.drop() };
    },
  })),
  { name: "memory", open: async () => ({ store: createMemoryStore(), db: null, close: async () => undefined }) },
];

/**
 * The check-in write path (src/service/checkins.ts over `checkinState` and `commitCheckin`) on
 * every store: a decision made on a state that changed before its write is never stored, and day
 * aggregates written as deltas equal the method's own replay of the same requests.
 */
for (const setup of SETUPS) {
  describe(`check-in writes on ${setup.name}`, () => {
    let store: Store;
    let close: () => Promise<void>;
    let db: Db | null;
    let service: VraiService;
    const clock = createManualClock(T0);

    before(async () => {
      ({ store, db, close } = await setup.open());
      service = createVraiService({ store, clock, busy: () => false });
    });
    after(() => close());

    /** What a write expects of `agent`, with the windows' revision as read now. */
    async function expecting(agent: AgentRow): Promise<CheckinExpectation> {
      const { windowsRevision } = await store.checkinState(agent.id, "any", true);
      return { claimId: agent.claimId, lastArrival: agent.last?.arrival ?? null, keyHash: agent.keyHash, windowsRevision };
    }

    async function newAgent(): Promise<string> {
      clock.set(T0);
      const { ownerId } = await service.accounts.createOwner();
      return (await service.accounts.claimNewAgent(ownerId)).agentId;
    }

    it("answers a duplicate with its original only once the store confirms it durable, and not when it cannot (V3.1)", async () => {
      const agentId = await newAgent();
      clock.set(T0 + 60);
      expect((await service.checkins.checkIn(agentId, "durable", agentKnown)).type).to.equal("counted");
      // Not confirmed at first (read from a server that no longer has it): decided again on a fresh state, then confirmed.
      const confirms = [false, true];
      const asked: string[] = [];
      const confirming = createVraiService({
        store: {
          ...store,
          confirmDurable: async (duplicate) => {
            asked.push(`${duplicate.agentId}/${duplicate.idempotencyKey}@${duplicate.arrival}`);
            return confirms.shift() ?? false;
          },
        },
        clock,
        busy: () => false,
      });
      expect((await confirming.checkins.checkIn(agentId, "durable", agentKnown)).type).to.equal("duplicate");
      expect(asked).to.deep.equal([`${agentId}/durable@${T0 + 60}`, `${agentId}/durable@${T0 + 60}`]);
      // Never confirmed: a bounded number of tries, then a conflict the agent retries with the same key.
      const never = createVraiService({ store: { ...store, confirmDurable: async () => false }, clock, busy: () => false });
      let contended: unknown;
      await never.checkins.checkIn(agentId, "durable", agentKnown).catch((error: unknown) => (contended = error));
      expect(contended).to.be.an("error").with.property("code", "checkin_contended");
      // Where it cannot be confirmed (the node that answered is not the one that will keep it), no answer is given.
      const failing = createVraiService({
        store: { ...store, confirmDurable: async () => Promise.reject(new Error("database unavailable")) },
        clock,
        busy: () => false,
      });
      let refused: unknown;
      await failing.checkins.checkIn(agentId, "durable", agentKnown).catch((error: unknown) => (refused = error));
      expect(refused).to.be.an("error").with.property("message", "database unavailable");
      // The real one confirms what it has (on PostgreSQL and PGlite, in a commit that writes a transaction id), and only that.
      const stored = (await store.checkinState(agentId, "durable", true)).duplicate!;
      expect(stored).to.include({ agentId, idempotencyKey: "durable", arrival: T0 + 60 });
      expect(await store.confirmDurable(stored)).to.equal(true);
      expect(await store.confirmDurable({ ...stored, idempotencyKey: "elsewhere" })).to.equal(false);
      expect(await store.confirmDurable({ ...stored, arrival: T0 + 61 })).to.equal(false);
      expect(await store.confirmDurable({ ...stored, claimId: stored.claimId + 1 })).to.equal(false);
    });

    it("refuses to store a check-in decided on a stale state, and writes nothing", async () => {
      const agentId = await newAgent();
      const first = await service.checkins.checkIn(agentId, "k1", agentKnown);
      expect(first.type).to.equal("counted");
      const agent = (await store.read.getAgent(agentId))!;
      const checkin = {
        agentId,
        claimId: agent.claimId,
        idempotencyKey: "k2",
        arrival: T0 + 3600,
        nextHeartbeatS: 3600,
        onTime: true,
        excused: false,
        credit: 3600,
      };
      const deltas = [{ day: utcDay(T0), checkins: 1, onTime: 1, creditS: 3600, coverageS: 3600, digest: "ab".repeat(32) }];
      const on = await expecting(agent);
      const { windowsRevision } = on;
      // The previous counted check-in is not the expected one, then the claim, the key, the windows' revision.
      expect(await store.commitCheckin({ ...on, lastArrival: null }, checkin, deltas)).to.equal(false);
      expect(await store.commitCheckin({ ...on, claimId: agent.claimId + 1000 }, checkin, deltas)).to.equal(false);
      expect(await store.commitCheckin({ ...on, keyHash: "0".repeat(64) }, checkin, deltas)).to.equal(false);
      if (db !== null) expect(await store.commitCheckin({ ...on, windowsRevision: windowsRevision - 1 }, checkin, deltas)).to.equal(false);
      // A key the claim has counted already (V3.1), even on the expected state.
      expect(await store.commitCheckin(on, { ...checkin, idempotencyKey: "k1" }, deltas)).to.equal(false);
      const after = (await store.read.getAgent(agentId))!;
      expect(after.last).to.deep.equal(agent.last);
      expect(await store.read.listDays(agentId, agent.claimId, "9999-12-31")).to.have.length(1);
      expect((await store.checkinState(agentId, "k2", true)).duplicate).to.equal(null);
      // The expected state does write.
      expect(await store.commitCheckin(on, checkin, deltas)).to.equal(true);
      expect((await store.checkinState(agentId, "k2", true)).duplicate).to.include({ arrival: T0 + 3600, credit: 3600 });
    });

    it(
      "writes check-ins sent together (one batch on SQL) as if one after the other: " +
        "of two of one agent on one state only the first, a stale one not at all (V3.2)",
      async () => {
        const [a, b, c] = [await newAgent(), await newAgent(), await newAgent()];
        for (const id of [a, b, c]) await service.checkins.checkIn(id, "first", agentKnown);
        const rows = await Promise.all([a, b, c].map(async (id) => (await store.read.getAgent(id))!));
        const checkin = (agent: AgentRow, key: string) => ({
          agentId: agent.id,
          claimId: agent.claimId,
          idempotencyKey: key,
          arrival: T0 + 3600,
          nextHeartbeatS: 3600,
          onTime: true,
          excused: false,
          credit: 3600,
        });
        const deltas = (digest: string) => [{ day: utcDay(T0), checkins: 1, onTime: 1, creditS: 3600, coverageS: 3600, digest }];
        const on = await Promise.all(rows.map(expecting));
        // Started in one turn of the event loop: the SQL store sends them as one statement.
        const written = await Promise.all([
          store.commitCheckin(on[0], checkin(rows[0], "a1"), deltas("a1".repeat(32))),
          store.commitCheckin(on[1], checkin(rows[1], "b1"), deltas("b1".repeat(32))),
          store.commitCheckin(on[0], checkin(rows[0], "a2"), deltas("a2".repeat(32))),
          store.commitCheckin({ ...on[2], lastArrival: null }, checkin(rows[2], "c1"), deltas("c1".repeat(32))),
        ]);
        expect(written).to.deep.equal([true, true, false, false]);
        const after = await Promise.all([a, b, c].map(async (id) => (await store.read.getAgent(id))!));
        expect(after.map((r) => r.last)).to.deep.equal([
          { arrival: T0 + 3600, nextHeartbeatS: 3600, dayDigest: "a1".repeat(32) },
          { arrival: T0 + 3600, nextHeartbeatS: 3600, dayDigest: "b1".repeat(32) },
          rows[2].last,
        ]);
        const states = await Promise.all([
          store.checkinState(a, "a1", true),
          store.checkinState(a, "a2", true),
          store.checkinState(b, "b1", true),
          store.checkinState(c, "c1", true),
          store.checkinState("agt_nobody", "x", true),
        ]);
        expect(states.map((s) => s.duplicate?.idempotencyKey ?? null)).to.deep.equal(["a1", null, "b1", null, null]);
        expect(states[4].agent).to.equal(null);
        const days = await store.read.listDays(a, rows[0].claimId, "9999-12-31");
        expect(days.reduce((n, d) => n + d.checkins, 0)).to.equal(2);
        expect(days[days.length - 1].digest).to.equal("a1".repeat(32));
      },
    );

    it("fails only the check-in at fault in a batch: the others sent with it are written", async () => {
      const [a, b] = [await newAgent(), await newAgent()];
      for (const id of [a, b]) await service.checkins.checkIn(id, "first", agentKnown);
      const [ra, rb] = await Promise.all([a, b].map(async (id) => (await store.read.getAgent(id))!));
      const at = (agent: AgentRow, key: string, credit = 3600) => ({
        agentId: agent.id,
        claimId: agent.claimId,
        idempotencyKey: key,
        arrival: T0 + 3600,
        nextHeartbeatS: 3600,
        onTime: true,
        excused: false,
        credit,
      });
      const deltas = [{ day: utcDay(T0), checkins: 1, onTime: 1, creditS: 3600, coverageS: 3600, digest: "cd".repeat(32) }];
      const [onA, onB] = await Promise.all([ra, rb].map(expecting));
      // A's write carries a credit its column cannot hold (an integer; V3.5 credits are seconds between check-ins): the store refuses it.
      const results = await Promise.allSettled([
        store.commitCheckin(onA, at(ra, "second", 2 ** 31), deltas),
        store.commitCheckin(onB, at(rb, "second"), deltas),
      ]);
      if (db !== null) expect(results[0].status).to.equal("rejected");
      expect(results[1]).to.deep.equal({ status: "fulfilled", value: true });
      expect((await store.checkinState(b, "second", true)).duplicate).to.include({ arrival: T0 + 3600 });
    });

    it("decides again when another check-in of the agent is counted between its read and its write (V3.2)", async () => {
      const agentId = await newAgent();
      await service.checkins.checkIn(agentId, "first", agentKnown);
      clock.set(T0 + 3600);
      // Request A reads the state, then request B is counted before A writes.
      let interleaved = false;
      const racing: Store = {
        ...store,
        checkinState: async (id, key, fresh) => {
          const state = await store.checkinState(id, key, fresh);
          if (key === "A" && !interleaved) {
            interleaved = true;
            const b = await service.checkins.checkIn(agentId, "B", agentKnown);
            expect(b.type).to.equal("counted");
          }
          return state;
        },
      };
      const racingService = createVraiService({ store: racing, clock, busy: () => false });
      const a = await racingService.checkins.checkIn(agentId, "A", agentKnown);
      expect(interleaved).to.equal(true);
      // A's first decision (counted on "first") was not stored: decided again after B, it is refused.
      expect(a).to.deep.equal({ type: "refused", retryAfterS: 1200 });
      expect((await store.checkinState(agentId, "A", true)).duplicate).to.equal(null);
      const agent = (await store.read.getAgent(agentId))!;
      const today = await store.read.listDays(agentId, agent.claimId, "9999-12-31");
      expect(today.reduce((n, d) => n + d.checkins, 0)).to.equal(2);
    });

    it("answers the original when the same key is counted between its read and its write (V3.1)", async () => {
      const agentId = await newAgent();
      let interleaved = false;
      const racing: Store = {
        ...store,
        checkinState: async (id, key, fresh) => {
          const state = await store.checkinState(id, key, fresh);
          if (!interleaved) {
            interleaved = true;
            await service.checkins.checkIn(agentId, "same", agentKnown);
          }
          return state;
        },
      };
      const racingService = createVraiService({ store: racing, clock, busy: () => false });
      const again = await racingService.checkins.checkIn(agentId, "same", agentKnown);
      expect(again.type).to.equal("duplicate");
      const agent = (await store.read.getAgent(agentId))!;
      expect((await store.read.listDays(agentId, agent.claimId, "9999-12-31"))[0].checkins).to.equal(1);
    });

    it("keeps day aggregates equal to the method's own replay: hourly across midnight, late, refused and excused (V4, V5, V10)", async () => {
      const agentId = await newAgent();
      const arrivals = [
        T0,
        T0 + 3600,
        T0 + 7200,
        T0 + 7200 + 3601,
        T0 + 7200 + 3601 + 4000,
        T0 + 20 * 3600,
        T0 + 20 * 3600 + 1199,
        T0 + 21 * 3600,
      ];
      // A window declared before the long gap excuses the check-in at 20 h (V4).
      clock.set(T0 + 7200 + 3601 + 4000 + 60);
      await service.operator.declareOutage({
        id: `w-${setup.name}-${agentId}`,
        start: T0 + 7200 + 3601 + 4000 + 60,
        end: T0 + 19 * 3600,
        reason: "test",
      });
      const windows = (await store.read.listOutages()).filter((o) => o.id === `w-${setup.name}-${agentId}`);
      for (const [i, arrival] of arrivals.entries()) {
        clock.set(arrival);
        await service.checkins.checkIn(agentId, `h${i}`, agentKnown);
      }
      const expected = playCheckins(
        arrivals.map((arrival, i) => ({ arrival, key: `h${i}` })),
        windows,
      );
      const agent = (await store.read.getAgent(agentId))!;
      const stored: DayAggregate[] = await store.read.listDays(agentId, agent.claimId, "9999-12-31");
      expect(stored).to.deep.equal(expected.days);
      expect(expected.decisions.map((d) => d.type)).to.include("refused");
      expect(expected.counted.some((c) => c.excused)).to.equal(true);
      expect(stored.length).to.be.greaterThan(1);
      const last = expected.counted[expected.counted.length - 1];
      expect(agent.last).to.deep.equal({
        arrival: last.arrival,
        nextHeartbeatS: last.nextHeartbeatS,
        dayDigest: expected.days[expected.days.length - 1].digest,
      });
    });

    it("answers the original of any earlier key after a hundred and fifty check-ins, and counts them where they arrived (V3.1)", async () => {
      const agentId = await newAgent();
      const HOURS = 150;
      for (let h = 0; h < HOURS; h++) {
        clock.set(T0 + h * 3600);
        expect((await service.checkins.checkIn(agentId, `h${h}`, agentKnown)).type).to.equal("counted");
      }
      clock.set(T0 + HOURS * 3600);
      for (const h of [0, 63, 64, HOURS - 1]) {
        const again = await service.checkins.checkIn(agentId, `h${h}`, agentKnown);
        expect(again.type, `h${h}`).to.equal("duplicate");
        if (again.type === "duplicate")
          expect(again.original).to.include({
            arrival: T0 + h * 3600,
            nextHeartbeatS: 3600,
            onTime: h === 0 ? null : true,
            excused: false,
            credit: h === 0 ? 0 : 3600,
          });
      }
      const agent = (await store.read.getAgent(agentId))!;
      expect(await store.read.countCheckinsAt(agentId, agent.claimId, T0 + (HOURS - 1) * 3600)).to.equal(1);
    });

    it("judges a key used before the latest claim afresh: a re-claim and a transfer forget the keys (V2, V3.1, migration 006)", async () => {
      const agentId = await newAgent();
      const { ownerId } = (await store.read.getAgent(agentId))!;
      clock.set(T0 + 10);
      expect(await service.checkins.checkIn(agentId, "k1", agentKnown)).to.include({ type: "counted", arrival: T0 + 10 });
      clock.set(T0 + 100);
      await service.accounts.reclaim(ownerId, agentId);
      // One second after the re-claim the same key is a new request, the claim's first check-in (V3.4).
      clock.set(T0 + 101);
      expect(await service.checkins.checkIn(agentId, "k1", agentKnown)).to.deep.equal({
        type: "counted",
        arrival: T0 + 101,
        nextHeartbeatS: 3600,
        onTime: null,
        excused: false,
        credit: 0,
      });
      clock.set(T0 + 102);
      const { claimId } = (await store.read.getAgent(agentId))!;
      expect(await service.checkins.checkIn(agentId, "k1", agentKnown)).to.deep.equal({
        type: "duplicate",
        original: {
          agentId,
          claimId,
          idempotencyKey: "k1",
          arrival: T0 + 101,
          nextHeartbeatS: 3600,
          onTime: null,
          excused: false,
          credit: 0,
        },
      });
      const { ownerId: other } = await service.accounts.createOwner();
      clock.set(T0 + 200);
      await service.accounts.transfer(agentId, other, "test");
      clock.set(T0 + 201);
      expect(await service.checkins.checkIn(agentId, "k1", agentKnown)).to.include({ type: "counted", arrival: T0 + 201, onTime: null });
      const agent = (await store.read.getAgent(agentId))!;
      expect(await store.read.countCheckinsAt(agentId, agent.claimId, T0 + 201)).to.equal(1);
      expect(agent.last).to.include({ arrival: T0 + 201 });
    });

    it("hands over every window that may excuse the next check-in, and decides with one declared after the state was remembered (V4.3)", async () => {
      const agentId = await newAgent();
      clock.set(T0 + 10);
      await service.checkins.checkIn(agentId, "x", agentKnown);
      const deadline = T0 + 10 + 3600 + GRACE_S;
      clock.set(T0 + 20);
      const id = (s: string) => `${s}-${setup.name}-${agentId}`;
      // Declared through another service on the same database (on SQL, another server): this one's memory does not hear of it.
      const other = db === null ? service : createVraiService({ store: createSqlStore(db), clock, busy: () => false });
      await other.operator.declareOutage({ id: id("ends-at-deadline"), start: T0 + 20, end: deadline, reason: "test" });
      await other.operator.declareOutage({ id: id("open"), start: T0 + 20, end: null, reason: "test" });
      const ours = (windows: readonly { id: string }[]) => windows.map((w) => w.id).filter((w) => w.endsWith(`-${setup.name}-${agentId}`));
      // Read now (on SQL by another server, so this one's memory stays as it was).
      const now = await (db === null ? store : createSqlStore(db)).checkinState(agentId, "y", true);
      expect(ours(now.windows)).to.include.members([id("ends-at-deadline"), id("open")]);
      if (db !== null) {
        const remembered = await store.checkinState(agentId, "y");
        expect(remembered.cached).to.equal(true);
        expect(ours(remembered.windows)).to.deep.equal([]);
      }
      // Late by its deadline, inside the open window: excused (V4.3), though the state this server remembered had no window.
      clock.set(deadline + 100);
      expect(await service.checkins.checkIn(agentId, "y", agentKnown)).to.include({ type: "counted", onTime: true, excused: true });
      await other.operator.closeOutage(id("open"), deadline + 200);
      // Closed by the other server: the next late check-in is not excused by it (its end is known now).
      clock.set(deadline + 100 + 3600 + GRACE_S + 300);
      expect(await service.checkins.checkIn(agentId, "z", agentKnown)).to.include({ type: "counted", onTime: false, excused: false });
    });
  });
}

/**
 * The SQL store's memory of agents (src/store/checkin-writes.ts): two servers on one database, each remembering the agents
 * it last read or wrote. What one changes, the other's write finds, and its request is decided again on the agent as it is.
 */
for (const { name, create } of TEST_STORES) {
  describe(`check-ins on two servers remembering agents, on ${name}`, () => {
    let testDb: Awaited<ReturnType<typeof createMigratedTestDb>>;
    let one: VraiService;
    let two: VraiService;
    let oneStore: Store;
    const clock = createManualClock(T0);
    const keyOf =
      (agentKey: string) =>
      (agent: AgentRow | null): asserts agent is AgentRow => {
        if (!agent || agent.releasedAt !== null || !secretMatches(agentKey, agent.keyHash)) throw new Error("not this agent's key");
      };

    before(async () => {
      testDb = await createMigratedTestDb(create);
      oneStore = createSqlStore(testDb.db);
      one = createVraiService({ store: oneStore, clock, busy: () => false });
      two = createVraiService({ store: createSqlStore(testDb.db), clock, busy: () => false });
    });
    after(() => testDb.drop());

    async function claimed() {
      clock.set(T0);
      const { ownerId } = await one.accounts.createOwner();
      const claim = await one.accounts.claimNewAgent(ownerId);
      expect((await one.checkins.checkIn(claim.agentId, "first", keyOf(claim.agentKey))).type).to.equal("counted");
      expect((await oneStore.checkinState(claim.agentId, "next")).cached).to.equal(true);
      return claim;
    }

    it("decides on the previous check-in another server counted, not the one it remembers (V3.2, V3.5)", async () => {
      const { agentId, agentKey } = await claimed();
      clock.set(T0 + 3600);
      expect(await two.checkins.checkIn(agentId, "on-two", keyOf(agentKey))).to.include({ type: "counted", credit: 3600 });
      // Remembered: previous at T0, so 1,500 s later would be counted; as it is, 900 s after the other's: refused.
      clock.set(T0 + 4500);
      expect(await one.checkins.checkIn(agentId, "on-one", keyOf(agentKey))).to.deep.equal({ type: "refused", retryAfterS: 300 });
      clock.set(T0 + 7200);
      expect(await one.checkins.checkIn(agentId, "on-one", keyOf(agentKey))).to.include({ type: "counted", credit: 3600, onTime: true });
      const agent = (await oneStore.read.getAgent(agentId))!;
      expect((await oneStore.read.listDays(agentId, agent.claimId, "9999-12-31")).reduce((n, d) => n + d.checkins, 0)).to.equal(3);
    });

    it("answers a key counted on another server as a duplicate, not as a refusal (V3.1)", async () => {
      const { agentId, agentKey } = await claimed();
      clock.set(T0 + 3600);
      const { type, ...original } = await two.checkins.checkIn(agentId, "resent", keyOf(agentKey));
      expect(type).to.equal("counted");
      // Remembered: previous at T0, so this would be counted (V3.2); its write finds the key counted.
      clock.set(T0 + 3600 + 1300);
      const again = await one.checkins.checkIn(agentId, "resent", keyOf(agentKey));
      expect(again.type).to.equal("duplicate");
      if (again.type === "duplicate") expect(again.original).to.include(original);
    });

    it("refuses the old key once another server rotated it, and takes the new one, writing nothing for the old (issue #33)", async () => {
      const { agentId, agentKey, ownerId } = await claimed();
      const rotated = await two.accounts.rotateAgentKey(ownerId, agentId);
      clock.set(T0 + 3600);
      let refused: unknown;
      await one.checkins.checkIn(agentId, "old-key", keyOf(agentKey)).catch((error: unknown) => (refused = error));
      expect(refused).to.be.an("error").with.property("message", "not this agent's key");
      expect((await oneStore.checkinState(agentId, "old-key", true)).duplicate).to.equal(null);
      expect(await one.checkins.checkIn(agentId, "new-key", keyOf(rotated.agentKey))).to.include({ type: "counted", arrival: T0 + 3600 });
    });

    it("refuses an agent another server unclaimed, and counts the first check-in of its new claim as a first (V2, V3.4, issue #29)", async () => {
      const { agentId, agentKey, ownerId } = await claimed();
      await two.accounts.unclaim(ownerId, agentId);
      clock.set(T0 + 3600);
      let refused: unknown;
      await one.checkins.checkIn(agentId, "after-unclaim", keyOf(agentKey)).catch((error: unknown) => (refused = error));
      expect(refused).to.be.an("error").with.property("message", "not this agent's key");
      const reclaim = await two.accounts.reclaim(ownerId, agentId);
      clock.set(T0 + 3700);
      expect(await one.checkins.checkIn(agentId, "first-again", keyOf(reclaim.agentKey))).to.include({
        type: "counted",
        onTime: null,
        credit: 0,
      });
    });

    it("counts on when the windows' revision goes back (a database restored): the write checks the revision it reads", async () => {
      const { agentId, agentKey } = await claimed();
      clock.set(T0 + 30);
      await two.operator.declareOutage({ id: `back-${name}-${agentId}`, start: T0 + 10, end: T0 + 20, reason: "test" });
      clock.set(T0 + 3600);
      expect(await one.checkins.checkIn(agentId, "after-declared", keyOf(agentKey))).to.include({ type: "counted" });
      await testDb.db.query("UPDATE outage_revision SET n = 0");
      clock.set(T0 + 7200);
      expect(await one.checkins.checkIn(agentId, "after-restore", keyOf(agentKey))).to.include({ type: "counted", credit: 3600 });
      expect((await oneStore.checkinState(agentId, "next")).windowsRevision).to.equal(0);
    });

    it("remembers at most as many agents as it is given, the least recently used going first", async () => {
      const small = createCheckinWrites(testDb.db, { rememberedAgents: 2 });
      const agents = [await claimed(), await claimed(), await claimed()];
      for (const a of agents) await small.checkinState(a.agentId, "look", true);
      const cached = [];
      for (const i of [1, 2, 0]) cached.push((await small.checkinState(agents[i].agentId, "look")).cached);
      expect(cached).to.deep.equal([true, true, false]);
      const none = createCheckinWrites(testDb.db, { rememberedAgents: 0 });
      await none.checkinState(agents[0].agentId, "look", true);
      expect((await none.checkinState(agents[0].agentId, "look")).cached).to.equal(false);
    });
  });
}

describe("a check-in whose write keeps being refused", () => {
  it("gives up with 409 checkin_contended after a bounded number of attempts, having written nothing", async () => {
    const memory = createMemoryStore();
    let attempts = 0;
    const store: Store = {
      ...memory,
      commitCheckin: async () => {
        attempts++;
        return false;
      },
    };
    const service = createVraiService({ store, clock: createManualClock(T0), busy: () => false });
    const { ownerId } = await service.accounts.createOwner();
    const { agentId } = await service.accounts.claimNewAgent(ownerId);
    const error = await service.checkins.checkIn(agentId, "k", agentKnown).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).to.include({ code: "checkin_contended", status: 409 });
    expect((error as Error).message).to.equal(
      "the agent changed under 16 attempts to count this check-in; retry with the same Idempotency-Key",
    );
    expect(attempts).to.equal(16);
    expect((await memory.checkinState(agentId, "k", true)).duplicate).to.equal(null);
    expect((await memory.read.getAgent(agentId))!.last).to.equal(null);
  });
});

describe("migration 004 (last_day_digest)", () => {
  for (const { name, create } of TEST_STORES) {
    it(`fills the digest of each agent's last check-in day from its aggregates on ${name}`, async () => {
      const testDb = await createMigratedTestDb(create);
      try {
        const store = createSqlStore(testDb.db);
        const clock = createManualClock(T0);
        const service = createVraiService({ store, clock, busy: () => false });
        const { ownerId } = await service.accounts.createOwner();
        const { agentId } = await service.accounts.claimNewAgent(ownerId);
        for (let h = 0; h < 3; h++) {
          clock.set(T0 + h * 3600);
          await service.checkins.checkIn(agentId, `m${h}`, agentKnown);
        }
        const before = (await store.read.getAgent(agentId))!;
        expect(before.last!.dayDigest).to.match(/^[0-9a-f]{64}$/);
        // Back to the schema before 004, then migrate again.
        await testDb.db.query("ALTER TABLE agents DROP COLUMN last_day_digest");
        await testDb.db.query("DELETE FROM schema_migrations WHERE version = 4");
        expect(await migrate(testDb.db)).to.deep.equal(["004_checkin_day_digest.sql"]);
        const after = (await createSqlStore(testDb.db).read.getAgent(agentId))!;
        expect(after.last).to.deep.equal(before.last);
        const days = await store.read.listDays(agentId, before.claimId, "9999-12-31");
        expect(days.find((d) => d.day === utcDay(T0 + 2 * 3600))!.digest).to.equal(after.last!.dayDigest);
      } finally {
        await testDb.drop();
      }
    });
  }
});

describe("duplicate lookup on a growing day partition (PostgreSQL)", () => {
  it("never reads the partition whole, whatever its statistics said when the lookup was first run (V3.1)", async () => {
    const testDb = await createMigratedTestDb();
    // One connection, so the lookups below share the session a cached plan would live in.
    const db = createPgDb(testDb.url!, { max: 1 });
    try {
      const store = createSqlStore(db);
      const clock = createManualClock(T0);
      const service = createVraiService({ store, clock, busy: () => false });
      const { ownerId } = await service.accounts.createOwner();
      const { agentId } = await service.accounts.claimNewAgent(ownerId);
      await service.checkins.checkIn(agentId, "first", agentKnown);
      // Statistics of a nearly empty partition (as a day's partition has just after midnight), and lookups
      // while it is: PostgreSQL may then keep one generic plan for a prepared statement, costed on that
      // (whether it does depends on costs; this session makes it always do so).
      await db.query("ANALYZE checkins");
      await db.query("SET plan_cache_mode = force_generic_plan");
      for (let i = 0; i < 8; i++) expect((await store.checkinState(agentId, `absent-${i}`, true)).duplicate).to.equal(null);
      // The partition grows far past what its statistics say.
      await db.query(
        `INSERT INTO checkins (agent_id, claim_id, idempotency_key, arrival, next_heartbeat_s, on_time, excused, credit)
         SELECT $1, 0, 'bulk-' || i, $2::bigint + i % 3000, 3600, true, false, 0 FROM generate_series(1, 20000) i`,
        [agentId, T0],
      );
      const seqScans = async () => {
        await db.query("SELECT pg_stat_force_next_flush()");
        await db.query("SELECT 1");
        return Number(
          (await db.query<{ n: string }>("SELECT seq_scan AS n FROM pg_stat_user_tables WHERE relname = 'checkins_default'")).rows[0].n,
        );
      };
      const before = await seqScans();
      for (let i = 0; i < 8; i++) expect((await store.checkinState(agentId, `absent-again-${i}`, true)).duplicate).to.equal(null);
      expect((await store.checkinState(agentId, "first", true)).duplicate).to.include({ arrival: T0, idempotencyKey: "first" });
      expect(await seqScans()).to.equal(before);
    } finally {
      await db.close();
      await testDb.drop();
    }
  });
});
