import net from "node:net";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { TEST_STORES, type TestDb } from "../test-helpers/db";

const OPERATOR_TOKEN = "operator-edge-test-0123456789";

/** What a request got: status, error code, headers. */
type Answer = { status: number; code: string | undefined; headers: Headers; json: Record<string, unknown> };

/** One exchange on a raw loopback socket (for what fetch will not send, such as two Authorization headers): the status code. */
async function rawStatus(url: string, request: string): Promise<number> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let received = "";
  socket.on("data", (chunk) => (received += chunk.toString()));
  await new Promise((resolve) => socket.once("connect", resolve));
  socket.write(request);
  await new Promise((resolve) => socket.once("close", resolve));
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1]);
}

for (const { name, create } of TEST_STORES) {
  describe(`the HTTP edge on ${name}`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    before(async () => {
      testDb = await create();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        logger: pino({ level: "silent" }),
        rateLimit: { perMinute: 100_000, burst: 10_000, ownersPerHour: 10_000 },
      });
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    async function call(
      method: string,
      path: string,
      options: { token?: string; body?: BodyInit; contentType?: string; headers?: Record<string, string> } = {},
    ): Promise<Answer> {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      if (options.contentType) headers["content-type"] = options.contentType;
      const res = await fetch(server.url + path, { method, headers, body: options.body });
      const text = await res.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text);
      } catch {
        json = {};
      }
      const error = json.error;
      const code =
        typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
      return { status: res.status, code, headers: res.headers, json };
    }
    const json = (value: unknown) => ({ body: JSON.stringify(value), contentType: "application/json" });
    const newOwner = () => server.service.accounts.createOwner();
    const count = async (sql: string) => (await testDb.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) t`)).rows[0].n;

    describe("a body that is not JSON (finding 9)", () => {
      // Each with a body a cross-site form could send; "none" sends bytes without a Content-Type.
      const bodies: Array<{ type: string | undefined; body: string }> = [
        { type: "text/plain", body: "{}" },
        { type: "text/plain;charset=UTF-8", body: '{"name":"x"}' },
        { type: "application/x-www-form-urlencoded", body: "name=x" },
        {
          type: "multipart/form-data; boundary=vrai",
          body: '--vrai\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--vrai--\r\n',
        },
        { type: "application/xml", body: "<name>x</name>" },
        { type: "text/xml", body: "<name>x</name>" },
        { type: "application/json; charset=latin1", body: "{}" },
        { type: undefined, body: "{}" },
        // No body and no type: what a cross-site fetch with mode "no-cors" sends without a preflight (issue #33).
        { type: undefined, body: "" },
      ];

      it("answers 415 on POST /v1/owners, /v1/agents and /v1/agents/:id/claim and writes nothing, keys unrotated", async () => {
        const owner = await newOwner();
        const agent = await server.service.accounts.claimNewAgent(owner.ownerId);
        const before = {
          owners: await count("SELECT id FROM owners"),
          agents: await count("SELECT id FROM agents"),
          claims: await count("SELECT id FROM claims"),
        };
        const keyHash = async () =>
          (await testDb.db.query<{ key_hash: string }>("SELECT key_hash FROM agents WHERE id = $1", [agent.agentId])).rows[0].key_hash;
        const keyBefore = await keyHash();
        const routes = [
          { path: "/v1/owners" },
          { path: "/v1/agents", token: owner.token },
          { path: `/v1/agents/${agent.agentId}/claim`, token: owner.token },
        ];
        for (const route of routes) {
          for (const { type, body } of bodies) {
            const answer = await call("POST", route.path, { token: route.token, contentType: type, body: new TextEncoder().encode(body) });
            expect([answer.status, answer.code], `${route.path} ${type}`).to.deep.equal([415, "unsupported_media_type"]);
          }
        }
        expect({
          owners: await count("SELECT id FROM owners"),
          agents: await count("SELECT id FROM agents"),
          claims: await count("SELECT id FROM claims"),
        }).to.deep.equal(before);
        expect(await keyHash()).to.equal(keyBefore);
      });

      it("takes application/json with a charset, application/*+json, and application/json with no body as {}", async () => {
        const owner = await newOwner();
        expect(
          (await call("POST", "/v1/agents", { token: owner.token, body: '{"name":"a"}', contentType: "application/json; charset=utf-8" }))
            .status,
        ).to.equal(201);
        expect(
          (await call("POST", "/v1/agents", { token: owner.token, body: '{"name":"b"}', contentType: "application/vnd.vrai+json" })).status,
        ).to.equal(201);
        expect(
          (await call("POST", "/v1/agents", { token: owner.token, body: '{"name":"c"}', contentType: "Application/JSON" })).status,
        ).to.equal(201);
        expect((await call("POST", "/v1/owners", { contentType: "application/json" })).status).to.equal(201);
        expect((await call("POST", "/v1/owners", json({}))).status).to.equal(201);
      });

      it("answers 415 to a POST or PUT of a JSON route sent with no body and no content type, and changes nothing (issue #33)", async () => {
        const owners = await count("SELECT id FROM owners");
        const answer = await call("POST", "/v1/owners", { headers: { origin: "https://elsewhere.example" } });
        expect([answer.status, answer.code]).to.deep.equal([415, "unsupported_media_type"]);
        expect(String((answer.json.error as { message: string }).message)).to.match(/Content-Type: application\/json/);
        expect(await count("SELECT id FROM owners")).to.equal(owners);
        const busy = await call("PUT", "/v1/operator/busy", { token: OPERATOR_TOKEN });
        expect([busy.status, busy.code]).to.deep.equal([415, "unsupported_media_type"]);
      });
    });

    describe("headers (finding 10)", () => {
      it("marks every answer with a secret, and every answer of an authenticated route, Cache-Control: no-store", async () => {
        const created = await call("POST", "/v1/owners", json({}));
        expect(created.status).to.equal(201);
        const token = String(created.json.token);
        const other = await newOwner();
        const agent = await call("POST", "/v1/agents", { token, ...json({}) });
        const agentId = String(agent.json.agentId);
        const answers = {
          owner: created,
          agent,
          reclaim: await call("POST", `/v1/agents/${agentId}/claim`, { token, ...json({}) }),
          transfer: await call("POST", `/v1/operator/agents/${agentId}/transfer`, {
            token: OPERATOR_TOKEN,
            ...json({ toOwnerId: other.ownerId, reason: "sold" }),
          }),
          me: await call("GET", "/v1/owners/me", { token }),
          unauthorized: await call("GET", "/v1/owners/me", { token: "vo_nobody.x" }),
          forbidden: await call("POST", `/v1/agents/${agentId}/claim`, { token, ...json({}) }),
        };
        expect(answers.owner.json.token).to.be.a("string");
        expect(answers.agent.json.agentKey).to.be.a("string");
        expect(answers.reclaim.json.agentKey).to.be.a("string");
        expect(answers.transfer.json.agentKey).to.be.a("string");
        expect([answers.unauthorized.status, answers.forbidden.status]).to.deep.equal([401, 403]);
        for (const [what, answer] of Object.entries(answers)) expect(answer.headers.get("cache-control"), what).to.equal("no-store");
        // A public read keeps its caching: no no-store, its ETag.
        const score = await call("GET", `/v1/agents/${agentId}/score`);
        expect(score.headers.get("cache-control")).to.not.equal("no-store");
        expect(score.headers.get("etag")).to.be.a("string");
      });

      it("says nosniff on every answer: JSON, errors, 404s, 429s, pages, OPTIONS", async () => {
        const limited = await startApiServer({
          db: testDb.db,
          operatorToken: OPERATOR_TOKEN,
          logger: pino({ level: "silent" }),
          rateLimit: { perMinute: 1, burst: 1 },
        });
        try {
          await fetch(`${limited.url}/v1/method`);
          const tooMany = await fetch(`${limited.url}/v1/method`);
          expect(tooMany.status).to.equal(429);
          expect(tooMany.headers.get("x-content-type-options")).to.equal("nosniff");
        } finally {
          await limited.close();
        }
        const answers = [
          await call("GET", "/v1/method"),
          await call("GET", "/v1/nothing"),
          await call("GET", "/v1/agents/bad!id/score"),
          await call("GET", "/v1/owners/me"),
          await call("POST", "/v1/agents", { body: "{", contentType: "application/json", token: "vo_x.y" }),
          await call("GET", "/"),
          await call("GET", "/agents/agt_none"),
          await call("GET", "/v1/openapi.json"),
          await call("OPTIONS", "/v1/owners"),
        ];
        expect(answers.map((a) => a.status)).to.deep.equal([200, 404, 400, 401, 401, 200, 404, 200, 204]);
        for (const answer of answers) expect(answer.headers.get("x-content-type-options")).to.equal("nosniff");
      });

      it("answers OPTIONS on every route with 204 and Allow, a public read's preflight unchanged", async () => {
        const doc = (await call("GET", "/v1/openapi.json")).json;
        const paths = Object.entries(typeof doc.paths === "object" && doc.paths !== null ? doc.paths : {});
        expect(paths.length).to.be.greaterThan(20);
        for (const [path, operations] of [
          ...paths,
          ["/", { get: {} }],
          ["/method", { get: {} }],
          ["/agents", { get: {} }],
          ["/agents/{id}", { get: {} }],
          ["/agents/{id}/badge.svg", { get: {} }],
        ] as const) {
          const concrete = path.replace(/\{[^}]+\}/g, "agt_x");
          const answer = await call("OPTIONS", concrete);
          expect(answer.status, path).to.equal(204);
          const allow = (answer.headers.get("allow") ?? "").split(", ");
          for (const method of Object.keys(operations)) expect(allow, path).to.include(method.toUpperCase());
          expect(allow, path).to.include("OPTIONS");
        }
        const preflight = await call("OPTIONS", "/v1/agents/agt_x/score", {
          headers: { origin: "https://dapp.example", "access-control-request-method": "GET" },
        });
        expect(preflight.status).to.equal(204);
        expect(preflight.headers.get("access-control-allow-origin")).to.equal("*");
        expect(preflight.headers.get("access-control-allow-methods")).to.equal("GET, HEAD, OPTIONS");
        expect(preflight.headers.get("access-control-allow-headers")).to.equal("If-None-Match");
        // An owner route answers OPTIONS with no CORS: another origin may not call it.
        expect((await call("OPTIONS", "/v1/owners/me")).headers.get("access-control-allow-origin")).to.equal(null);
      });

      it("refuses a request with two Authorization headers with 400, writing nothing", async () => {
        const owner = await newOwner();
        const agents = await count("SELECT id FROM agents");
        const body = '{"name":"twice"}';
        const request = (authorizations: string[]) =>
          "POST /v1/agents HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
          authorizations.map((a) => `Authorization: ${a}\r\n`).join("") +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
        expect(await rawStatus(server.url, request([`Bearer ${owner.token}`, "Bearer vo_other.x"]))).to.equal(400);
        expect(await rawStatus(server.url, request(["Bearer vo_other.x", `Bearer ${owner.token}`]))).to.equal(400);
        expect(await count("SELECT id FROM agents")).to.equal(agents);
        expect(await rawStatus(server.url, request([`Bearer ${owner.token}`]))).to.equal(201);
      });
    });
  });
}
