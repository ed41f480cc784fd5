import http from "node:http";
import { expect } from "chai";
import pg from "pg";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { TEST_STORES, type TestDb } from "../test-helpers/db";

/** An answer: its status and error code. */
type Answer = { status: number; code: string | undefined };

/**
 * One request from the loopback address `from` (a client of its own: 127.0.0.0/8 gives as many as a
 * test needs), its body written in `chunks` with `gapMs` between them when given. With `holdLastMs`, the last chunk
 * waits for the answer (at most that long): a server that answers without the whole body is seen to do so
 * (`before`) however slowly it answers, and one that waits for it gets it only after that time.
 */
function request(
  url: string,
  options: {
    from: string;
    method: string;
    path: string;
    headers?: Record<string, string>;
    body?: string;
    chunks?: number;
    gapMs?: number;
    holdLastMs?: number;
    agent?: http.Agent;
  },
): Promise<Answer & { before: boolean }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    let sent = false;
    let answered: () => void = () => undefined;
    /** Settles once the answer has come. */
    const answer = new Promise<void>((resolve) => (answered = resolve));
    const req = http.request(
      {
        host: hostname,
        port,
        method: options.method,
        path: options.path,
        headers: options.headers,
        localAddress: options.from,
        agent: options.agent ?? false,
      },
      (res) => {
        // `before`: answered while the body was still being sent.
        const before = !sent;
        answered();
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode ?? 0, code, before });
        });
      },
    );
    req.on("error", reject);
    const body = options.body ?? "";
    const chunks = options.chunks ?? 1;
    const size = Math.ceil(body.length / chunks);
    let i = 0;
    const next = () => {
      if (req.destroyed) return;
      if (i >= chunks) {
        sent = true;
        req.end();
        return;
      }
      req.write(body.slice(i * size, (i + 1) * size));
      i++;
      if (i === chunks - 1 && options.holdLastMs !== undefined) {
        // The last chunk goes on the answer, or once `holdLastMs` has passed without one (a timer that holds nothing open).
        const waited = new Promise((resolve) => setTimeout(resolve, options.holdLastMs).unref());
        void Promise.race([answer, waited]).then(next);
      } else if (options.gapMs) setTimeout(next, options.gapMs);
      else next();
    };
    next();
  });
}

