import { expect } from "chai";
import { createVraiService, type VraiService } from ".";
import { createManualClock } from "./clock";
import type { AgentRow, Store } from "./ports";
import { createDeadlines } from "./webhooks/deadlines";
import { createMemoryStore } from "../store/memory-store";
import { createSqlStore } from "../store/sql-store";
import { createWebhookRepository } from "../store/webhooks";
import { createMigratedTestDb, createTestPgDb } from "../test-helpers/db";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const agentKnown: (agent: AgentRow | null) => asserts agent is AgentRow = (agent) => {
  if (!agent) throw new Error("no such agent");
};

/** The error a promise is rejected with, or null when it resolves. */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

/**
 * The check-in use-case (src/service/checkins.ts) on the memory store: what a request is answered, what the caller's
 * authentication and admission see, and what is written (V3). src/store/checkins.test.ts has the writes on every store.
 */
describe("check-ins through the service (V3)", () => {
  let store: Store;
  let service: VraiService;
  let busy: boolean;
  const clock = createManualClock(T0);

  beforeEach(() => {
    clock.set(T0);
    busy = false;
    store = createMemoryStore();
    service = createVraiService({ store, clock, busy: () => busy });
  });

  async function newAgent(): Promise<string> {
    const { ownerId } = await service.accounts.createOwner();
    return (await service.accounts.claimNewAgent(ownerId)).agentId;
  }

  it("counts the first check-in, refuses one under 1,200 s with when to come back, and answers a repeated key with its original (V3.1–V3.4)", async () => {
    const agentId = await newAgent();
    // A duplicate is answered once the store confirms the check-in it repeats is kept (checkins.ts, confirmDurable); nothing else waits for it.
    let confirmed = 0;
    let admitted = 0;
    const counting = createVraiService({
      store: {
        ...store,
        confirmDurable: async () => {
          confirmed++;
          return true;
        },
      },
      clock,
      busy: () => false,
    });
    const checkIn = (key: string) => counting.checkins.checkIn(agentId, key, agentKnown, async () => void admitted++);
    expect(await checkIn("k1")).to.deep.equal({
      type: "counted",
      arrival: T0,
      nextHeartbeatS: 3600,
      onTime: null,
      excused: false,
      credit: 0,
    });
    clock.set(T0 + 1000);
    expect(await checkIn("k2")).to.deep.equal({ type: "refused", retryAfterS: 200 });
    expect([admitted, confirmed]).to.deep.equal([2, 0]);
    const again = await checkIn("k1");
    expect([admitted, confirmed]).to.deep.equal([3, 1]);
    expect(again.type).to.equal("duplicate");
    expect(again.type === "duplicate" && again.original).to.include({
      arrival: T0,
      nextHeartbeatS: 3600,
      onTime: null,
      excused: false,
      credit: 0,
    });
    // The refused key left nothing behind: judged afresh later (V3.1).
    clock.set(T0 + 3600);
    expect(await checkIn("k2")).to.include({ type: "counted", onTime: true, credit: 3600 });
    expect([admitted, confirmed]).to.deep.equal([4, 1]);
  });

  it("gives 7,200 s while the service is busy, from the busy switch as the request is decided (V3.3)", async () => {
    const agentId = await newAgent();
    busy = true;
    expect(await service.checkins.checkIn(agentId, "b1", agentKnown)).to.include({ type: "counted", nextHeartbeatS: 7200 });
    busy = false;
    clock.set(T0 + 7200 + 600);
    // The deadline follows the previous check-in's 7,200 s: on time (V3.5).
    expect(await service.checkins.checkIn(agentId, "b2", agentKnown)).to.include({ nextHeartbeatS: 3600, onTime: true, credit: 7800 });
  });

  it("authenticates each attempt with the agent as it was read, and admits the request once, before deciding (issue #33)", async () => {
    const agentId = await newAgent();
    await service.checkins.checkIn(agentId, "first", agentKnown);
    clock.set(T0 + 3600);
    // Request A reads the state, then request B is counted before A writes: A decides again.
    let interleaved = false;
    const racing: Store = {
      ...store,
      checkinState: async (id, key, fresh) => {
        const state = await store.checkinState(id, key, fresh);
        if (key === "A" && !interleaved) {
          interleaved = true;
          await service.checkins.checkIn(agentId, "B", agentKnown);
        }
        return state;
      },
    };
    const racingService = createVraiService({ store: racing, clock, busy: () => false });
    const seen: Array<number | null> = [];
    let admitted = 0;
    const answer = await racingService.checkins.checkIn(
      agentId,
      "A",
      (agent) => {
        if (!agent) throw new Error("no such agent");
        seen.push(agent.last?.arrival ?? null);
      },
      async () => {
        admitted++;
        // What admission takes is time the arrival is read after (V1).
        clock.set(T0 + 3601);
      },
    );
    expect(seen).to.deep.equal([T0, T0 + 3600]);
    expect(admitted).to.equal(1);
    expect(answer).to.deep.equal({ type: "refused", retryAfterS: 1199 });
  });

  it("decides nothing and admits nothing for a caller that fails authentication", async () => {
    const agentId = await newAgent();
    let admitted = 0;
    const wrongKey = await refusal(
      service.checkins.checkIn(
        agentId,
        "k",
        () => {
          throw new Error("wrong key");
        },
        async () => void admitted++,
      ),
    );
    expect(wrongKey).to.have.property("message", "wrong key");
    expect(admitted).to.equal(0);
    expect((await store.read.getAgent(agentId))?.last).to.equal(null);
    expect(await refusal(service.checkins.checkIn("agt_missing", "k", agentKnown))).to.have.property("message", "no such agent");
  });
});

