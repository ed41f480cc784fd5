/**
 * PostgreSQL failover under a check-in load (issue #18): a primary and a synchronous hot standby managed by
 * pg_auto_failover; the primary's postmaster is SIGKILLed while agents check in through the HTTP API. The
 * service reaches the promoted standby without a restart (its Db tries each host of the multi-host URL for the
 * one not in recovery), answers 503 with Retry-After in between, and loses no acknowledged check-in (V3.1:
 * a retry with the same Idempotency-Key is answered, never counted twice).
 */
import net from "node:net";
import { expect } from "chai";
import pino from "pino";
import { createPgDb, type Db } from "../store/db";
import { createTestPgDb } from "../test-helpers/db";
import { freePort } from "../test-helpers/node";
import { startAutoFailoverFormation, type AutoFailoverFormation } from "../test-helpers/pg-auto-failover";
import { startApiServer, type ApiServer } from "./server";

const OPERATOR_TOKEN = "operator-token-for-the-failover-test";
/** Agents in the load, each checking in once; requests in flight at once. */
const AGENTS = 240;
const WORKERS = 6;
/** The primary dies once this many check-ins have been acknowledged. */
const KILL_AFTER = 60;
/** A worker's pause after a 503 before it tries the same check-in again (shorter than Retry-After, to time the gap). */
const RETRY_PAUSE_MS = 100;
/** How long the load may take in all: the machine is shared, the failover takes about 10 s. */
const LOAD_BOUND_MS = 240_000;

type Agent = { agentId: string; agentKey: string };

