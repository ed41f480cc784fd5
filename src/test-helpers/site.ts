/** An API server on a fresh PGlite database for the site's HTTP tests, with a way to claim agents through the API. */
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock, type Clock } from "../service/clock";
import { createTestPgliteDb, type TestDb } from "./db";

/** The operator token of the site's test server. */
export const SITE_OPERATOR_TOKEN = "operator-test-token-0123456789";

export type SiteServer = {
  server: ApiServer;
  clock: Clock & { set(t: number): void };
  /** Creates an owner and claims an agent named `name` through the API; returns its id. */
  claimAgent(name: string): Promise<string>;
  close(): Promise<void>;
};

/** Starts the API server on a new database (PGlite unless `create` says otherwise) with a manual clock at `start` (epoch seconds). */
export async function startSiteServer(start: number, create: () => Promise<TestDb> = createTestPgliteDb): Promise<SiteServer> {
  const testDb: TestDb = await create();
  const clock = createManualClock(start);
  // claimAgent creates an owner per agent, all from this one address: more than account creation's default allows an hour.
  const server = await startApiServer({
    db: testDb.db,
    operatorToken: SITE_OPERATOR_TOKEN,
    clock,
    logger: pino({ level: "silent" }),
    rateLimit: { ownersPerHour: 10_000 },
  });
  return {
    server,
    clock,
    async claimAgent(name) {
      const owner = await (
        await fetch(`${server.url}/v1/owners`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      ).json();
      const res = await fetch(`${server.url}/v1/agents`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${owner.token}` },
        body: JSON.stringify({ name }),
      });
      return (await res.json()).agentId;
    },
    async close() {
      await server.close();
      await testDb.drop();
    },
  };
}

/**
 * Registers mocha hooks that start a site server at `start` before the suite's tests and close it after.
 * @returns a holder whose `site` is the running server once the suite's tests run
 */
export function useSiteServer(start: number, create?: () => Promise<TestDb>): { site: SiteServer } {
  let running: SiteServer | undefined;
  before(async () => {
    running = await startSiteServer(start, create);
  });
  after(() => running?.close());
  return {
    get site() {
      if (!running) throw new Error("the site server starts in the suite's before hook");
      return running;
    },
  };
}
