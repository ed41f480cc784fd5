import { expect } from "chai";
import pino from "pino";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { OWNER_RECOMPUTE_LEASE_S, ownerRecomputeBackoffS } from "../service/owner-recomputes";
import { CHALLENGE_TTL_S } from "../service/proof-checks";
import { TEST_STORES, type TestDb } from "../test-helpers/db";

const OPERATOR_TOKEN = "operator-test-token-bounded-0123";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const LIMITS = { openChallenges: 3, agents: 12 };
/** Parallel requests racing for the last place under a limit. */
const RACERS = 8;

type Json = Record<string, any>;

/** Issue #15, finding 7: what one owner stores is bounded, and an owner-level proof's fan-out leaves the request. */
for (const { name, create } of TEST_STORES) {
  describe(`bounded storage per owner on ${name}`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    const clock = createManualClock(T0);

    const start = (options: { worker?: boolean } = {}) =>
      startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock,
        logger: pino({ level: "silent" }),
        limits: LIMITS,
        ownerRecomputeWorker: options.worker ?? false,
        rateLimit: { perMinute: 100_000, burst: 10_000 },
      });
    async function call(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; json: Json }> {
      const res = await fetch(server.url + path, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Json };
    }
    const count = async (sql: string, params: unknown[] = []) => (await testDb.db.query<{ n: number }>(sql, params)).rows[0].n;
    const newOwner = async () => (await call("POST", "/v1/owners", undefined, {})).json as { ownerId: string; token: string };
    /** `n` agents of the owner, claimed through the service (each claim stores its first score, V9). */
    async function claimAgents(ownerId: string, n: number): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push((await server.service.accounts.claimNewAgent(ownerId)).agentId);
      return ids;
    }
    /** The owner proves a new wallet (an owner-level proof, V6) over HTTP. */
    async function proveWallet(token: string) {
      const wallet = privateKeyToAccount(generatePrivateKey());
      const challenge = await call("POST", "/v1/proofs/challenges", token, { kind: "wallet", subject: wallet.address });
      expect(challenge.status).to.equal(201);
      const signature = await wallet.signMessage({ message: challenge.json.message });
      return call("POST", "/v1/proofs", token, {
        challengeId: challenge.json.id,
        evidence: { address: wallet.address, signature, signatureType: "eip191" },
      });
    }
    const latestTotals = async (ids: string[]) =>
      (
        await testDb.db.query<{ total: number }>(
          `SELECT (SELECT total FROM scores s WHERE s.agent_id = a.id ORDER BY at DESC, id DESC LIMIT 1) AS total FROM unnest($1::text[]) AS a (id)`,
          [ids],
        )
      ).rows.map((r) => r.total);
    const pending = (ownerId: string) => count("SELECT count(*)::int AS n FROM owner_recomputes WHERE owner_id = $1", [ownerId]);

    before(async () => {
      testDb = await create();
      server = await start();
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });
    afterEach(() => clock.set(T0));

    describe("expired challenges", () => {
      it("deletes 10,000 expired challenges at the scheduler's tick and keeps the open ones", async () => {
        const owner = await newOwner();
        await testDb.db.query(
          `INSERT INTO proof_challenges (id, kind, owner_id, agent_id, subject, nonce, token, message, issued_at, expires_at)
           SELECT 'expired-' || i, 'wallet', $1, NULL, 's', 'n', 't', 'm', $2::bigint - 7200, $2::bigint - 7200 + $3::bigint
           FROM generate_series(1, 10000) AS i`,
          [owner.ownerId, T0, CHALLENGE_TTL_S],
        );
        const open = await call("POST", "/v1/proofs/challenges", (await newOwner()).token, { kind: "github", subject: "octocat" });
        expect(open.status).to.equal(201);
        expect(await count("SELECT count(*)::int AS n FROM proof_challenges WHERE expires_at <= $1", [T0])).to.equal(10_000);
        await server.scheduler.tick();
        expect(await count("SELECT count(*)::int AS n FROM proof_challenges WHERE expires_at <= $1", [T0])).to.equal(0);
        expect(await count("SELECT count(*)::int AS n FROM proof_challenges WHERE id = $1", [open.json.id])).to.equal(1);
      });

      it("deletes an owner's expired challenges when it asks for a new one", async () => {
        const owner = await newOwner();
        const first = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "octocat" });
        clock.set(T0 + CHALLENGE_TTL_S);
        const second = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "octocat" });
        expect(second.status).to.equal(201);
        expect((await testDb.db.query("SELECT id FROM proof_challenges WHERE owner_id = $1", [owner.ownerId])).rows).to.deep.equal([
          { id: second.json.id },
        ]);
        expect(first.json.id).not.to.equal(second.json.id);
      });
    });

    describe("open challenges per owner", () => {
      it("refuses a challenge past the limit with 409 limit_reached naming it, and stores nothing; an expired one frees its place", async () => {
        const owner = await newOwner();
        for (let i = 0; i < LIMITS.openChallenges; i++) {
          expect((await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: `user${i}` })).status).to.equal(201);
        }
        const refused = await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "one-more" });
        expect(refused.status).to.equal(409);
        expect(refused.json.error.code).to.equal("limit_reached");
        expect(refused.json.error.message).to.contain(
          `at most ${LIMITS.openChallenges} open proof challenges (MAX_OPEN_CHALLENGES_PER_OWNER)`,
        );
        expect(await count("SELECT count(*)::int AS n FROM proof_challenges WHERE owner_id = $1", [owner.ownerId])).to.equal(
          LIMITS.openChallenges,
        );
        // Another owner is not held to this one's challenges.
        expect(
          (await call("POST", "/v1/proofs/challenges", (await newOwner()).token, { kind: "github", subject: "other" })).status,
        ).to.equal(201);
        clock.set(T0 + CHALLENGE_TTL_S);
        expect((await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: "later" })).status).to.equal(201);
      });

      it("lets exactly one of several parallel requests take the last place", async () => {
        const owner = await newOwner();
        for (let i = 0; i < LIMITS.openChallenges - 1; i++)
          await call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: `user${i}` });
        const answers = await Promise.all(
          Array.from({ length: RACERS }, (_, i) =>
            call("POST", "/v1/proofs/challenges", owner.token, { kind: "github", subject: `racer${i}` }),
          ),
        );
        expect(answers.map((a) => a.status).sort()).to.deep.equal([201, ...Array<number>(RACERS - 1).fill(409)]);
        expect(await count("SELECT count(*)::int AS n FROM proof_challenges WHERE owner_id = $1", [owner.ownerId])).to.equal(
          LIMITS.openChallenges,
        );
      });
    });

    describe("agents per owner and the owner-level proof fan-out", () => {
      let owner: { ownerId: string; token: string };
      let agents: string[];
      before(async () => {
        owner = await newOwner();
        agents = await claimAgents(owner.ownerId, LIMITS.agents - 1);
      });

      it("lets exactly one of several parallel claims take the last place, and refuses the rest with 409 limit_reached, storing nothing", async () => {
        const claims = await count("SELECT count(*)::int AS n FROM claims");
        const answers = await Promise.all(Array.from({ length: RACERS }, () => call("POST", "/v1/agents", owner.token, {})));
        expect(answers.map((a) => a.status).sort()).to.deep.equal([201, ...Array<number>(RACERS - 1).fill(409)]);
        const refused = answers.find((a) => a.status === 409)!;
        expect(refused.json.error).to.include({ code: "limit_reached" });
        expect(refused.json.error.message).to.contain(`at most ${LIMITS.agents} agents (MAX_AGENTS_PER_OWNER)`);
        expect(await count("SELECT count(*)::int AS n FROM agents WHERE owner_id = $1", [owner.ownerId])).to.equal(LIMITS.agents);
        expect(await count("SELECT count(*)::int AS n FROM claims")).to.equal(claims + 1);
        agents.push(answers.find((a) => a.status === 201)!.json.agentId);
        expect((await call("POST", "/v1/agents", owner.token, {})).status).to.equal(409);
      });

      it("stores an owner-level proof without scoring the owner's agents in the request; the drain scores every one of them (V6, V9)", async () => {
        const scores = await count("SELECT count(*)::int AS n FROM scores");
        const proved = await proveWallet(owner.token);
        expect(proved.status).to.equal(201);
        expect(await count("SELECT count(*)::int AS n FROM scores")).to.equal(scores);
        expect(new Set(await latestTotals(agents))).to.deep.equal(new Set([200]));
        expect(await pending(owner.ownerId)).to.equal(1);

        expect(await server.service.ownerRecomputes.drain()).to.deep.equal({ owners: 1, scores: LIMITS.agents, failed: 0 });
        expect(await count("SELECT count(*)::int AS n FROM scores")).to.equal(scores + LIMITS.agents);
        expect(new Set(await latestTotals(agents))).to.deep.equal(new Set([230]));
        expect(await pending(owner.ownerId)).to.equal(0);
        expect(await server.service.ownerRecomputes.drain()).to.deep.equal({ owners: 0, scores: 0, failed: 0 });
      });
    });

    describe("paged lists", () => {
      /** Every item of a list route, following nextCursor `limit` at a time, and the pages' sizes. */
      async function allPages(path: string, field: string, limit: number, token?: string): Promise<{ items: Json[]; sizes: number[] }> {
        const items: Json[] = [];
        const sizes: number[] = [];
        const join = path.includes("?") ? "&" : "?";
        for (let cursor: string | null = null, pages = 0; pages === 0 || cursor !== null; pages++) {
          expect(pages, `more pages than items under ${path}`).to.be.below(20);
          const page = await call(
            "GET",
            `${path}${join}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
            token,
          );
          expect(page.status, JSON.stringify(page.json)).to.equal(200);
          items.push(...page.json[field]);
          sizes.push(page.json[field].length);
          cursor = page.json.nextCursor;
        }
        return { items, sizes };
      }

      it("pages /v1/owners/me by agent id, with nextCursor null on the last page", async () => {
        const owner = await newOwner();
        const agents = (await claimAgents(owner.ownerId, 5)).sort();
        const { items, sizes } = await allPages("/v1/owners/me", "agents", 2, owner.token);
        expect(items).to.deep.equal(agents);
        expect(sizes).to.deep.equal([2, 2, 1]);
        const first = await call("GET", "/v1/owners/me", owner.token);
        expect(first.json).to.deep.equal({ ownerId: owner.ownerId, agents, nextCursor: null });
      });

      it("pages an agent's penalties, proofs and daily scores, the audit log and the declared windows", async () => {
        const owner = await newOwner();
        const [agentId] = await claimAgents(owner.ownerId, 1);
        for (let i = 0; i < 3; i++) {
          clock.set(T0 + i);
          const added = await call("POST", "/v1/operator/penalties", OPERATOR_TOKEN, {
            agentId,
            code: "rule_violation",
            points: 10,
            days: 30,
            reason: `spam ${i}`,
          });
          expect(added.status).to.equal(201);
          await server.service.identity.recordProof({
            id: `gh-${agentId}-${i}`,
            kind: "github",
            ownerId: owner.ownerId,
            agentId: null,
            subject: `user${i}`,
            binding: null,
            evidence: {},
          });
        }
        const penalties = await allPages(`/v1/agents/${agentId}/penalties`, "penalties", 2);
        expect(penalties.items.map((p) => p.addedAt)).to.deep.equal(
          [0, 1, 2].map((i) => new Date((T0 + i) * 1000).toISOString().replace(".000", "")),
        );
        expect(penalties.sizes).to.deep.equal([2, 1]);
        const proofs = await allPages(`/v1/agents/${agentId}/proofs`, "proofs", 2);
        expect(proofs.items.map((p) => p.id)).to.deep.equal([0, 1, 2].map((i) => `gh-${agentId}-${i}`));

        const history = `/v1/agents/${agentId}/scores?from=2026-11-01&to=2026-11-30`;
        clock.set(T0 + 3 * 86400);
        await server.scheduler.catchUpDaily();
        const days = (await allPages(history, "scores", 2)).items.map((x) => x.day);
        expect(days).to.include.members(["2026-11-03", "2026-11-04", "2026-11-05"]);
        expect(days).to.deep.equal([...new Set(days)].sort());

        const entries = await allPages("/v1/operator/audit", "entries", 2, OPERATOR_TOKEN);
        const ids = entries.items.map((x) => x.id);
        expect(ids).to.deep.equal([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).to.equal(ids.length);
        expect(entries.items.filter((x) => x.subject === agentId || x.details?.agentId === agentId).length).to.be.at.least(3);

        for (let i = 0; i < 3; i++) {
          const declared = await call("POST", "/v1/operator/outages", OPERATOR_TOKEN, {
            start: new Date((T0 + 3 * 86400 - 3600 + i) * 1000).toISOString().replace(".000", ""),
            end: null,
            reason: `window ${i}`,
          });
          expect(declared.status).to.equal(201);
        }
        const windows = await allPages("/v1/outages", "outages", 2);
        expect(windows.items.map((o) => o.reason).slice(0, 3)).to.deep.equal(["window 2", "window 1", "window 0"]);
        const method = await call("GET", "/v1/method");
        expect(method.json.outages.map((o: Json) => o.id)).to.deep.equal(windows.items.map((o) => o.id));
        expect(method.json.outagesNextCursor).to.equal(null);
      });

      it("refuses a page size out of range and a cursor no page of that list gave, with 400", async () => {
        const owner = await newOwner();
        const [agentId] = await claimAgents(owner.ownerId, 2);
        const me = await call("GET", "/v1/owners/me?limit=1", owner.token);
        expect(me.json.nextCursor).to.be.a("string");
        expect((await call("GET", `/v1/owners/me?limit=1&cursor=${me.json.nextCursor}`, owner.token)).status).to.equal(200);
        // A cursor names its list (issue #33): another owner's list of agents refuses it too.
        const other = await newOwner();
        await claimAgents(other.ownerId, 2);
        for (const [path, token] of [
          [`/v1/owners/me?limit=1&cursor=${me.json.nextCursor}`, other.token],
          ["/v1/owners/me?limit=0", owner.token],
          ["/v1/owners/me?limit=1001", owner.token],
          [`/v1/agents/${agentId}/proofs?limit=101`, undefined],
          ["/v1/owners/me?cursor=not-a-cursor", owner.token],
          [`/v1/agents/${agentId}/penalties?cursor=${me.json.nextCursor}`, undefined],
          [`/v1/operator/audit?cursor=${me.json.nextCursor}`, OPERATOR_TOKEN],
          [`/v1/outages?cursor=${"A".repeat(201)}`, undefined],
        ] as const) {
          const answer = await call("GET", path, token);
          expect(answer.status, path).to.equal(400);
          expect(answer.json.error.code, path).to.be.oneOf(["invalid_request", "invalid_cursor"]);
          expect(answer.json.error.message, path).to.match(/limit|cursor/);
        }
      });

      it(
        "refuses a cursor of another list whose keys have the same shape (an instant and an id): " +
          "an agent's penalties, its proofs, the declared windows, another agent's penalties (issue #33)",
        async () => {
          const owner = await newOwner();
          const [agentId, otherId] = await claimAgents(owner.ownerId, 2);
          for (let i = 0; i < 2; i++) {
            clock.set(T0 + 10 * 86400 + i);
            for (const agent of [agentId, otherId]) {
              expect(
                (
                  await call("POST", "/v1/operator/penalties", OPERATOR_TOKEN, {
                    agentId: agent,
                    code: "rule_violation",
                    points: 10,
                    days: 30,
                    reason: `same shape ${i}`,
                  })
                ).status,
              ).to.equal(201);
            }
            await server.service.identity.recordProof({
              id: `same-shape-${agentId}-${i}`,
              kind: "github",
              ownerId: owner.ownerId,
              agentId: null,
              subject: `shape${i}`,
              binding: null,
              evidence: {},
            });
            const declared = await call("POST", "/v1/operator/outages", OPERATOR_TOKEN, {
              start: new Date((T0 + 10 * 86400 + i) * 1000).toISOString().replace(".000", ""),
              end: null,
              reason: `same shape ${i}`,
            });
            expect(declared.status, JSON.stringify(declared.json)).to.equal(201);
          }
          const lists = {
            penalties: `/v1/agents/${agentId}/penalties`,
            proofs: `/v1/agents/${agentId}/proofs`,
            outages: "/v1/outages",
            otherPenalties: `/v1/agents/${otherId}/penalties`,
          };
          const cursors: Record<string, string> = {};
          for (const [name, path] of Object.entries(lists)) {
            const first = await call("GET", `${path}?limit=1`);
            expect(first.json.nextCursor, name).to.be.a("string");
            cursors[name] = first.json.nextCursor;
            // Its own list takes it.
            expect((await call("GET", `${path}?limit=1&cursor=${cursors[name]}`)).status, name).to.equal(200);
          }
          for (const [from, cursor] of Object.entries(cursors)) {
            for (const [to, path] of Object.entries(lists)) {
              if (from === to) continue;
              const answer = await call("GET", `${path}?limit=1&cursor=${cursor}`);
              expect([answer.status, answer.json.error?.code], `the ${from} cursor on ${to}`).to.deep.equal([400, "invalid_cursor"]);
            }
          }
        },
      );
    });

    describe("the owner recompute queue", () => {
      it("keeps a request across a restart and does it at the next drain", async () => {
        const owner = await newOwner();
        const agents = await claimAgents(owner.ownerId, 3);
        expect((await proveWallet(owner.token)).status).to.equal(201);
        await server.close();
        server = await start();
        expect(await pending(owner.ownerId)).to.equal(1);
        expect(await latestTotals(agents)).to.deep.equal([200, 200, 200]);
        await server.service.ownerRecomputes.drain();
        expect(await latestTotals(agents)).to.deep.equal([230, 230, 230]);
        expect(await pending(owner.ownerId)).to.equal(0);
      });

      it("drains what an earlier process left as soon as a server with the worker starts", async () => {
        const owner = await newOwner();
        const agents = await claimAgents(owner.ownerId, 2);
        expect((await proveWallet(owner.token)).status).to.equal(201);
        await server.close();
        server = await start({ worker: true });
        // Closing waits for the drain the start began.
        await server.close();
        expect(await latestTotals(agents)).to.deep.equal([230, 230]);
        expect(await pending(owner.ownerId)).to.equal(0);
        server = await start();
      });

      it("does a request whose drain stopped midway once its lease has run out", async () => {
        const owner = await newOwner();
        const agents = await claimAgents(owner.ownerId, 2);
        expect((await proveWallet(owner.token)).status).to.equal(201);
        // A drain takes the request and stops before recomputing (the process died).
        const taken = await server.service.store.transaction((tx) => tx.takeOwnerRecomputes(T0, T0 + OWNER_RECOMPUTE_LEASE_S, 10));
        expect(taken.map((j) => j.ownerId)).to.deep.equal([owner.ownerId]);
        expect((await server.service.ownerRecomputes.drain()).owners).to.equal(0);
        clock.set(T0 + OWNER_RECOMPUTE_LEASE_S);
        expect((await server.service.ownerRecomputes.drain()).owners).to.equal(1);
        expect(await latestTotals(agents)).to.deep.equal([230, 230]);
      });

      it("lets a drain that outlived its lease end no request made after it took its own", async () => {
        const owner = await newOwner();
        const agents = await claimAgents(owner.ownerId, 1);
        expect((await proveWallet(owner.token)).status).to.equal(201);
        const [stale] = await server.service.store.transaction((tx) => tx.takeOwnerRecomputes(T0, T0 + OWNER_RECOMPUTE_LEASE_S, 10));
        clock.set(T0 + OWNER_RECOMPUTE_LEASE_S);
        expect((await server.service.ownerRecomputes.drain()).owners).to.equal(1);
        // A new change after that drain is a new request; the slow drain finishing its old one leaves it.
        expect((await proveWallet(owner.token)).status).to.equal(201);
        await server.service.store.transaction((tx) => tx.finishOwnerRecompute(stale, T0 + OWNER_RECOMPUTE_LEASE_S));
        expect(await pending(owner.ownerId)).to.equal(1);
        expect(await server.service.ownerRecomputes.drain()).to.deep.equal({ owners: 1, scores: 1, failed: 0 });
        expect(await latestTotals(agents)).to.deep.equal([230]);
      });

      it("keeps a request whose recompute failed, and does it after its backoff", async () => {
        const owner = await newOwner();
        const agents = await claimAgents(owner.ownerId, 2);
        expect((await proveWallet(owner.token)).status).to.equal(201);
        // A real failure: the database refuses every new score while the trigger exists.
        await testDb.db.query(
          `CREATE FUNCTION refuse_scores() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'scores refused'; END $$`,
        );
        await testDb.db.query("CREATE TRIGGER refuse_scores BEFORE INSERT ON scores FOR EACH ROW EXECUTE FUNCTION refuse_scores()");
        try {
          expect(await server.service.ownerRecomputes.drain()).to.deep.equal({ owners: 0, scores: 0, failed: 1 });
        } finally {
          await testDb.db.query("DROP TRIGGER refuse_scores ON scores");
          await testDb.db.query("DROP FUNCTION refuse_scores()");
        }
        const row = (
          await testDb.db.query<{ attempts: number; due_at: string; last_error: string }>(
            "SELECT attempts, due_at, last_error FROM owner_recomputes WHERE owner_id = $1",
            [owner.ownerId],
          )
        ).rows[0];
        expect(row).to.deep.include({ attempts: 1, last_error: "scores refused" });
        expect(Number(row.due_at)).to.equal(T0 + ownerRecomputeBackoffS(0));
        expect(await latestTotals(agents)).to.deep.equal([200, 200]);
        expect((await server.service.ownerRecomputes.drain()).owners).to.equal(0);
        clock.set(T0 + ownerRecomputeBackoffS(0));
        expect(await server.service.ownerRecomputes.drain()).to.deep.equal({ owners: 1, scores: 2, failed: 0 });
        expect(await latestTotals(agents)).to.deep.equal([230, 230]);
      });

      it("recomputes again when another change came while a drain was recomputing", async () => {
        const owner = await newOwner();
        const agents = await claimAgents(owner.ownerId, 1);
        const proved = await proveWallet(owner.token);
        const [job] = await server.service.store.transaction((tx) => tx.takeOwnerRecomputes(T0, T0 + OWNER_RECOMPUTE_LEASE_S, 10));
        // The owner removes the proof while the drain that took the request is still at work.
        expect((await call("DELETE", `/v1/proofs/${proved.json.id}`, owner.token)).status).to.equal(200);
        await server.service.store.transaction((tx) => tx.finishOwnerRecompute(job, T0));
        expect(await pending(owner.ownerId)).to.equal(1);
        expect(await server.service.ownerRecomputes.drain()).to.deep.equal({ owners: 1, scores: 1, failed: 0 });
        expect(await latestTotals(agents)).to.deep.equal([200]);
        expect(await pending(owner.ownerId)).to.equal(0);
      });
    });
  });
}
