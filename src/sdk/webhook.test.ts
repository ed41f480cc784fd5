/**
 * `verifyWebhook` (issue #28) against deliveries a real server sends, and the README's receiver run as
 * written, in a process of its own, on a loopback port (`vrai dev`'s loopback allowance).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { PROJECT_ROOT } from "../project-root";
import { apiClient } from "../test-helpers/api-client";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { startHttpServer, type TestHttpServer } from "../test-helpers/http-server";
import { freePort } from "../test-helpers/node";
import { readmeBlocks } from "../test-helpers/readme";
import { verifyWebhook, WebhookSignatureError } from "./webhook";

const OPERATOR_TOKEN = "operator-test-token-sdk-webhooks-01";

describe("SDK verifyWebhook (issue #28)", function () {
  this.timeout(120_000);
  let testDb: TestDb;
  let server: ApiServer;
  let receiver: TestHttpServer;
  const { call } = apiClient(() => server.url);

  before(async () => {
    testDb = await createTestPgliteDb();
    receiver = await startHttpServer();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      logger: pino({ level: "silent" }),
      webhooks: { allowLoopback: true, pollIntervalMs: 50 },
    });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await testDb?.drop();
  });

  /** An owner with an endpoint at `url`, and its secret. */
  async function endpoint(url: string, events = ["score.changed"]) {
    const owner = (await call("POST", "/v1/owners", undefined, {})).json;
    const made = await call("POST", "/v1/webhooks", owner.token, { url, events });
    expect(made.status, JSON.stringify(made.json)).to.equal(201);
    return { owner, id: made.json.id as string, secret: made.json.secret as string };
  }
  const until = async <T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> => {
    for (const end = Date.now() + 20_000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      const found = await probe();
      if (found !== undefined) return found;
    }
    throw new Error(`no ${what} in 20 s`);
  };

  it("returns the event of a real delivery, from Node's headers or a Fetch Headers, and refuses it under another secret or changed", async () => {
    const { owner, id, secret } = await endpoint(`${receiver.url.replace("127.0.0.1", "localhost")}/sdk`);
    receiver.route("POST", "/sdk", { status: 204 });
    const agent = (await call("POST", "/v1/agents", owner.token, {})).json;
    const request = await until("delivery", () => receiver.requestsTo("/sdk")[0]);
    const event = verifyWebhook(request.body, request.headers, secret);
    expect(event.type).to.equal("score.changed");
    if (event.type !== "score.changed") return;
    expect(event.data).to.deep.include({ agentId: agent.agentId, total: 200, previous: null });
    expect(event.id).to.equal(request.headers["webhook-id"]);
    const fetchHeaders = new Headers();
    for (const [name, value] of Object.entries(request.headers)) fetchHeaders.set(name, String(value));
    expect(verifyWebhook(Buffer.from(request.body), fetchHeaders, secret)).to.deep.equal(event);

    const rotated = (await call("POST", `/v1/webhooks/${id}/rotate-secret`, owner.token, {})).json.secret as string;
    const refusals = [
      () => verifyWebhook(request.body, request.headers, rotated),
      () => verifyWebhook(request.body.replace('"total":200', '"total":900'), request.headers, secret),
      () => verifyWebhook(request.body, { ...request.headers, "webhook-signature": undefined }, secret),
    ];
    for (const refused of refusals) {
      expect(refused).to.throw(WebhookSignatureError).with.property("code", "webhook_signature_invalid");
    }
  });

  it("runs the README's receiver as written: it verifies a ping and answers 204, and answers a forged request 401", async () => {
    const [block] = readmeBlocks("Webhooks", "ts");
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-webhook-receiver-"));
    const file = path.join(dir, "receiver.ts");
    fs.writeFileSync(
      file,
      block
        .replace('from "@vrai/sdk"', `from ${JSON.stringify(path.join(PROJECT_ROOT, "src/sdk/index.ts"))}`)
        .replace(".listen(4000)", `.listen(${port})`),
    );
    const { owner, id, secret } = await endpoint(`http://localhost:${port}/`, ["agent.late"]);
    let child: ChildProcess | undefined;
    try {
      child = spawn(process.execPath, ["--import", "tsx", file], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, VRAI_WEBHOOK_SECRET: secret },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
      };
      child.stdout!.on("data", collect);
      child.stderr!.on("data", collect);
      await until("receiver", () =>
        fetch(`http://localhost:${port}/`, { method: "POST", body: "{}" }).then(
          (r) => r.status,
          () => undefined,
        ),
      );
      const forged = await fetch(`http://localhost:${port}/`, {
        method: "POST",
        headers: { "webhook-id": "evt_forged", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,AAAA" },
        body: JSON.stringify({ id: "evt_forged", type: "ping", timestamp: "2026-11-02T10:00:00Z", data: {} }),
      });
      expect(forged.status).to.equal(401);
      expect((await call("POST", `/v1/webhooks/${id}/test`, owner.token, {})).status).to.equal(202);
      const attempt = await until(
        "logged try",
        async () => (await call("GET", `/v1/webhooks/${id}/deliveries`, owner.token)).json.deliveries[0],
      );
      expect(attempt).to.deep.include({ eventType: "ping", status: 204, attempt: 1 });
      await until("its line", () => (/^ping at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/m.test(output) ? true : undefined));
      expect(output).to.not.include("evt_forged");
    } finally {
      child?.kill("SIGKILL");
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