/** A TCP relay on `port` to PostgreSQL, and a switch that cuts it (every connection dropped, new ones refused). */
async function startRelay(port: number, to: { host: string; port: number }): Promise<{ cut(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const server = net.connect(to.port, to.host);
    for (const socket of [client, server]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => sockets.delete(socket));
    }
    client.on("close", () => server.destroy());
    server.on("close", () => client.destroy());
    client.pipe(server).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(port, "127.0.0.1", resolve));
  return {
    async cut() {
      const closed = new Promise((resolve) => relay.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

describe("the API while PostgreSQL cannot be reached", function () {
  this.timeout(120_000);

  it("answers 503 database_unavailable with Retry-After, and serves again once it is back, without a restart", async () => {
    const testDb = await createTestPgDb();
    const upstream = new URL(testDb.url!);
    const port = await freePort();
    let relay = await startRelay(port, { host: upstream.hostname, port: Number(upstream.port || 5432) });
    const through = new URL(testDb.url!);
    through.hostname = "127.0.0.1";
    through.port = String(port);
    const db = createPgDb(through.toString(), { max: 4 });
    const server = await startApiServer({ db, operatorToken: OPERATOR_TOKEN, logger: pino({ level: "silent" }) });
    try {
      const post = (p: string, token: string | undefined, headers: Record<string, string> = {}) =>
        fetch(server.url + p, {
          method: "POST",
          headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
          body: "{}",
        });
      const owner = (await (await post("/v1/owners", undefined)).json()) as { token: string };
      const agent = (await (await post("/v1/agents", owner.token)).json()) as Agent;
      await relay.cut();
      const checkIn = () => post(`/v1/agents/${agent.agentId}/checkins`, agent.agentKey, { "idempotency-key": "while-away" });
      for (const res of [await checkIn(), await fetch(`${server.url}/v1/agents/${agent.agentId}/score`)]) {
        expect(res.status).to.equal(503);
        expect(res.headers.get("retry-after")).to.equal("5");
        expect(((await res.json()) as { error: { code: string } }).error.code).to.equal("database_unavailable");
      }
      relay = await startRelay(port, { host: upstream.hostname, port: Number(upstream.port || 5432) });
      const back = await checkIn();
      expect(back.status).to.equal(201);
      const { rows } = await testDb.db.query<{ idempotency_key: string }>("SELECT idempotency_key FROM checkins WHERE agent_id = $1", [
        agent.agentId,
      ]);
      expect(rows).to.deep.equal([{ idempotency_key: "while-away" }]);
    } finally {
      await server.close();
      await db.close();
      await relay.cut();
      await testDb.drop();
    }
  });
});

type Attempt = { at: number; status: number; retryAfter: string | null; code: string | null };

describe("PostgreSQL failover under a check-in load (pg_auto_failover)", function () {
  this.timeout(600_000);
  let formation: AutoFailoverFormation | undefined;
  let db: Db | undefined;
  let server: ApiServer | undefined;
  after(async () => {
    await server?.close();
    await db?.close();
    await formation?.stop();
  });

  it(
    "keeps every acknowledged check-in, counts none twice and answers only 503 with Retry-After while no " +
      "primary is reachable (a pg_auto_failover formation, then a failover under load: 30-60 s)",
    async () => {
      formation = await startAutoFailoverFormation();
      const first = await formation.primary();
      db = createPgDb(formation.uri, { max: 8 });
      // pg_auto_failover's default: one synchronous standby, so a commit is acknowledged once the standby has it.
      const {
        rows: [sync],
      } = await db.query<{ names: string; commit: string }>(
        "SELECT current_setting('synchronous_standby_names') AS names, current_setting('synchronous_commit') AS commit",
      );
      expect(sync.names).to.match(/^ANY 1 \(/);
      expect(sync.commit).to.equal("on");
      server = await startApiServer({
        db,
        operatorToken: OPERATOR_TOKEN,
        logger: pino({ level: "silent" }),
        rateLimit: { perMinute: 1_000_000, burst: 1_000_000 },
      });
      const url = server.url;
      const post = (p: string, token: string | undefined, headers: Record<string, string> = {}) =>
        fetch(url + p, {
          method: "POST",
          headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
          body: "{}",
        });
      const owner = (await (await post("/v1/owners", undefined)).json()) as { token: string };
      const agents: Agent[] = [];
      for (let i = 0; i < AGENTS; i++) agents.push((await (await post("/v1/agents", owner.token)).json()) as Agent);

      const attempts: Attempt[] = [];
      const acknowledged = new Map<string, { key: string; replayed: boolean; at: number }>();
      const unreachable: string[] = [];
      let killedAt: number | undefined;
      let next = 0;
      const deadline = Date.now() + LOAD_BOUND_MS;
      const worker = async () => {
        while (next < agents.length && Date.now() < deadline) {
          const agent = agents[next++];
          const key = `failover-${agent.agentId}`;
          // As an agent does: the same check-in, with the same key, until it is answered.
          while (Date.now() < deadline) {
            let res: Response;
            try {
              res = await post(`/v1/agents/${agent.agentId}/checkins`, agent.agentKey, { "idempotency-key": key });
            } catch (error) {
              unreachable.push(String(error));
              break;
            }
            const body = (await res.json()) as { error?: { code: string } };
            attempts.push({
              at: Date.now(),
              status: res.status,
              retryAfter: res.headers.get("retry-after"),
              code: body.error?.code ?? null,
            });
            if (res.status === 201) {
              acknowledged.set(agent.agentId, { key, replayed: res.headers.get("idempotent-replayed") === "true", at: Date.now() });
              break;
            }
            await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
          }
          if (killedAt === undefined && acknowledged.size >= KILL_AFTER) {
            killedAt = Date.now();
            await formation!.killPostmaster(first);
          }
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));

      // The standby was promoted: the monitor has the other node as primary.
      const promoted = await formation.waitFor("promoted standby", (s) =>
        s.some((n) => n.nodeport !== first.port && n.current_group_state === "primary"),
      );
      expect(promoted.find((n) => n.current_group_state === "primary")!.nodeport).to.not.equal(first.port);
      expect(killedAt, "the primary was killed").to.be.a("number");
      expect(unreachable, "the API itself stayed up").to.deep.equal([]);
      expect(acknowledged.size, "every agent's check-in was answered within the bound").to.equal(AGENTS);

      const failed = attempts.filter((a) => a.status !== 201);
      expect(failed.length, "requests were refused while no primary was reachable").to.be.greaterThan(0);
      expect([...new Set(failed.map((a) => `${a.status} ${a.code} Retry-After: ${a.retryAfter}`))]).to.deep.equal([
        "503 database_unavailable Retry-After: 5",
      ]);
      const firstFailure = failed[0].at;
      const lastFailure = failed[failed.length - 1].at;
      const backAt = attempts.find((a) => a.status === 201 && a.at > lastFailure)?.at ?? lastFailure;
      console.log(
        `      time without service: ${((backAt - firstFailure) / 1000).toFixed(1)} s ` +
          `(first 503 ${((firstFailure - killedAt!) / 1000).toFixed(1)} s after the kill; ${failed.length} requests answered 503; ` +
          `${[...acknowledged.values()].filter((a) => a.replayed).length} check-ins acknowledged as replays)`,
      );

      // On the new primary: every acknowledged check-in, each once.
      const newPrimary = promoted.find((n) => n.current_group_state === "primary")!.nodeport;
      const {
        rows: [reader],
      } = await db.query<{ port: number }>("SELECT inet_server_port() AS port");
      expect(reader.port, "the service reads from the promoted standby").to.equal(newPrimary);
      const { rows } = await db.query<{ agent_id: string; idempotency_key: string; n: number }>(
        "SELECT agent_id, idempotency_key, count(*)::int AS n FROM checkins GROUP BY agent_id, idempotency_key",
      );
      const stored = new Map(rows.map((r) => [r.agent_id, r]));
      for (const [agentId, { key, replayed, at }] of acknowledged) {
        const when = `${replayed ? "as a replay " : ""}${((at - killedAt!) / 1000).toFixed(1)} s after the kill`;
        expect(stored.get(agentId)?.idempotency_key, `${agentId} acknowledged ${when} but lost`).to.equal(key);
      }
      expect(
        rows.every((r) => r.n === 1),
        "no check-in stored twice",
      ).to.equal(true);
      expect(rows.length, "nothing stored that was not asked for").to.equal(AGENTS);
      const {
        rows: [days],
      } = await db.query<{ checkins: number }>("SELECT coalesce(sum(checkins), 0)::int AS checkins FROM agent_days");
      expect(days.checkins, "each check-in counted once in its day").to.equal(AGENTS);

      // A replay is answered once a standby holds the check-in it repeats (confirmDurable): with the old primary
      // back as the new one's standby, an agent's retry of its acknowledged check-in gets its original.
      await formation.waitFor("the old primary back as a standby", (s) =>
        s.some((n) => n.nodeport === first.port && n.current_group_state === "secondary"),
      );
      const {
        rows: [streams],
      } = await db.query<{ slots: number }>("SELECT count(*)::int AS slots FROM pg_replication_slots WHERE slot_type = 'physical'");
      expect(streams.slots, "the primary keeps a slot for its standby: a replay waits for the standby").to.be.greaterThan(0);
      const [agentId, { key }] = [...acknowledged][0];
      const agent = agents.find((a) => a.agentId === agentId)!;
      const replay = await post(`/v1/agents/${agentId}/checkins`, agent.agentKey, { "idempotency-key": key });
      expect([replay.status, replay.headers.get("idempotent-replayed")], await replay.text()).to.deep.equal([201, "true"]);
    },
  );
});
