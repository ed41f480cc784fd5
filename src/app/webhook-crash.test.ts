/**
 * Webhooks survive a crash (issue #28): `vrai serve` SIGKILLed after an event's commit, before its send
 * and in the middle of it; the next process delivers it, with the same `webhook-id`. The receiver is on
 * 127.0.0.1, which WEBHOOK_ALLOW_LOOPBACK lets through (as `vrai dev` does).
 */
import { expect } from "chai";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgDb, type TestDb } from "../test-helpers/db";
import { startHttpServer, type RecordedRequest, type TestHttpServer } from "../test-helpers/http-server";
import { startServe, type ServeProcess } from "../test-helpers/serve";

const OPERATOR_TOKEN = "operator-token-for-the-webhook-crash-test";

describe("webhooks across a SIGKILL of vrai serve (issue #28)", function () {
  this.timeout(180_000);
  let testDb: TestDb;
  let receiver: TestHttpServer;
  const children: ServeProcess[] = [];
  const env = (pollMs: number) => ({
    DATABASE_URL: testDb.url!,
    PORT: "0",
    OPERATOR_TOKEN,
    LOG_LEVEL: "info",
    RATE_LIMIT_PER_MINUTE: "100000",
    WEBHOOK_ALLOW_LOOPBACK: "true",
    // A try times out after a second, so a try a dead process began is due again 7 s after it was taken.
    WEBHOOK_TIMEOUT_MS: "1000",
    WEBHOOK_POLL_INTERVAL_MS: String(pollMs),
  });
  const serve = async (pollMs: number) => {
    const child = await startServe(env(pollMs));
    children.push(child);
    return child;
  };

  before(async () => {
    testDb = await createTestPgDb();
    receiver = await startHttpServer();
  });
  after(async () => {
    await Promise.all(children.map((c) => c.kill("SIGKILL")));
    await receiver?.close();
    await testDb?.drop();
  });

  const call = (base: string, method: string, path: string, token?: string, body?: unknown) =>
    apiClient(() => base).call(method, path, token, body);
  const until = async <T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 30_000): Promise<T> => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      const found = await probe();
      if (found !== undefined) return found;
    }
    throw new Error(`no ${what} in ${ms / 1000} s`);
  };
  const deliveries = async () =>
    (
      await testDb.db.query<{ state: string; attempts: number; logged: number }>(
        "SELECT d.state, d.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS logged FROM webhook_deliveries d",
      )
    ).rows;

  /** An owner of the server at `base` with an endpoint at `path` of the receiver. */
  async function ownerWithWebhook(base: string, path: string) {
    const owner = (await call(base, "POST", "/v1/owners", undefined, {})).json;
    const made = await call(base, "POST", "/v1/webhooks", owner.token, { url: `${receiver.url}${path}`, events: ["score.changed"] });
    expect(made.status, JSON.stringify(made.json)).to.equal(201);
    return { owner, webhook: made.json };
  }

  it(
    "delivers after a restart an event committed just before a SIGKILL, nothing having been sent, with " +
      "the event's id (two vrai serve starts: 5-11 s)",
    async () => {
      receiver.route("POST", "/committed", { status: 200 });
      // This process's worker looks for deliveries once a minute: what is committed now is not sent before the kill.
      const first = await serve(60_000);
      const { owner } = await ownerWithWebhook(first.url, "/committed");
      await testDb.db.query("DELETE FROM webhook_deliveries");
      const claimed = await call(first.url, "POST", "/v1/agents", owner.token, {});
      expect(claimed.status).to.equal(201);
      await first.kill("SIGKILL");
      expect(receiver.requestsTo("/committed")).to.deep.equal([]);
      expect(await deliveries()).to.deep.equal([{ state: "pending", attempts: 0, logged: 0 }]);
      const [event] = (await testDb.db.query<{ id: string }>("SELECT id FROM events WHERE owner_id = $1", [owner.ownerId])).rows;

      const second = await serve(50);
      const request = await until("delivery", () => receiver.requestsTo("/committed")[0]);
      expect(request.headers["webhook-id"]).to.equal(event.id);
      expect(JSON.parse(request.body)).to.deep.include({ id: event.id, type: "score.changed" });
      await until("logged try", async () => ((await deliveries())[0].logged === 1 ? true : undefined));
      expect(await deliveries()).to.deep.equal([{ state: "delivered", attempts: 1, logged: 1 }]);
      await second.kill("SIGTERM");
    },
  );

  it(
    "sends again, with the same webhook-id, a delivery whose process was SIGKILLed while the receiver " +
      "had not answered (two vrai serve starts: 5-10 s)",
    async () => {
      let answered = false;
      const seen: RecordedRequest[] = [];
      receiver.route("POST", "/midway", (request) => {
        seen.push(request);
        return answered ? { status: 200 } : { hang: true };
      });
      const first = await serve(50);
      const { owner, webhook } = await ownerWithWebhook(first.url, "/midway");
      await testDb.db.query("DELETE FROM webhook_deliveries");
      await call(first.url, "POST", "/v1/agents", owner.token, {});
      await until("try in flight", () => seen[0]);
      await first.kill("SIGKILL");
      expect(await deliveries(), "taken, never logged").to.deep.equal([{ state: "pending", attempts: 1, logged: 0 }]);

      answered = true;
      const second = await serve(50);
      const again = await until("second try", () => seen[1], 60_000);
      expect(again.headers["webhook-id"]).to.equal(seen[0].headers["webhook-id"]);
      expect(again.body).to.equal(seen[0].body);
      const log = await until("logged try", async () => {
        const tries = (await call(second.url, "GET", `/v1/webhooks/${webhook.id}/deliveries`, owner.token)).json.deliveries;
        return tries.length > 0 ? tries : undefined;
      });
      expect(log).to.have.length(1);
      expect(log[0]).to.deep.include({ attempt: 2, status: 200 });
      expect(log[0].delivery.state).to.equal("delivered");
      await second.kill("SIGTERM");
    },
  );
});