const tally = (answers: readonly Answer[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const key = `${a.status} ${a.code ?? ""}`.trim();
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

for (const { name, create } of TEST_STORES) {
  describe(`an agent's budget is spent only by the agent (issue #33, finding 1) on ${name}`, function () {
    this.timeout(120_000);
    let testDb: TestDb;
    let server: ApiServer;
    const clock = createManualClock(Date.UTC(2026, 11, 3, 10) / 1000);
    before(async () => {
      testDb = await create();
      // The limits as configured by default; each client is its own loopback address, X-Forwarded-For trusted from nobody.
      server = await startApiServer({
        db: testDb.db,
        operatorToken: "operator-token-agent-budget-test",
        logger: pino({ level: "silent" }),
        clock,
        trustProxy: false,
      });
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    const newAgent = async () => {
      const { ownerId } = await server.service.accounts.createOwner();
      return server.service.accounts.claimNewAgent(ownerId);
    };
    const checkIn = (agentId: string, key: string, from: string, idempotencyKey: string, agent?: http.Agent) =>
      request(server.url, {
        from,
        method: "POST",
        path: `/v1/agents/${agentId}/checkins`,
        headers: { authorization: `Bearer ${key}`, "idempotency-key": idempotencyKey },
        agent,
      });

    /**
     * Holds the store so that every query waits until `release()`: the requests sent meanwhile are all in
     * flight at once, as on a loaded database (PostgreSQL: a lock on the agents table; PGlite, one
     * connection: a transaction left open).
     */
    async function holdStore(): Promise<() => Promise<void>> {
      if (testDb.kind === "pg") {
        const client = new pg.Client({ connectionString: testDb.url });
        await client.connect();
        await client.query("BEGIN");
        await client.query("LOCK TABLE agents IN ACCESS EXCLUSIVE MODE");
        return async () => {
          await client.query("COMMIT");
          await client.end();
        };
      }
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding!: () => void;
      const started = new Promise<void>((resolve) => (holding = resolve));
      const done = testDb.db.transaction(async () => {
        holding();
        await held;
      });
      await started;
      return async () => {
        release();
        await done;
      };
    }

    it("600 wrong-key check-ins from 20 addresses, all in flight at once, leave the real agent's check-in counted (600 requests at once: 3-12 s)", async () => {
      const agent = await newAgent();
      const attackers = Array.from({ length: 20 }, (_, i) => `127.0.${1 + i}.9`);
      const agents = attackers.map(() => new http.Agent({ keepAlive: true, maxSockets: 30 }));
      const release = await holdStore();
      try {
        const flood = attackers.flatMap((from, a) =>
          Array.from({ length: 30 }, (_, i) =>
            checkIn(agent.agentId, `va_${agent.agentId}.k_forged${i}`, from, `forged-${a}-${i}`, agents[a]),
          ),
        );
        // The forged requests arrive while the store is held, so none is answered before the real one comes.
        await new Promise((resolve) => setTimeout(resolve, 500));
        const real = checkIn(agent.agentId, agent.agentKey, "127.0.100.1", "real-1");
        await new Promise((resolve) => setTimeout(resolve, 100));
        await release();
        const answers = await Promise.all(flood);
        // Every forged key is a failed authentication of its address (30 a minute each), never a request of the agent.
        expect(tally(answers)).to.deep.equal({ "401 invalid_agent_key": 600 });
        expect(await real).to.deep.include({ status: 201 });
        // Right after, the agent's own budget is whole: a second check-in is refused only by V3.2's spacing, not by a limit.
        const after = await checkIn(agent.agentId, agent.agentKey, "127.0.100.1", "real-2");
        expect([after.status, after.code]).to.deep.equal([429, "checkin_refused"]);
        // The attackers' addresses are spent: the next forged key is refused before any lookup.
        expect((await checkIn(agent.agentId, "va_x.y", attackers[0], "forged-more")).code).to.equal("rate_limited");
      } finally {
        for (const a of agents) a.destroy();
      }
    });

    it("an agent whose limit is spent by itself is still limited: a verified request is charged to the agent", async () => {
      const agent = await newAgent();
      const answers: Answer[] = [];
      // 120 at once per window (RATE_LIMIT_PER_MINUTE / 5), from many addresses: the agent's, not the addresses', budget.
      for (let i = 0; i < 125; i++) answers.push(await checkIn(agent.agentId, agent.agentKey, `127.1.${i % 50}.1`, `own-${i}`));
      const counts = tally(answers);
      expect(counts["201"]).to.equal(1);
      expect(counts["429 checkin_refused"]).to.equal(119);
      expect(counts["429 rate_limited"]).to.equal(5);
    });

    it("summaries with a wrong key and a trickling body are answered 401 before their body arrives, and the agent checks in meanwhile", async () => {
      const agent = await newAgent();
      const body = JSON.stringify({ records: [{ executor: "x" }] }).padEnd(2000, " ");
      const attackers = ["127.0.200.1", "127.0.200.2", "127.0.200.3"];
      const slow = attackers.flatMap((from) =>
        Array.from({ length: 45 }, () =>
          request(server.url, {
            from,
            method: "POST",
            path: `/v1/agents/${agent.agentId}/summaries`,
            body,
            chunks: 20,
            gapMs: 100,
            // The body is whole only once the answer came: "answered before the body" is then not a race with a
            // loaded server (under a CPU hog some 401s came after the trickle's 2 s had ended).
            holdLastMs: 20_000,
            headers: {
              authorization: `Bearer va_${agent.agentId}.k_forged`,
              "content-type": "application/json",
              "content-length": String(body.length),
            },
          }).catch((error: Error) => ({ status: 0, code: error.message, before: true })),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await checkIn(agent.agentId, agent.agentKey, "127.0.201.1", "real-trickle")).to.deep.include({ status: 201 });
      const answers = await Promise.all(slow);
      // Failed authentications of their addresses (then 429 before any lookup): none waited for its body.
      const counts = tally(answers);
      expect(Object.keys(counts).filter((k) => k !== "401 invalid_agent_key" && k !== "429 rate_limited")).to.deep.equal([]);
      expect(counts["401 invalid_agent_key"]).to.be.at.least(90);
      expect(answers.every((a) => a.before)).to.equal(true);
    });
  });
}
