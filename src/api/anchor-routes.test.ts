import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { SCORE_LEAF_V2_TYPES } from "../chain/score-tree";
import { createManualClock } from "../service/clock";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const REGISTRY = "0x8004a169fb4a3325136eb29fa0ceb6d2e539a432";
const SUBJECT = `8453:${REGISTRY}:7`;

describe("the routes of score proofs and ERC-8004 identities' agents (PGlite)", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let agentId: string;
  let ownerId: string;
  const clock = createManualClock(T0);
  const get = async (path: string) => {
    const response = await fetch(server.url + path);
    return { status: response.status, body: (await response.json()) as any };
  };

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "op-token-anchor-routes-0000",
      clock,
      logger: pino({ level: "silent" }),
    });
    ({ ownerId } = await server.service.accounts.createOwner());
    ({ agentId } = await server.service.accounts.claimNewAgent(ownerId));
    await server.service.identity.recordProof({
      id: "prf_erc",
      kind: "erc8004",
      ownerId,
      agentId,
      subject: SUBJECT,
      binding: `erc8004:${SUBJECT}`,
      evidence: {},
    });
  });
  after(async () => {
    await server?.close();
    await testDb?.drop();
  });

  it("names the Vrai agent holding an ERC-8004 identity now, whatever the case of the registry, with its latest score and the link to its proof", async () => {
    const latest = await get(`/v1/agents/${agentId}/score`);
    for (const registry of [REGISTRY, REGISTRY.toUpperCase().replace("0X", "0x"), "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432"]) {
      const { status, body } = await get(`/v1/erc8004/8453/${registry}/7`);
      expect(status, registry).to.equal(200);
      expect(body).to.deep.equal({
        chainId: 8453,
        registry: "0x8004A169FB4a3325136EB29fA0ceB6D2e539a432",
        tokenId: "7",
        agentId,
        provenAt: "2026-11-02T10:00:00Z",
        score: { id: latest.body.id, at: latest.body.at, trigger: "change", method: "0.2", total: 150 + 100, sha256: latest.body.sha256 },
        links: { agent: `/v1/agents/${agentId}`, score: `/v1/agents/${agentId}/score`, proof: `/v1/agents/${agentId}/score/proof` },
      });
    }
  });

  it("answers 404 erc8004_identity_not_held for an identity no agent holds: another token, another chain, or a proof since removed", async () => {
    for (const path of [`/v1/erc8004/8453/${REGISTRY}/8`, `/v1/erc8004/1/${REGISTRY}/7`]) {
      const { status, body } = await get(path);
      expect([status, body.error.code], path).to.deep.equal([404, "erc8004_identity_not_held"]);
    }
    clock.set(T0 + 60);
    await server.service.identity.removeProof("prf_erc", "removed by its owner", { ownerId });
    const { status, body } = await get(`/v1/erc8004/8453/${REGISTRY}/7`);
    expect([status, body.error.code]).to.deep.equal([404, "erc8004_identity_not_held"]);
    expect(body.error.message).to.equal(`no Vrai agent holds ERC-8004 identity ${SUBJECT} (no active erc8004 proof of it)`);
  });

  it("refuses a malformed chain id, registry or token id with a 400 naming the field", async () => {
    const cases: Array<[string, string]> = [
      [`/v1/erc8004/0/${REGISTRY}/7`, "path.chainId"],
      [`/v1/erc8004/abc/${REGISTRY}/7`, "path.chainId"],
      [`/v1/erc8004/12345678901234567/${REGISTRY}/7`, "path.chainId"],
      ["/v1/erc8004/8453/0x1234/7", "path.registry"],
      [`/v1/erc8004/8453/${REGISTRY}zz/7`, "path.registry"],
      [`/v1/erc8004/8453/${REGISTRY}/-1`, "path.tokenId"],
      [`/v1/erc8004/8453/${REGISTRY}/007`, "path.tokenId"],
      [`/v1/erc8004/8453/${REGISTRY}/${2n ** 256n}`, "path.tokenId"],
      [`/v1/erc8004/8453/${REGISTRY}/abc`, "path.tokenId"],
      [`/v1/erc8004/8453/${REGISTRY}/%2F`, "path.tokenId"],
      // 2^53 + 1: 16 digits that Number() would round to 2^53, another chain.
      [`/v1/erc8004/9007199254740993/${REGISTRY}/7`, "path.chainId"],
      [`/v1/erc8004/1e3/${REGISTRY}/7`, "path.chainId"],
      [`/v1/erc8004/0x10/${REGISTRY}/7`, "path.chainId"],
      ["/v1/scores/abc/proof", "path.id"],
      ["/v1/scores/0/proof", "path.id"],
      ["/v1/agents/not%20an%20id/score/proof", "path.id"],
      // What Number() reads but is not a score id in decimal digits, on every route that takes one.
      ...["1e3", "0x10", "%2012", "12%20", "+12", "012", "1.0", "9007199254740992"].flatMap(
        (id): Array<[string, string]> => [
          [`/v1/scores/${id}/proof`, "path.id"],
          [`/v1/scores/${id}`, "path.id"],
          [`/v1/scores/${id}/inputs`, "path.id"],
        ],
      ),
    ];
    for (const [path, field] of cases) {
      const { status, body } = await get(path);
      expect(status, path).to.equal(400);
      expect(body.error.code, path).to.equal("invalid_request");
      expect(body.error.message, path).to.match(new RegExp(`^${field.replace(".", "\\.")}: `));
    }
  });

  it("takes a chain id and a score id up to 2^53 - 1, in decimal digits", async () => {
    const holder = await get(`/v1/erc8004/9007199254740991/${REGISTRY}/7`);
    expect([holder.status, holder.body.error.code]).to.deep.equal([404, "erc8004_identity_not_held"]);
    expect(holder.body.error.message).to.contain("9007199254740991:");
    for (const path of ["/v1/scores/9007199254740991", "/v1/scores/9007199254740991/inputs", "/v1/scores/9007199254740991/proof"]) {
      const { status, body } = await get(path);
      expect([status, body.error.code], path).to.deep.equal([404, "score_not_found"]);
    }
  });

  it("declares a version-2 proof's leafTypes as the exact tuple it answers, and a score id as an integer", async () => {
    const { body: doc } = await get("/v1/openapi.json");
    const proof = doc.paths["/v1/scores/{id}/proof"].get;
    const v2 = proof.responses[200].content["application/json"].schema.oneOf.find((s: any) => s.properties.leafVersion.const === 2);
    expect(v2.properties.leafTypes.prefixItems.map((item: any) => item.const)).to.deep.equal([...SCORE_LEAF_V2_TYPES]);
    expect(v2.properties.leafTypes.items).to.equal(false);
    for (const path of ["/v1/scores/{id}", "/v1/scores/{id}/inputs", "/v1/scores/{id}/proof"]) {
      expect(doc.paths[path].get.parameters[0].schema, path).to.deep.equal({
        type: "integer",
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
      });
    }
  });

  it("answers 404 proof_not_ready for an agent none of whose daily scores is anchored, and agent_not_found for an unknown agent", async () => {
    clock.set(T0 + 86_400);
    await server.scheduler.catchUpDaily();
    // The day's tree is stored (no anchoring configured) but its root was never mined.
    expect((await server.anchoring.buildDay("2026-11-03"))?.leafCount).to.equal(1);
    const ready = await get(`/v1/agents/${agentId}/score/proof`);
    expect([ready.status, ready.body.error.code]).to.deep.equal([404, "proof_not_ready"]);
    const unknown = await get("/v1/agents/agt_nobody/score/proof");
    expect([unknown.status, unknown.body.error.code]).to.deep.equal([404, "agent_not_found"]);
  });

  it("says in proof_not_ready when the first daily score comes, before it exists, and when the day's root is expected after", async () => {
    const { agentId: newcomer } = await server.service.accounts.claimNewAgent(ownerId);
    const claimedAt = clock.now();
    const latest = async (agent: string) => {
      const { status, body } = await get(`/v1/agents/${agent}/score/proof`);
      expect([status, body.error.code], agent).to.deep.equal([404, "proof_not_ready"]);
      return body.error.message as string;
    };
    // As GET /v1/agents/{id}/scores says it (firstDailyAt): the first 00:00 UTC after the claim.
    const { body: history } = await get(`/v1/agents/${newcomer}/scores`);
    expect(history.firstDailyAt).to.equal("2026-11-04T00:00:00Z");
    expect(await latest(newcomer)).to.equal(
      `agent ${newcomer} has no daily score yet: the first is computed at 2026-11-04T00:00:00Z (the first 00:00 UTC after its claim, V9); ` +
        "its proof is served once that day's root is anchored on chain, right after",
    );
    // Its midnight has come, its recompute not yet.
    clock.set(Date.UTC(2026, 10, 4, 0, 0, 5) / 1000);
    expect(claimedAt).to.be.lessThan(clock.now());
    expect(await latest(newcomer)).to.match(
      new RegExp(
        `^agent ${newcomer} has no daily score yet: the first was due at 2026-11-04T00:00:00Z and comes with the next daily recompute `,
      ),
    );
    // Its daily score stored, the day's tree not built yet.
    await server.service.scoring.recomputeDay("2026-11-04");
    const { body: scored } = await get(`/v1/agents/${newcomer}/scores`);
    const [daily] = scored.scores as Array<{ id: number; day: string }>;
    expect(daily.day).to.equal("2026-11-04");
    const expected = "this service does not anchor (no ANCHOR_PRIVATE_KEY): it comes when the instance that anchors has it mined";
    const noTree = await get(`/v1/scores/${daily.id}/proof`);
    expect([noTree.status, noTree.body.error.code]).to.deep.equal([404, "proof_not_ready"]);
    expect(noTree.body.error.message).to.equal(
      `score ${daily.id}'s day (2026-11-04) has no tree yet: ` +
        `the tree is built right after that day's daily recompute (from 2026-11-04T00:00:00Z), then its root is anchored; ${expected}`,
    );
    expect(await latest(newcomer)).to.equal(
      `agent ${newcomer}'s latest daily score's day (2026-11-04) has no tree yet: ` +
        `the tree is built right after that day's daily recompute (from 2026-11-04T00:00:00Z), then its root is anchored; ${expected}`,
    );
    // The tree built, its root not mined.
    const built = await server.anchoring.buildDay("2026-11-04");
    const unmined = await get(`/v1/scores/${daily.id}/proof`);
    expect(unmined.body.error.message).to.equal(
      `score ${daily.id}'s day (2026-11-04) is not anchored yet: its root ${built?.root} is not mined; ${expected}`,
    );
    expect(await latest(newcomer)).to.equal(
      `agent ${newcomer}'s latest daily score's day (2026-11-04) is not anchored yet: its root ${built?.root} is not mined; ${expected}`,
    );
  });
});
