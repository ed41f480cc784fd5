import { expect } from "chai";
import fc from "fast-check";
import pino from "pino";
import { privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const OPERATOR_TOKEN = "operator-test-token-no-5xx-0123";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const WALLET = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
/** Requests per run: bounded, and seeded so that a failure reproduces. */
const RUNS = 300;
const SEED = 15;
/** The pages, outside the OpenAPI document, declared like the API's routes. */
const PAGES = ["/", "/method", "/agents", "/agents/{id}", "/agents/{id}/badge.svg"];

type Operation = {
  method: string;
  path: string;
  params: string[];
  query: string[];
  headers: string[];
  body: string[] | null;
  auth: "owner" | "agent" | "operator" | "none";
};
/** What a run may put in a request besides noise: ids that exist, so that requests get past "not found" to the code behind. */
type Known = {
  owner: string;
  ownerId: string;
  agentId: string;
  agentKey: string;
  penaltyId: string;
  outageId: string;
  challengeId: string;
  scoreId: string;
};

/** The API's operations as its OpenAPI document describes them, and the pages. */
function operationsOf(document: {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters: Array<{ name: string; in: string }>;
        security: Array<Record<string, unknown>>;
        requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
      }
    >
  >;
}): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const named = (where: string) => op.parameters.filter((p) => p.in === where).map((p) => p.name);
      const scheme = Object.keys(op.security[0] ?? {})[0] ?? "none";
      const auth = scheme === "ownerToken" ? "owner" : scheme === "agentToken" ? "agent" : scheme === "operatorToken" ? "operator" : "none";
      const body = op.requestBody ? Object.keys(op.requestBody.content["application/json"].schema.properties ?? {}) : null;
      operations.push({
        method: method.toUpperCase(),
        path,
        params: named("path"),
        query: named("query"),
        headers: named("header"),
        body,
        auth,
      });
    }
  }
  for (const path of PAGES)
    operations.push({
      method: "GET",
      path,
      params: path.includes("{id}") ? ["id"] : [],
      query: ["cursor", "q", "band", "state", "limit"],
      headers: [],
      body: null,
      auth: "none",
    });
  return operations;
}

/** Text no field should take: NUL, surrogates alone, U+FFFD, dates that are not, numbers too big for any column. */
const NASTY = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\udc00y",
  "\uFFFD",
  "😀",
  "%00",
  "null",
  "undefined",
  "NaN",
  "Infinity",
  "-1",
  "0",
  "1e400",
  "99999999999999999999",
  "2026-12-01T23:60:00Z",
  "2026-02-31",
  "2026-02-31T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "9999-12-31T23:59:59Z",
  "2026-11-02T09:00:00Z",
  "2026-11-01",
  "'; DROP TABLE agents; --",
  "../../etc/passwd",
  "<script>",
  "x".repeat(600),
  "did:erc8004:1:0x0000000000000000000000000000000000000001:1",
  // Replaced by a raw 0xFF byte in a body: bytes that are not UTF-8.
  "@@FF@@",
];
const NUMBER_TEXT = [
  "1e400",
  "-1e400",
  "1e-400",
  "-0",
  "0.5",
  "123456789012345678901234567890",
  "9007199254740993",
  "-9007199254740993",
  "10",
  "50",
  "30",
  "180",
  "0",
  "-1",
];
/** URL parts that do not decode, or decode to what no field takes. */
const RAW_URL = [
  "%00",
  "a%00b",
  "%ED%A0%80",
  "%FF",
  "%",
  "%zz",
  "%2F",
  "..",
  "%C0%AF",
  "1e400",
  "99999999999999999999",
  "-1",
  "0x1f",
  "%20",
  "",
];

