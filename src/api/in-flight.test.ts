import http from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import pino from "pino";
import { createVraiService } from "../service";
import { createManualClock } from "../service/clock";
import { createLoadMonitor } from "../service/load";
import type { Store } from "../service/ports";
import { UnauthorizedError } from "../service/errors";
import { createMemoryStore } from "../store/memory-store";
import { createReads, createSiteReads } from "../service/reads";
import { createHttpApp } from "./express";
import { createApiMetrics } from "./metrics";
import { createRateLimits, DEFAULT_RATE_LIMITS } from "./rate-limit";
import { serviceRoutes } from "./service-routes";

describe("a check-in whose Idempotency-Key is still in flight", () => {
  it("answers 409 to the second request and 201 to the first once it commits", async () => {
    const memory = createMemoryStore();
    let gate: Promise<void> | null = null;
    let atGate: () => void = () => undefined;
    // The same store, with check-in writes held at a gate so that the first request stays in flight.
    const store: Store = {
      ...memory,
      commitCheckin: async (...args) => {
        if (gate) {
          atGate();
          await gate;
        }
        return memory.commitCheckin(...args);
      },
    };
    const load = createLoadMonitor({ maxInFlight: 100, maxLoopDelayMs: 10_000 });
    const service = createVraiService({ store, clock: createManualClock(Date.UTC(2026, 10, 2) / 1000), busy: () => false });
    const metrics = createApiMetrics({ busy: () => false });
    const reads = createReads({
      store,
      latestScores: { latestScoreSummary: async () => ({ agentExists: false, score: null }) },
      clock: service.clock,
      registrations: { ofAgent: async () => null },
    });
    const app = createHttpApp({
      // The memory store keeps no pages of declared windows: this test declares none and reads none.
      routes: serviceRoutes({
        ...service,
        reads,
        // No ERC-8004 feedback on the memory store (issue #27): every agent's publishing is off.
        publishing: { status: async () => ({ enabled: false, changedAt: null, reason: null, target: null, feedback: [] }) },
        site: createSiteReads({
          site: {
            listOutagesPage: async () => [],
            listDailyTotals: async () => [],
            dayOfClaim: async () => null,
            hasDailyScoreFrom: async () => false,
          },
          clock: service.clock,
        }),
        checkinResults: metrics.checkinResults,
      }),
      authenticateOwner: service.ownerTokens.authenticate,
      authenticateOperator: async () => {
        throw new UnauthorizedError("invalid_operator_token", "no operator in this test");
      },
      authenticateAgent: async (agentId, key) => void (await service.accounts.authenticateAgent(agentId, key)),
      limits: createRateLimits(DEFAULT_RATE_LIMITS),
      load,
      metrics,
      logger: pino({ level: "silent" }),
    });
    const server = http.createServer(app).listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { ownerId } = await service.accounts.createOwner();
      const { agentId, agentKey } = await service.accounts.claimNewAgent(ownerId);
      const send = () =>
        fetch(`${url}/v1/agents/${agentId}/checkins`, {
          method: "POST",
          headers: { authorization: `Bearer ${agentKey}`, "idempotency-key": "same" },
        });
      let open!: () => void;
      gate = new Promise((resolve) => (open = resolve));
      // The second is sent once the first waits at the gate, not after a fixed time (a loaded machine may take longer).
      const reached = new Promise<void>((resolve) => (atGate = resolve));
      const first = send();
      await reached;
      const second = await send();
      expect(second.status).to.equal(409);
      expect(((await second.json()) as { error: { code: string } }).error.code).to.equal("checkin_in_flight");
      gate = null;
      open();
      expect((await first).status).to.equal(201);
      const again = await send();
      expect(again.status).to.equal(201);
      expect(again.headers.get("idempotent-replayed")).to.equal("true");
    } finally {
      load.stop();
      server.close();
    }
  });
});
