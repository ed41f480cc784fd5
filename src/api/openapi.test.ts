import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import pino from "pino";
import { getAddress } from "viem";
import { startApiServer, type ApiServer } from "../app/server";
import { PROJECT_ROOT } from "../project-root";
import { createManualClock, type Clock } from "../service/clock";
import { OFFERED_PROOF_KINDS } from "../service/proofs/kinds";
import { createFeedbackPlanner } from "../service/erc8004-planning";
import { createAnchorRepository } from "../store/anchors";
import { createErc8004FeedbackRepository } from "../store/erc8004-feedback";
import { mismatchesDuring } from "../test-helpers/check-replies";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const run = promisify(execFile);
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const OPERATOR = "operator-openapi-test-0123456789";
/** The ERC-8004 identity the seeded agent is linked to (V6 erc8004 proof), as an executor DID (docs/executor-id.md). */
const IDENTITY = "31337:0x5fbdb2315678afecb367f032d93f642f64180aa3:7";
const EXECUTOR = `did:erc8004:${IDENTITY}`;
const nodeModules = fs.realpathSync(path.join(PROJECT_ROOT, "node_modules"));
const bin = (pkg: string, file: string) => path.join(nodeModules, pkg, file);
/** The tools run offline: any connection they try beyond loopback is refused and reported on stderr. */
const OFFLINE = { ...process.env, NODE_OPTIONS: `--require ${path.join(PROJECT_ROOT, "src/test-helpers/loopback-only.cjs")}` };

type Seeded = { agentId: string; scoreId: number; dailyScoreId: number; feedbackId: string };

/** Where the server gives ERC-8004 feedback: about the seeded identity's registry (this test has no chain, and sends nothing). */
const FEEDBACK_TARGET = {
  chainId: 31337,
  registry: getAddress("0xe7f1725e7734ce288f8367e1bb143e90bb3f0512"),
  identityRegistry: getAddress("0x5fbdb2315678afecb367f032d93f642f64180aa3"),
};