function arbitraries(known: Known) {
  const ids = [
    known.ownerId,
    known.agentId,
    known.penaltyId,
    known.outageId,
    known.challengeId,
    known.scoreId,
    "did:erc8004:1:0x0000000000000000000000000000000000000001:1",
  ];
  const text = fc.oneof(fc.constantFrom(...NASTY), fc.constantFrom(...ids), fc.string({ unit: "binary", maxLength: 30 }));
  const stringLiteral = text.map((s) => JSON.stringify(s));
  const scalar = fc.oneof(
    stringLiteral,
    fc.constantFrom(...NUMBER_TEXT),
    fc.integer().map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
    fc.constantFrom("true", "false", "null"),
  );
  /**
   * Valid values of the fields the API declares (JSON text), so that a request whose other fields
   * are all valid carries one bad field to the code behind the validation.
   */
  const valid: Record<string, fc.Arbitrary<string>> = {
    name: fc.constantFrom('"fuzzed"', '"  spaced  "'),
    kind: fc.constantFrom('"wallet"', '"github"', '"domain"', '"erc8004"'),
    subject: fc.constantFrom(
      JSON.stringify(WALLET.address),
      '"octocat"',
      '"example.org"',
      '"1:0x0000000000000000000000000000000000000001:1"',
    ),
    agentId: fc.constantFrom(JSON.stringify(known.agentId)),
    toOwnerId: fc.constantFrom(JSON.stringify(known.ownerId)),
    challengeId: fc.constantFrom(JSON.stringify(known.challengeId)),
    evidence: fc.constantFrom(
      `{"address":${JSON.stringify(WALLET.address)},"signature":"0x00","signatureType":"eip191"}`,
      '{"domain":"example.org","method":"dns"}',
      '{"gistId":"abc"}',
    ),
    records: fc.constantFrom('[{"executor":"did:erc8004:1:0x0000000000000000000000000000000000000001:1","success":true}]'),
    code: fc.constantFrom('"rate_abuse"', '"rule_violation"', '"impersonation"'),
    points: fc.constantFrom("10", "50"),
    days: fc.constantFrom("30", "180"),
    start: fc.constantFrom('"2026-11-02T09:00:00Z"', '"2026-11-02T10:00:00Z"'),
    end: fc.constantFrom('"2026-11-02T09:30:00Z"', '"2026-11-03T10:00:00Z"', "null"),
    reason: fc.constantFrom('"maintenance"'),
    on: fc.constantFrom("true", "false"),
  };
  const json = fc.letrec<{ value: string; object: string; array: string }>((tie) => ({
    value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(",")}]`),
    object: fc
      .array(fc.tuple(stringLiteral, tie("value")), { maxLength: 4 })
      .map((entries) => `{${entries.map(([k, v]) => `${k}:${v}`).join(",")}}`),
  }));
  const deep = fc.integer({ min: 30, max: 12_000 }).map((depth) => "[".repeat(depth) + "]".repeat(depth));
  const bad = fc.oneof(
    { weight: 4, arbitrary: stringLiteral },
    { weight: 2, arbitrary: json.value },
    { weight: 1, arbitrary: deep },
    { weight: 1, arbitrary: fc.constantFrom(...NUMBER_TEXT) },
  );
  const object = (entries: ReadonlyArray<readonly [string, string]>) =>
    `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`;
  /** Every field valid but one (a bad value, or a bad value inside it when it is an object or array). */
  const oneBadField = (fields: readonly string[]) =>
    fc
      .tuple(fc.tuple(...fields.map((f) => valid[f] ?? json.value)), fc.nat(fields.length - 1), bad)
      .map(([values, spoilt, value]) => object(fields.map((f, i) => [f, i === spoilt ? value : values[i]] as const)));
  const bodyFor = (fields: readonly string[]) =>
    fc.oneof(
      { weight: 6, arbitrary: fields.length > 0 ? oneBadField(fields) : json.object },
      {
        weight: 2,
        arbitrary: fc
          .subarray([...fields])
          .chain((chosen) => fc.tuple(...chosen.map((f) => fc.oneof(valid[f] ?? json.value, bad).map((v) => [f, v] as const))))
          .map(object),
      },
      { weight: 1, arbitrary: json.value },
      { weight: 1, arbitrary: deep },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          "",
          "{",
          '{"a":}',
          "[1,]",
          "\u0000",
          '{"a":"\u0000"}',
          "x".repeat(40_000),
          `{"name":"${"y".repeat(40_000)}"}`,
        ),
      },
    );
  const urlPart = fc.oneof(
    fc.constantFrom(...RAW_URL),
    fc.constantFrom(...ids).map(encodeURIComponent),
    fc.string({ unit: "grapheme", maxLength: 20 }).map(encodeURIComponent),
    fc
      .constantFrom(...NASTY)
      .filter((s) => s.isWellFormed())
      .map(encodeURIComponent),
  );
  const validQuery: Record<string, string> = {
    from: "2026-11-01",
    to: "2026-11-30",
    limit: "10",
    after: "0",
    offset: "0",
    q: "fuzz",
    sort: "total",
    band: "",
    state: "",
    cursor: "",
  };
  /** Each declared parameter absent, valid or bad, and now and then one repeated or one no route declares. */
  const queryFor = (names: readonly string[]) =>
    fc
      .tuple(
        fc.tuple(
          ...names.map((name) =>
            fc.option(
              fc.oneof(fc.constant(encodeURIComponent(validQuery[name] ?? "1")), urlPart).map((v) => [name, v] as const),
              { nil: undefined },
            ),
          ),
        ),
        fc.option(fc.tuple(fc.constantFrom(...names, "extra"), urlPart), { nil: undefined }),
      )
      .map(([declared, extra]) => [...declared, extra].filter((entry) => entry !== undefined));
  const headerValue = fc.oneof(
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 140 }),
    fc.constantFrom("", " ", "é", "k".repeat(129)),
  );
  return { bodyFor, queryFor, urlPart, headerValue };
}

/**
 * Issue 15: whatever a client sends to any route (random strings with NUL and surrogates, bytes
 * that are not UTF-8, impossible dates, numbers no column holds, JSON nested thousands deep, wrong
 * types, unknown fields), the answer is never a 5xx, and every JSON error has the error shape.
 */
describe("no input reaches a 5xx: random requests to every route and page on pglite (property, seeded)", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let operations: Operation[];
  let known: Known;

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR_TOKEN,
      clock: createManualClock(T0),
      logger: pino({ level: "silent" }),
      rateLimit: { perMinute: 1_000_000, burst: 100_000 },
      // No request leaves this machine: every name resolves to loopback, which the outbound filter
      // refuses before any connection (a 422), and DNS TXT lookups find nothing.
      proofSources: {
        resolveAddresses: async () => [{ address: "127.0.0.1", family: 4 }],
        resolveTxt: async () => [],
        sleep: async () => undefined,
        retry: { tries: 1, baseDelayMs: 1 },
      },
    });
    const post = async (path: string, token: string | undefined, body: unknown) => {
      const res = await fetch(server.url + path, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      return (await res.json()) as Record<string, string>;
    };
    const owner = await post("/v1/owners", undefined, {});
    const agent = await post("/v1/agents", owner.token, { name: "fuzzed" });
    const penalty = await post("/v1/operator/penalties", OPERATOR_TOKEN, {
      agentId: agent.agentId,
      code: "rate_abuse",
      points: 10,
      days: 30,
      reason: "x",
    });
    const outage = await post("/v1/operator/outages", OPERATOR_TOKEN, { start: "2026-11-02T09:00:00Z", reason: "x" });
    const challenge = await post("/v1/proofs/challenges", owner.token, { kind: "wallet", subject: WALLET.address });
    const score = (await (await fetch(`${server.url}/v1/agents/${agent.agentId}/score`)).json()) as { id: number };
    known = {
      owner: owner.token,
      ownerId: owner.ownerId,
      agentId: agent.agentId,
      agentKey: agent.agentKey,
      penaltyId: penalty.id,
      outageId: outage.id,
      challengeId: challenge.id,
      scoreId: String(score.id),
    };
    operations = operationsOf(await (await fetch(`${server.url}/v1/openapi.json`)).json());
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it("covers every operation of the OpenAPI document and every page", () => {
    expect(operations.length).to.be.greaterThan(30);
    expect(operations.filter((o) => o.body !== null).length).to.be.greaterThan(10);
  });

  it(`answers ${RUNS} random requests without a 5xx, each error in the JSON error shape`, async () => {
    const { bodyFor, queryFor, urlPart, headerValue } = arbitraries(known);
    const tokens = { owner: known.owner, agent: known.agentKey, operator: OPERATOR_TOKEN, none: "" };
    const request = fc.constantFrom(...operations).chain((op) =>
      fc.record({
        op: fc.constant(op),
        params: fc.tuple(...op.params.map(() => urlPart)),
        query: queryFor(op.query),
        headers: fc.tuple(...op.headers.map(() => headerValue)),
        body: op.body === null ? fc.constant(null) : bodyFor(op.body),
        credential: fc.oneof(
          { weight: 8, arbitrary: fc.constant(tokens[op.auth]) },
          { weight: 1, arbitrary: fc.constantFrom("", "junk", known.owner, known.agentKey) },
        ),
      }),
    );
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(request, async ({ op, params, query, headers, body, credential }) => {
        let path = op.path;
        for (const [i, name] of op.params.entries()) path = path.replace(`{${name}}`, params[i]);
        if (query.length > 0) path += `?${query.map(([k, v]) => `${k}=${v}`).join("&")}`;
        const sentHeaders: Record<string, string> = Object.fromEntries(op.headers.map((name, i) => [name, headers[i]]));
        if (credential) sentHeaders.authorization = `Bearer ${credential}`;
        let payload: Uint8Array<ArrayBuffer> | undefined;
        if (body !== null) {
          const pieces = body.split("@@FF@@").map((piece) => Buffer.from(piece));
          payload = Uint8Array.from(Buffer.concat(pieces.flatMap((piece, i) => (i === 0 ? [piece] : [Buffer.from([0xff]), piece]))));
          sentHeaders["content-type"] = "application/json";
        }
        const res = await fetch(server.url + path, { method: op.method, headers: sentHeaders, body: payload });
        const text = await res.text();
        sent++;
        const what = `${op.method} ${path} ${body === null ? "" : body.slice(0, 300)}`;
        expect(res.status, `${what} → ${text.slice(0, 300)}`).to.be.below(500);
        if (res.status >= 400 && res.headers.get("content-type")?.startsWith("application/json")) {
          const error = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
          expect(typeof error?.code === "string" && typeof error.message === "string", `${what} → ${text.slice(0, 300)}`).to.equal(true);
        }
      }),
      // No shrinking: a failure is reported as found (the seed and path reproduce it), and the run stays bounded.
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    expect(sent).to.equal(RUNS);
  });
});
