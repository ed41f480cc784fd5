import { expect } from "chai";
import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { TEST_STORES, type TestDb } from "../test-helpers/db";

const OPERATOR_TOKEN = "operator-test-token-bad-input-01";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000; // 2026-11-02T10:00:00Z
const WALLET = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");

/** Where a case puts the text under test: this marker, in a JSON string of the body or in the URL. */
const MARK = "MARK";

/**
 * Text no field may take, as each reaches the server: in a JSON body as an escape (NUL, either half
 * of a surrogate pair alone) or as raw bytes that are not UTF-8; in a URL percent-encoded (the
 * UTF-8 of a surrogate is not valid UTF-8 either).
 */
const BAD_IN_BODY: ReadonlyArray<{ label: string; bytes: Buffer }> = [
  { label: "NUL", bytes: Buffer.from("a\\u0000b") },
  { label: "a lone high surrogate", bytes: Buffer.from("a\\ud800b") },
  { label: "a lone low surrogate", bytes: Buffer.from("\\udfffb") },
  { label: "U+FFFD", bytes: Buffer.from("a\\ufffd") },
  { label: "invalid UTF-8 bytes", bytes: Buffer.from([0x61, 0xff, 0xc3, 0x28]) },
];
const BAD_IN_URL: ReadonlyArray<{ label: string; text: string }> = [
  { label: "NUL", text: "a%00b" },
  { label: "an encoded surrogate", text: "a%ED%A0%80" },
  { label: "invalid UTF-8 bytes", text: "a%FF" },
];

type Request = { method: string; path: string; token?: string; body?: unknown };
type Answer = { status: number; json: { error?: { code: string; message: string } } & Record<string, unknown> };

/**
 * Issue 15, findings 4 and 6: every string field the API takes refuses NUL, lone surrogates and
 * text that was not UTF-8, and every instant and day is a real one within bounds (V1), with a 400
 * naming the field that changes nothing stored; the same request with good text is carried out.
 */