describe("a check-in after an agent.late (issue #28, PostgreSQL)", () => {
  it("records agent.back in the check-in's own write, naming the deadline it missed, and only for the first check-in after it", async () => {
    const testDb = await createMigratedTestDb(createTestPgDb);
    try {
      const clock = createManualClock(T0);
      const store = createSqlStore(testDb.db);
      const service = createVraiService({ store, clock, busy: () => false });
      const repo = createWebhookRepository(testDb.db);
      const { ownerId } = await service.accounts.createOwner();
      const { agentId } = await service.accounts.claimNewAgent(ownerId);
      // An owner keeps events once it has a webhook endpoint (issue #28).
      await repo.transaction((tx) =>
        tx.insertEndpoint({
          id: "whe_back",
          ownerId,
          url: "https://example.org/hook",
          description: null,
          events: ["agent.back"],
          secret: "s",
          previousSecret: null,
          previousSecretUntil: null,
          createdAt: T0,
          updatedAt: T0,
          failingSince: null,
          disabledAt: null,
          disabledReason: null,
        }),
      );
      const deadlines = createDeadlines({ repo, clock });
      await deadlines.scanLapses();
      await service.checkins.checkIn(agentId, "k1", agentKnown);
      // V3.5: the deadline is the arrival, its next_heartbeat_s and 600 s of grace.
      clock.set(T0 + 3600 + 600 + 60);
      expect(await deadlines.scanLapses()).to.equal(1);
      clock.set(T0 + 3600 + 600 + 120);
      expect(await service.checkins.checkIn(agentId, "k2", agentKnown)).to.include({ type: "counted", onTime: false });
      clock.set(T0 + 3600 + 600 + 120 + 1200);
      expect(await service.checkins.checkIn(agentId, "k3", agentKnown)).to.include({ type: "counted", onTime: true });
      const events = (await repo.read.listEvents(ownerId, 0, { limit: 100 })).filter((e) => e.type === "agent.back");
      expect(events.map((e) => [e.at, JSON.parse(e.data)])).to.deep.equal([
        [T0 + 4320, { agentId, arrival: "2026-11-02T11:12:00Z", missedDeadline: "2026-11-02T11:10:00Z" }],
      ]);
      expect((await store.read.getAgent(agentId))?.lateDeadline).to.equal(null);
    } finally {
      await testDb.drop();
    }
  });
});
