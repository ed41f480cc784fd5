import { expect } from "chai";
import pino from "pino";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { createTestPgDb, type TestDb } from "../test-helpers/db";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const TRIALS = 20;
const RIVALS = 3;

// Real concurrency needs a pool of connections: PostgreSQL only (PGlite runs one transaction at a time).
describe("owners racing to prove the same wallet on postgresql (V6: a wallet binds to one owner)", () => {
  let testDb: TestDb;
  let server: ApiServer;

  async function call(method: string, path: string, token?: string, body?: unknown) {
    const res = await fetch(server.url + path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as { error?: { code: string; message: string } } & Record<string, unknown> };
  }

  before(async () => {
    testDb = await createTestPgDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "operator-test-token-race-0123",
      clock: createManualClock(T0),
      logger: pino({ level: "silent" }),
      rateLimit: { perMinute: 100_000, burst: 10_000, ownersPerHour: 1_000 },
    });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it(`answers each of ${RIVALS} simultaneous submissions 201 or 409 (never 500), ${TRIALS} times, and binds the wallet once`, async () => {
    const statuses: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const wallet = privateKeyToAccount(generatePrivateKey());
      // Every rival's challenge and signature is ready before any submission starts, so the submissions overlap.
      const submissions = await Promise.all(
        Array.from({ length: RIVALS }, async () => {
          const owner = (await call("POST", "/v1/owners", undefined, {})).json;
          const challenge = (await call("POST", "/v1/proofs/challenges", String(owner.token), { kind: "wallet", subject: wallet.address }))
            .json;
          const signature = await wallet.signMessage({ message: String(challenge.message) });
          return {
            token: String(owner.token),
            body: { challengeId: challenge.id, evidence: { address: wallet.address, signature, signatureType: "eip191" } },
          };
        }),
      );
      const answers = await Promise.all(submissions.map((s) => call("POST", "/v1/proofs", s.token, s.body)));
      statuses.push(...answers.map((a) => a.status));
      expect(
        answers.filter((a) => a.status === 201),
        `trial ${trial}`,
      ).to.have.length(1);
      for (const lost of answers.filter((a) => a.status !== 201)) {
        expect(lost.status, `trial ${trial}: ${JSON.stringify(lost.json)}`).to.equal(409);
        expect(lost.json.error?.code).to.equal("proof_bound_to_another_owner");
        expect(lost.json.error?.message).to.be.a("string");
      }
      const active = await testDb.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM proofs WHERE binding = $1 AND removed_at IS NULL",
        [`wallet:${wallet.address.toLowerCase()}`],
      );
      expect(active.rows[0].n, `trial ${trial}: active bindings`).to.equal(1);
      // A lost race changes nothing: each loser's challenge is still unused.
      const used = await testDb.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM proof_challenges WHERE lower(subject) = $1 AND used_at IS NOT NULL",
        [wallet.address.toLowerCase()],
      );
      expect(used.rows[0].n, `trial ${trial}: used challenges`).to.equal(1);
    }
    expect(statuses).to.have.length(TRIALS * RIVALS);
  });
});