/** An agent with check-ins, a penalty, an ERC-8004 link with self-reported summaries, a daily score and its Merkle proof; and a declared outage. */
async function seed(server: ApiServer, clock: Clock & { set(t: number): void }, testDb: TestDb): Promise<Seeded> {
  const { service } = server;
  const { ownerId } = await service.accounts.createOwner();
  const { agentId, agentKey } = await service.accounts.claimNewAgent(ownerId, { name: "openapi agent" });
  await service.identity.recordProof({
    id: "prf_openapi",
    kind: "erc8004",
    ownerId,
    agentId,
    subject: IDENTITY,
    binding: `erc8004:${IDENTITY}`,
    evidence: {},
  });
  const post = (url: string, headers: Record<string, string>, body?: unknown) =>
    fetch(server.url + url, {
      method: "POST",
      headers: { authorization: `Bearer ${agentKey}`, "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  clock.set(T0 + 600);
  expect((await post(`/v1/agents/${agentId}/checkins`, { "idempotency-key": "k1" })).status).to.equal(201);
  clock.set(T0 + 4200);
  expect((await post(`/v1/agents/${agentId}/checkins`, { "idempotency-key": "k2" })).status).to.equal(201);
  const records = [1, 2].map((n) => ({
    txHash: `0x${String(n).repeat(64)}`,
    success: true,
    riskLevel: "high",
    policyViolations: 0,
    traceRoot: `0x${"ab".repeat(32)}`,
  }));
  expect((await post(`/v1/agents/${agentId}/summaries`, {}, { records })).status).to.equal(201);
  await service.operator.addPenalty({ agentId, code: "rate_abuse", points: 10, days: 30, reason: "scripted check-ins" }, "alice");
  await service.operator.declareOutage({ start: T0 + 3600, end: T0 + 7200, reason: "database failover" }, "alice");
  clock.set(T0 + 86_400);
  await server.scheduler.catchUpDaily();
  // The day's root as mined (this test has no chain): its proof is served from then on.
  await createAnchorRepository(testDb.db).setMined("2026-11-03", {
    txHash: `0x${"5e".repeat(32)}`,
    blockNumber: 12,
    chainId: 31337,
    contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
    anchoredAt: Date.UTC(2026, 10, 3, 0, 0, 30) / 1000,
    minedAt: T0 + 86_460,
    finalAt: T0 + 86_460,
  });
  // Publishing on, and the day's feedback planned (this test sends none).
  await server.publishing.set(ownerId, agentId, true);
  const outbox = createErc8004FeedbackRepository(testDb.db);
  const planner = createFeedbackPlanner({
    outbox,
    store: server.service.store,
    clock,
    target: FEEDBACK_TARGET,
    client: getAddress("0x8626f6940e2eb28930efb4cef49b2d1f2c9c1199"),
    publicUrl: () => server.url,
  });
  expect(await planner.planLatest()).to.deep.equal({ day: "2026-11-03", planned: 2 });
  const [feedback] = await outbox.ofAgent(agentId, 1);
  const scores = await server.reads.dailyScores(agentId, { limit: 100 });
  const latest = await server.reads.latestScore(agentId);
  return { agentId, scoreId: latest.id, dailyScoreId: scores.items[scores.items.length - 1].id, feedbackId: feedback.id };
}

/**
 * A client of every public read route, written as an agent developer would against the generated types: it must
 * type-check with them (the `@ts-expect-error` lines prove the types are precise, not `any`), and calling it
 * returns each answer's status and body.
 */
const CLIENT = `
import createClient from "openapi-fetch";
import type { paths } from "./schema";

export type Answer = { operationId: string; status: number; body: unknown };

export async function readEverything(
  baseUrl: string,
  ids: { agentId: string; scoreId: number; dailyScoreId: number; feedbackId: string; executor: string },
): Promise<Answer[]> {
  const client = createClient<paths>({ baseUrl });
  const id = { path: { id: ids.agentId } };
  const answers: Answer[] = [];
  const answer = (operationId: string, reply: { data?: unknown; error?: unknown; response: Response }) => {
    answers.push({ operationId, status: reply.response.status, body: reply.data ?? reply.error });
  };

  const latest = await client.GET("/v1/agents/{id}/score", { params: id });
  const total: number | undefined = latest.data?.result.components.identity.value;
  const band: "0-199" | "200-399" | "400-599" | "600-799" | "800-1000" | undefined = latest.data?.result.band;
  // @ts-expect-error: a score has no such field
  latest.data?.result.nothing;
  answer("getLatestScore", latest);
  answer("getScoreWindow", await client.GET("/v1/agents/{id}/window", { params: id }));
  const daily = await client.GET("/v1/agents/{id}/scores", { params: { ...id, query: { from: "2026-11-01" } } });
  const trigger: "daily" | "change" | undefined = daily.data?.scores[0]?.trigger;
  answer("listDailyScores", daily);
  answer("getScore", await client.GET("/v1/scores/{id}", { params: { path: { id: ids.scoreId } } }));
  const inputs = await client.GET("/v1/scores/{id}/inputs", { params: { path: { id: ids.scoreId } } });
  const claimedAt: string | undefined = inputs.data?.claimed_at;
  answer("getScoreInputs", inputs);
  const proof = await client.GET("/v1/scores/{id}/proof", { params: { path: { id: ids.dailyScoreId } } });
  const tokenId: string | undefined = proof.data?.leafVersion === 2 ? proof.data.leafFields.erc8004TokenId : undefined;
  answer("getScoreProof", proof);
  answer("getLatestScoreProof", await client.GET("/v1/agents/{id}/score/proof", { params: id }));
  const [chainId, registry, token] = ids.executor.replace("did:erc8004:", "").split(":");
  answer("getIdentityAgent", await client.GET("/v1/erc8004/{chainId}/{registry}/{tokenId}", { params: { path: { chainId, registry, tokenId: token } } }));
  answer("getMethod", await client.GET("/v1/method"));
  answer("listOutages", await client.GET("/v1/outages"));
  answer("listPenalties", await client.GET("/v1/agents/{id}/penalties", { params: id }));
  answer("listProofs", await client.GET("/v1/agents/{id}/proofs", { params: id }));
  answer("listAgents", await client.GET("/v1/agents", { params: { query: { limit: 10 } } }));
  const agent = await client.GET("/v1/agents/{id}", { params: id });
  const declaredStatus: "read" | "refused" | "unread" | undefined = agent.data?.selfDeclared?.status;
  answer("getAgent", agent);
  const derived = await client.GET("/v1/agents/{id}/derived-score", { params: id });
  const flags: string[] | undefined = derived.data?.result.flags;
  answer("getAgentDerivedScore", derived);
  answer("getAgentNetworkScore", await client.GET("/v1/agents/{id}/network-score", { params: id }));
  const did = { path: { did: ids.executor } };
  answer("getExecutorDerivedScore", await client.GET("/v1/executors/{did}/derived-score", { params: { ...did, query: { limit: 1 } } }));
  answer("getExecutorNetworkScore", await client.GET("/v1/executors/{did}/network-score", { params: did }));
  const publishing = await client.GET("/v1/agents/{id}/erc8004-publishing", { params: id });
  const enabled: boolean | undefined = publishing.data?.enabled;
  answer("getReputationPublishing", publishing);
  const file = await client.GET("/v1/erc8004/feedback/{id}", { params: { path: { id: ids.feedbackId } } });
  const given: number | undefined = file.data?.value;
  answer("getReputationFeedbackFile", file);
  const health = await client.GET("/v1/indexer/health");
  const status: "ok" | undefined = health.data?.status;
  answer("getIndexerHealth", health);
  const serviceHealth = await client.GET("/v1/health");
  const behind: "ok" | "behind" | undefined = serviceHealth.data?.status;
  answer("getHealth", serviceHealth);
  const ready = await client.GET("/v1/ready");
  const isReady: "ready" | undefined = ready.data?.status;
  answer("getReady", ready);
  // An error is typed too: the one error shape.
  const missing = await client.GET("/v1/agents/{id}/score", { params: { path: { id: "agt_nobody" } } });
  const code: string | undefined = missing.error?.error.code;
  answer("getLatestScore (unknown agent)", missing);
  void [total, band, trigger, claimedAt, flags, status, behind, isReady, code, tokenId, declaredStatus, enabled, given];
  return answers;
}
`;

describe("the OpenAPI document", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let dir: string;
  let documentFile: string;
  let document: {
    paths: Record<string, Record<string, { operationId?: string; security: unknown[]; responses: Record<string, { content?: unknown }> }>>;
  };
  let seeded: Seeded;
  const clock = createManualClock(T0);

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: OPERATOR,
      clock,
      logger: pino({ level: "silent" }),
      erc8004: { target: FEEDBACK_TARGET },
    });
    seeded = await seed(server, clock, testDb);
    const text = await (await fetch(`${server.url}/v1/openapi.json`)).text();
    document = JSON.parse(text);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-openapi-"));
    documentFile = path.join(dir, "openapi.json");
    fs.writeFileSync(documentFile, text);
  });
  after(async () => {
    await server?.close();
    await testDb?.drop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("names every operation uniquely and gives every answer with a body a schema", () => {
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    expect(operations).to.have.length(56);
    const ids = operations.map((o) => o.operationId);
    expect(
      ids.every((id) => typeof id === "string" && /^[a-z][A-Za-z]+$/.test(id)),
      ids.join(", "),
    ).to.equal(true);
    expect(new Set(ids).size).to.equal(operations.length);
    for (const operation of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        // Only a 304 (Not Modified) has no body.
        const media = Object.values(response.content ?? {});
        if (status === "304") expect(media, `${operation.operationId} ${status}`).to.deep.equal([]);
        else
          expect(
            media.map((m) => Object.keys(m as object)),
            `${operation.operationId} ${status}`,
          ).to.satisfy((keys: string[][]) => keys.length === 1 && keys[0].includes("schema"));
      }
    }
  });

  it("declares each proof kind's evidence as a schema of its own, and what a challenge's answer says to do (issues #25, #31)", () => {
    const op = (document.paths["/v1/proofs"] as any).post;
    const evidence = op.requestBody.content["application/json"].schema.properties.evidence;
    const members = (evidence.anyOf ?? evidence.oneOf) as Array<{
      title: string;
      properties: Record<string, unknown>;
      additionalProperties: unknown;
    }>;
    // One member per kind the current method counts, in its table's order (issue #25: derived from the table of kinds).
    expect(members.map((m) => m.title)).to.deep.equal(OFFERED_PROOF_KINDS.map((kind) => `${kind} evidence`));
    const fields = Object.fromEntries(members.map((m) => [m.title, Object.keys(m.properties)]));
    expect(fields).to.deep.include({
      "github evidence": ["username", "gistId"],
      "wallet evidence": ["address", "signature", "signatureType"],
      "domain evidence": ["domain", "method"],
      "erc8004 evidence": ["chainId", "registry", "agentId", "signature", "signatureType"],
    });
    expect(members.every((m) => m.additionalProperties === false)).to.equal(true);
    const challenge = (document.paths["/v1/proofs/challenges"] as any).post.responses["201"].content["application/json"].schema;
    expect(Object.keys(challenge.properties.instructions.properties)).to.deep.equal(["steps", "publish", "sign", "evidence"]);
    expect(challenge.properties.kind.enum).to.deep.equal(OFFERED_PROOF_KINDS);
  });

  it("passes Redocly's recommended lint with no error and no warning, offline", async () => {
    // Its own config: the recommended rules and no telemetry; no update check either.
    fs.writeFileSync(path.join(dir, "redocly.yaml"), "extends:\n  - recommended\ntelemetry: off\n");
    const env = { ...OFFLINE, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
    const { stdout, stderr } = await run(process.execPath, [bin("@redocly/cli", "bin/cli.js"), "lint", documentFile, "--format=json"], {
      cwd: dir,
      env,
    });
    expect(stderr).not.to.contain("loopback-only:");
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).to.deep.equal([]);
    expect(report.totals).to.include({ errors: 0, warnings: 0 });
  });

  it(
    "generates a typed client that type-checks, and through it every public read route answers its " +
      "declared status and body (generates and type-checks a client: 5-13 s)",
    async () => {
      const publicReads = Object.values(document.paths).flatMap((methods) =>
        Object.entries(methods)
          .filter(([method, o]) => method === "get" && o.security.length === 0)
          .map(([, o]) => o.operationId),
      );
      const generated = await run(
        process.execPath,
        [bin("openapi-typescript", "bin/cli.js"), documentFile, "--output", path.join(dir, "schema.d.ts")],
        { cwd: dir, env: OFFLINE },
      );
      expect(generated.stderr).not.to.contain("loopback-only:");
      fs.writeFileSync(path.join(dir, "client.ts"), CLIENT);
      fs.symlinkSync(nodeModules, path.join(dir, "node_modules"));
      fs.writeFileSync(
        path.join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: "es2022",
            module: "nodenext",
            moduleResolution: "nodenext",
            types: [],
            lib: ["es2022", "dom"],
            skipLibCheck: true,
          },
          files: ["client.ts"],
        }),
      );
      const tsc = await run(process.execPath, [bin("typescript", "bin/tsc"), "-p", dir]).then(
        () => "",
        (e: { stdout: string }) => e.stdout,
      );
      expect(tsc).to.equal("");

      const client: {
        readEverything(
          baseUrl: string,
          ids: Seeded & { executor: string },
        ): Promise<Array<{ operationId: string; status: number; body: any }>>;
      } = require(path.join(dir, "client.ts"));
      let answers: Array<{ operationId: string; status: number; body: any }> = [];
      // GET /v1/ready answers 200 once the server has filled its cache.
      await server.ready;
      // Every body is checked against its declared schema by the server as it answers (src/api/reply-check.ts).
      const mismatches = await mismatchesDuring(
        async () => (answers = await client.readEverything(server.url, { ...seeded, executor: EXECUTOR })),
      );
      expect(mismatches).to.deep.equal([]);
      const byId = new Map(answers.map((a) => [a.operationId, a]));
      expect([...byId.keys()].filter((id) => publicReads.includes(id)).sort()).to.deep.equal([...publicReads].sort());
      const expected: Record<string, number> = Object.fromEntries(publicReads.map((id) => [id, 200]));
      expected["getLatestScore (unknown agent)"] = 404;
      expect(Object.fromEntries(answers.map((a) => [a.operationId, a.status]))).to.deep.equal(expected);

      // Non-trivial answers: the seeded agent's data, read through the typed client.
      const body = (id: string) => byId.get(id)?.body;
      expect(body("getLatestScore")).to.deep.include({ agentId: seeded.agentId, scoreType: "vrai" });
      expect(body("getLatestScore").result.components.integrity.penalties).to.have.length(1);
      expect(body("getScoreWindow").window).to.have.length(30);
      expect(body("getReputationPublishing")).to.include({ agentId: seeded.agentId, enabled: true });
      expect(body("getAgent").erc8004Publishing).to.deep.equal(body("getReputationPublishing"));
      expect(body("getReputationFeedbackFile")).to.include({ vraiAgentId: seeded.agentId, scoreType: "vrai", day: "2026-11-03" });
      expect(body("listDailyScores").scores.map((s: { id: number }) => s.id)).to.include(seeded.dailyScoreId);
      expect(body("getScoreInputs")).to.deep.include({ agent: seeded.agentId, proofs: ["erc8004"] });
      expect(body("getScoreProof")).to.deep.include({
        scoreId: seeded.dailyScoreId,
        leafVersion: 2,
        anchor: {
          contract: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
          chainId: 31337,
          txHash: `0x${"5e".repeat(32)}`,
          blockNumber: 12,
          anchoredAt: "2026-11-03T00:00:30Z",
        },
      });
      expect(body("getScoreProof").leafFields).to.include({
        agent: seeded.agentId,
        erc8004ChainId: "31337",
        erc8004Registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3",
        erc8004TokenId: "7",
      });
      expect(body("getLatestScoreProof")).to.deep.equal(body("getScoreProof"));
      expect(body("getIdentityAgent")).to.deep.include({
        agentId: seeded.agentId,
        chainId: 31337,
        tokenId: "7",
        links: {
          agent: `/v1/agents/${seeded.agentId}`,
          score: `/v1/agents/${seeded.agentId}/score`,
          proof: `/v1/agents/${seeded.agentId}/score/proof`,
        },
      });
      expect(body("listOutages").outages).to.have.length(1);
      expect(body("listPenalties").penalties[0]).to.include({ code: "rate_abuse", addedBy: "alice" });
      expect(body("listProofs").proofs[0]).to.include({ kind: "erc8004", subject: IDENTITY });
      expect(body("listAgents").agents.map((a: { agentId: string }) => a.agentId)).to.deep.equal([seeded.agentId]);
      // Its ERC-8004 proof was stored without a reading of its registration file: nothing self-declared to show.
      expect(body("getAgent")).to.deep.include({ agentId: seeded.agentId, selfDeclared: null });
      expect(body("getAgentDerivedScore")).to.deep.include({ executor: EXECUTOR, source: "self-reported", recordCount: 2 });
      expect(body("getExecutorDerivedScore").records).to.have.length(1);
      expect(body("getAgentNetworkScore")).to.include({ executor: EXECUTOR, tenths: 0 });
      expect(body("getIndexerHealth")).to.include({ status: "ok" });
      expect(body("getHealth").anchoring).to.include({ writing: false, failingSince: null });
      expect(body("getLatestScore (unknown agent)").error.code).to.equal("agent_not_found");
    },
  );
});
