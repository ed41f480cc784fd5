import { expect } from "chai";
import { promises as dns } from "node:dns";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { apiClient } from "../test-helpers/api-client";
import { TEST_STORES, type TestDb } from "../test-helpers/db";
import { startHttpServer, type TestHttpServer } from "../test-helpers/http-server";

const OPERATOR_TOKEN = "operator-test-token-outbound-0123";
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;

/**
 * Issue #15, finding 2: on main the four spellings of the issue (and the first with a trailing dot) were
 * accepted, and the server connected to 127.0.0.1:443 (127.1.0.1 for the third).
 */
const ACCEPTED_ON_MAIN = ["127.0.0.0x1", "0x7f.0.0.0x1", "127.1.0x1", "0177.0.0.0x1", "127.0.0.0x1."];
/** Other spellings of an IP literal, already refused on main, still refused. */
const REFUSED_ON_MAIN = [
  "2130706433",
  "0x7f000001",
  "0x7f.1",
  "127.0.0.1.",
  "[::1]",
  "::1",
  "::ffff:127.0.0.1",
  "[::ffff:127.0.0.1]",
  "fe80::1%eth0",
  "[fe80::1%25eth0]",
  "10.0.0.1",
];

for (const { name, create } of TEST_STORES) {
  describe(`domain proofs never reach inside, over HTTP on ${name} (issue #15, finding 2)`, () => {
    let testDb: TestDb;
    let server: ApiServer;
    /** Where a well-known file would be read if the address check failed: it counts every connection. */
    let web: TestHttpServer;
    const txt = new Map<string, string[][]>();
    const resolved: string[] = [];

    const { call, ownerWithAgent } = apiClient(() => server.url);

    before(async () => {
      testDb = await create();
      web = await startHttpServer();
      server = await startApiServer({
        db: testDb.db,
        operatorToken: OPERATOR_TOKEN,
        clock: createManualClock(T0),
        logger: pino({ level: "silent" }),
        proofSources: {
          // Every name resolves to 127.0.0.1, the well-known file is read from the counting server's port.
          resolveAddresses: async (hostname) => {
            resolved.push(hostname);
            return [{ address: "127.0.0.1", family: 4 }];
          },
          wellKnownUrl: (domain) => `http://${domain}:${web.port}/.well-known/vrai.json`,
          // TXT records come from this map only: no query leaves the process.
          resolveTxt: async (hostname) => {
            const records = txt.get(hostname);
            if (!records) throw Object.assign(new Error(`queryTxt ENOTFOUND ${hostname}`), { code: dns.NOTFOUND });
            return records;
          },
          sleep: async () => undefined,
          retry: { tries: 3, baseDelayMs: 1 },
        },
      });
    });
    after(async () => {
      await server.close();
      await web.close();
      await testDb.drop();
    });

    describe("challenges for IP literals", () => {
      let asker: Awaited<ReturnType<typeof ownerWithAgent>>;
      before(async () => (asker = await ownerWithAgent()));
      for (const spelling of [...ACCEPTED_ON_MAIN, ...REFUSED_ON_MAIN]) {
        it(`refuses the challenge for ${JSON.stringify(spelling)} with 400 proof_domain_invalid`, async () => {
          const { owner, agent } = asker;
          const answer = await call("POST", "/v1/proofs/challenges", owner.token, {
            kind: "domain",
            subject: spelling,
            agentId: agent.agentId,
          });
          expect(answer.status).to.equal(400);
          expect(answer.json.error.code).to.equal("proof_domain_invalid");
          expect(answer.json.error.message).to.include(JSON.stringify(spelling));
        });
      }
    });

    it("answers 422 proof_forbidden_address when the domain resolves to 127.0.0.1, connects to nothing, and changes nothing", async () => {
      const { owner, agent } = await ownerWithAgent();
      const challenge = await call("POST", "/v1/proofs/challenges", owner.token, {
        kind: "domain",
        subject: "proof.example.com",
        agentId: agent.agentId,
      });
      expect(challenge.status).to.equal(201);
      web.route("GET", "/.well-known/vrai.json", { body: { vrai: [challenge.json.token] } });
      const scoreBefore = (await call("GET", `/v1/agents/${agent.agentId}/score`)).json.total;
      const connections = web.connectionCount();
      resolved.length = 0;

      const refused = await call("POST", "/v1/proofs", owner.token, {
        challengeId: challenge.json.id,
        evidence: { domain: "proof.example.com", method: "well-known" },
      });
      expect(refused.status).to.equal(422);
      expect(Object.keys(refused.json)).to.deep.equal(["error"]);
      expect(refused.json.error.code).to.equal("proof_forbidden_address");
      expect(refused.json.error.message).to.include("proof.example.com").and.include("not public").and.not.include("127.0.0.1");
      expect(web.connectionCount()).to.equal(connections);
      expect(resolved, "checked once, not retried").to.deep.equal(["proof.example.com"]);
      expect((await call("GET", `/v1/agents/${agent.agentId}/proofs`)).json.proofs).to.deep.equal([]);
      expect((await call("GET", `/v1/agents/${agent.agentId}/score`)).json.total).to.equal(scoreBefore);

      // The challenge was not used up: the same one proves the domain through its TXT record.
      txt.set("_vrai.proof.example.com", [[challenge.json.token]]);
      const proved = await call("POST", "/v1/proofs", owner.token, {
        challengeId: challenge.json.id,
        evidence: { domain: "proof.example.com", method: "dns" },
      });
      expect(proved.status).to.equal(201);
      expect(web.connectionCount()).to.equal(connections);
    });

    it("answers 422 when no method is given, DNS has no record and the well-known host resolves to 127.0.0.1, connecting to nothing", async () => {
      const { owner, agent } = await ownerWithAgent();
      const challenge = await call("POST", "/v1/proofs/challenges", owner.token, {
        kind: "domain",
        subject: "inside.example.net",
        agentId: agent.agentId,
      });
      const connections = web.connectionCount();
      const refused = await call("POST", "/v1/proofs", owner.token, {
        challengeId: challenge.json.id,
        evidence: { domain: "inside.example.net" },
      });
      expect(refused.status).to.equal(422);
      expect(refused.json.error.code).to.equal("proof_dns_record_not_found");
      expect(refused.json.error.message).to.include("not public").and.not.include("127.0.0.1");
      expect(web.connectionCount()).to.equal(connections);
    });
  });
}