for (const { name, create } of TEST_STORES) {
  describe(`bad input on ${name}: a 400 naming the field, nothing changed`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    let owner: { ownerId: string; token: string };
    let agent: { agentId: string; agentKey: string };
    const clock = createManualClock(T0);

    async function send(request: Request, mark: Buffer | string): Promise<Answer> {
      const headers: Record<string, string> = request.token === undefined ? {} : { authorization: `Bearer ${request.token}` };
      let body: Uint8Array<ArrayBuffer> | undefined;
      if (request.body !== undefined) {
        const [before, ...after] = JSON.stringify(request.body).split(MARK);
        body = Uint8Array.from(Buffer.concat([Buffer.from(before), ...after.flatMap((part) => [Buffer.from(mark), Buffer.from(part)])]));
        headers["content-type"] = "application/json";
      }
      const path = request.path.replaceAll(MARK, String(mark));
      const res = await fetch(server.url + path, { method: request.method, headers, body });
      const text = await res.text();
      return { status: res.status, json: res.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : { text } };
    }
    const call = (request: Request) => send(request, MARK);

    /** A digest of every row of every table: equal before and after means nothing was written. */
    async function stored(): Promise<string> {
      const { rows: tables } = await testDb.db.query<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name",
      );
      const parts = tables.map(
        (t) => `SELECT '${t.name}' || md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) AS d FROM "${t.name}" x`,
      );
      const { rows } = await testDb.db.query<{ d: string }>(
        `SELECT string_agg(d, ';' ORDER BY d) AS d FROM (${parts.join(" UNION ALL ")}) AS digests`,
      );
      return rows[0].d;
    }

    async function expectRefused(request: Request, mark: Buffer | string, field: string, problem: string) {
      const before = await stored();
      const answer = await send(request, mark);
      const what = `${request.method} ${request.path} with ${String(mark)}`;
      expect(answer.status, `${what}: ${JSON.stringify(answer.json)}`).to.equal(400);
      expect(answer.json.error?.code, what).to.equal("invalid_request");
      expect(answer.json.error?.message, what).to.equal(`${field}: ${problem}`);
      expect(await stored(), `${what} changed what is stored`).to.equal(before);
    }

    const newOwner = async () => (await call({ method: "POST", path: "/v1/owners", body: {} })).json as { ownerId: string; token: string };
    const newAgent = async () =>
      (await call({ method: "POST", path: "/v1/agents", token: owner.token, body: {} })).json as { agentId: string; agentKey: string };
    const newPenalty = async () =>
      String(
        (
          await call({
            method: "POST",
            path: "/v1/operator/penalties",
            token: OPERATOR_TOKEN,
            body: { agentId: agent.agentId, code: "rate_abuse", points: 10, days: 30, reason: "x" },
          })
        ).json.id,
      );
    const newOutage = async () =>
      String(
        (
          await call({
            method: "POST",
            path: "/v1/operator/outages",
            token: OPERATOR_TOKEN,
            body: { start: "2026-11-02T09:00:00Z", reason: "x" },
          })
        ).json.id,
      );

    before(async () => {
      testDb = await create();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock,
        logger: pino({ level: "silent" }),
        rateLimit: { perMinute: 100_000, burst: 10_000 },
        // Owner-level proofs recompute their owner's agents in the background: drained by hand, so nothing changes between the digests.
        ownerRecomputeWorker: false,
      });
      owner = await newOwner();
      agent = await newAgent();
    });
    after(async () => {
      await server.close();
      await testDb.drop();
    });

    const NOT_TEXT = "must not contain NUL, unpaired surrogates or U+FFFD (invalid UTF-8)";

    /** Each string field: the request with MARK where the text goes, and what it gets with good text (in another request, where one is given). */
    type Good = { text: string; status: number; request?: Request };
    const textFields: Array<{ field: string; route: string; request: () => Promise<Request>; good: (request: Request) => Promise<Good> }> =
      [
        {
          field: "body.name",
          route: "POST /v1/agents",
          request: async () => ({ method: "POST", path: "/v1/agents", token: owner.token, body: { name: MARK } }),
          good: async () => ({ text: "agent", status: 201 }),
        },
        {
          field: "body.subject",
          route: "POST /v1/proofs/challenges",
          request: async () => ({
            method: "POST",
            path: "/v1/proofs/challenges",
            token: owner.token,
            body: { kind: "github", subject: MARK },
          }),
          good: async () => ({ text: "octocat", status: 201 }),
        },
        {
          field: "body.challengeId",
          route: "POST /v1/proofs",
          request: async () => ({
            method: "POST",
            path: "/v1/proofs",
            token: owner.token,
            body: { challengeId: MARK, evidence: { address: WALLET.address, signature: "0x", signatureType: "eip191" } },
          }),
          good: async (request) => {
            // The same request, its evidence signed for a real challenge: recorded.
            const challenge = (
              await call({
                method: "POST",
                path: "/v1/proofs/challenges",
                token: owner.token,
                body: { kind: "wallet", subject: WALLET.address },
              })
            ).json;
            const evidence = {
              address: WALLET.address,
              signature: await WALLET.signMessage({ message: String(challenge.message) }),
              signatureType: "eip191",
            };
            return { text: String(challenge.id), status: 201, request: { ...request, body: { challengeId: MARK, evidence } } };
          },
        },
        {
          field: "body.evidence.signatureType",
          route: "POST /v1/proofs",
          request: async () => ({
            method: "POST",
            path: "/v1/proofs",
            token: owner.token,
            body: { challengeId: "chl_none", evidence: { address: WALLET.address, signature: "0x00", signatureType: MARK } },
          }),
          good: async () => ({ text: "eip191", status: 404 }),
        },
        {
          field: "body.reason",
          route: "POST /v1/operator/outages",
          request: async () => ({
            method: "POST",
            path: "/v1/operator/outages",
            token: OPERATOR_TOKEN,
            body: { start: "2026-11-02T09:30:00Z", reason: MARK },
          }),
          good: async () => ({ text: "failover", status: 201 }),
        },
        {
          field: "body.reason",
          route: "POST /v1/operator/penalties",
          request: async () => ({
            method: "POST",
            path: "/v1/operator/penalties",
            token: OPERATOR_TOKEN,
            body: { agentId: agent.agentId, code: "rate_abuse", points: 10, days: 30, reason: MARK },
          }),
          good: async () => ({ text: "abuse", status: 201 }),
        },
        {
          field: "body.reason",
          route: "POST /v1/operator/penalties/:id/revoke",
          request: async () => ({
            method: "POST",
            path: `/v1/operator/penalties/${await newPenalty()}/revoke`,
            token: OPERATOR_TOKEN,
            body: { reason: MARK },
          }),
          good: async () => ({ text: "appeal", status: 200 }),
        },
        {
          field: "body.reason",
          route: "PUT /v1/operator/busy",
          request: async () => ({ method: "PUT", path: "/v1/operator/busy", token: OPERATOR_TOKEN, body: { on: false, reason: MARK } }),
          good: async () => ({ text: "quiet", status: 200 }),
        },
        {
          field: "body.reason",
          route: "POST /v1/operator/agents/:id/transfer",
          request: async () => ({
            method: "POST",
            path: `/v1/operator/agents/${(await newAgent()).agentId}/transfer`,
            token: OPERATOR_TOKEN,
            body: { toOwnerId: (await newOwner()).ownerId, reason: MARK },
          }),
          good: async () => ({ text: "sold", status: 200 }),
        },
        {
          field: "body.records.0.executor",
          route: "POST /v1/agents/:id/summaries",
          request: async () => ({
            method: "POST",
            path: `/v1/agents/${agent.agentId}/summaries`,
            token: agent.agentKey,
            body: { records: [{ executor: MARK }] },
          }),
          // This agent has no ERC-8004 identity: with good text, the records reach the service, which says so.
          good: async () => ({ text: "did:erc8004:1:0x0000000000000000000000000000000000000001:1", status: 404 }),
        },
      ];
    for (const { field, route, request, good } of textFields) {
      it(`refuses ${field} of ${route} with NUL, lone surrogates, U+FFFD or bytes that are not UTF-8`, async () => {
        const req = await request();
        for (const { bytes } of BAD_IN_BODY) await expectRefused(req, bytes, field, NOT_TEXT);
        const { text, status, request: goodRequest } = await good(req);
        const answer = await send(goodRequest ?? req, text);
        expect(answer.status, JSON.stringify(answer.json)).to.equal(status);
      });
    }
    it("names a key that is not text, and refuses JSON nested deeper than 32 levels", async () => {
      const req: Request = {
        method: "POST",
        path: "/v1/proofs",
        token: owner.token,
        body: { challengeId: "chl_none", evidence: { [MARK]: 1 } },
      };
      await expectRefused(req, Buffer.from("\\u0000"), "body.evidence", `a key ${NOT_TEXT}`);
      const deep: Request = {
        method: "POST",
        path: "/v1/proofs",
        token: owner.token,
        body: { challengeId: "chl_none", evidence: { a: JSON.parse("[".repeat(40) + "]".repeat(40)) } },
      };
      await expectRefused(deep, MARK, `body.evidence.a${".0".repeat(30)}`, "nested deeper than 32 levels");
    });

    const urlFields: Array<{ field: string; route: string; path: () => string; good: () => string; goodStatus: number }> = [
      { field: "query.q", route: "/v1/agents", path: () => `/v1/agents?q=${MARK}`, good: () => "agent", goodStatus: 200 },
      { field: "query.q", route: "/agents", path: () => `/agents?q=${MARK}`, good: () => "agent", goodStatus: 200 },
      // A cursor no page gave: the method page's own 400 page.
      { field: "query.cursor", route: "/method", path: () => `/method?cursor=${MARK}`, good: () => "fine", goodStatus: 400 },
      {
        field: "query.from",
        route: "/v1/agents/:id/scores",
        path: () => `/v1/agents/${agent.agentId}/scores?from=${MARK}`,
        good: () => "2026-11-01",
        goodStatus: 200,
      },
      { field: "path.id", route: "/agents/:id", path: () => `/agents/${MARK}`, good: () => agent.agentId, goodStatus: 200 },
      {
        field: "path.id",
        route: "/agents/:id/badge.svg",
        path: () => `/agents/${MARK}/badge.svg`,
        good: () => agent.agentId,
        goodStatus: 200,
      },
    ];
    for (const { field, route, path, good, goodStatus } of urlFields) {
      it(`refuses ${field} of ${route} with NUL or percent-escapes that are not UTF-8`, async () => {
        const req: Request = { method: "GET", path: path() };
        for (const { text } of BAD_IN_URL) {
          const answer = await send(req, text);
          expect(answer.status, `${text}: ${JSON.stringify(answer.json)}`).to.equal(400);
          // A path segment that does not decode is refused by Express itself, before any route.
          if (field.startsWith("path.") && text !== "a%00b") expect(answer.json.error?.code).to.equal("bad_request");
          else expect(answer.json.error).to.deep.equal({ code: "invalid_request", message: `${field}: ${NOT_TEXT}` });
        }
        expect((await send(req, good())).status).to.equal(goodStatus);
      });
    }

    describe("instants and days (V1): real ones, RFC 3339, from 2000-01-01 to before 2100-01-01", () => {
      const impossible: Array<[string, string]> = [
        ["2026-12-01T23:60:00Z", "is not a real UTC instant"],
        ["2026-11-01T24:00:00Z", "is not a real UTC instant"],
        ["2026-02-31T10:00:00Z", "is not a real UTC instant"],
        ["2026-02-29T10:00:00Z", "is not a real UTC instant"],
        ["2026-11-01T10:00:60Z", "is not a real UTC instant"],
        ["0000-01-01T00:00:00Z", "is not from 2000-01-01T00:00:00Z to before 2100-01-01T00:00:00Z"],
        ["1999-12-31T23:59:59Z", "is not from 2000-01-01T00:00:00Z to before 2100-01-01T00:00:00Z"],
        ["2100-01-01T00:00:00Z", "is not from 2000-01-01T00:00:00Z to before 2100-01-01T00:00:00Z"],
      ];
      const malformed = [
        "2026-11-01",
        "2026-11-01T10:00:00",
        "2026-11-01T10:00:00.000Z",
        "2026-11-01T10:00:00+00:00",
        "2026-11-01 10:00:00Z",
        "20261101T100000Z",
      ];
      const instantFields: Array<{ field: string; request: (instant: string) => Promise<Request>; good: string; status: number }> = [
        {
          field: "body.start",
          good: "2026-11-02T08:00:00Z",
          status: 201,
          request: async (start) => ({ method: "POST", path: "/v1/operator/outages", token: OPERATOR_TOKEN, body: { start, reason: "x" } }),
        },
        {
          field: "body.end",
          good: "2026-11-02T09:45:00Z",
          status: 201,
          request: async (end) => ({
            method: "POST",
            path: "/v1/operator/outages",
            token: OPERATOR_TOKEN,
            body: { start: "2026-11-02T09:40:00Z", end, reason: "x" },
          }),
        },
        {
          field: "body.end",
          good: "2026-11-02T09:50:00Z",
          status: 200,
          request: async (end) => ({
            method: "POST",
            path: `/v1/operator/outages/${await newOutage()}/close`,
            token: OPERATOR_TOKEN,
            body: { end },
          }),
        },
      ];
      for (const { field, request, good, status } of instantFields) {
        it(`refuses an impossible, out-of-bounds or malformed ${field} with a 400 naming it; takes a real one`, async () => {
          for (const [instant, problem] of impossible) await expectRefused(await request(instant), MARK, field, `${instant} ${problem}`);
          for (const instant of malformed)
            await expectRefused(await request(instant), MARK, field, "expected an RFC 3339 UTC instant YYYY-MM-DDTHH:MM:SSZ (V1)");
          const taken = await call(await request(good));
          expect(taken.status, JSON.stringify(taken.json)).to.equal(status);
          expect(taken.json[field.slice("body.".length)]).to.equal(good);
        });
      }

      it("refuses an impossible, out-of-bounds or malformed day in a score history's range; takes a real one", async () => {
        const days: Array<[string, string]> = [
          ["2026-02-31", "2026-02-31 is not a real UTC day"],
          ["2026-13-01", "2026-13-01 is not a real UTC day"],
          ["2026-11-00", "2026-11-00 is not a real UTC day"],
          ["0000-01-01", "0000-01-01 is not from 2000-01-01 to before 2100-01-01"],
          ["2100-01-01", "2100-01-01 is not from 2000-01-01 to before 2100-01-01"],
          ["2026-1-1", "expected a UTC day YYYY-MM-DD (V1)"],
          ["2026-11-01T00:00:00Z", "expected a UTC day YYYY-MM-DD (V1)"],
        ];
        for (const bound of ["from", "to"]) {
          for (const [day, message] of days)
            await expectRefused(
              { method: "GET", path: `/v1/agents/${agent.agentId}/scores?${bound}=${day}` },
              MARK,
              `query.${bound}`,
              message,
            );
        }
        const taken = await call({ method: "GET", path: `/v1/agents/${agent.agentId}/scores?from=2026-02-28&to=2099-12-31` });
        expect(taken.status).to.equal(200);
        expect(taken.json).to.include({ from: "2026-02-28", to: "2099-12-31" });
      });
    });
  });
}
