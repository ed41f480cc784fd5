import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../../app/server";
import { hashSecret } from "../../service/secrets";
import { createPgliteDb } from "../../store/db";
import { createTestPgDb, type TestDb } from "../../test-helpers/db";
import { startServe } from "../../test-helpers/serve";

const BIN = path.resolve(__dirname, "../../../bin/vrai.js");
const OPERATOR_TOKEN = "bootstrap-token-operator-cli-test-000";

/** `vrai <args>` as installed (bin/vrai.js running the built dist/vrai.cjs), with `env` over a clean store configuration. */
function vrai(args: string[], env: Record<string, string>) {
  const { DATABASE_URL: _url, DATA_DIR: _dir, ...rest } = process.env;
  const run = spawnSync(process.execPath, [BIN, ...args], { env: { ...rest, ...env }, encoding: "utf8" });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Exit 2 with exactly one line on standard error, which names `problem`. */
function expectBadInput(run: ReturnType<typeof vrai>, problem: RegExp) {
  expect(run.status, run.stderr).to.equal(2);
  expect(run.stdout).to.equal("");
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).to.have.length(1);
  expect(lines[0]).to.match(/^vrai operator: /);
  expect(lines[0]).to.match(problem);
}

describe("vrai operator add|revoke on PostgreSQL (V7)", function () {
  this.timeout(120_000);
  let testDb: TestDb;
  let server: ApiServer;
  let env: Record<string, string>;
  let aliceToken = "";

  const setBusy = async (token: string) => {
    const res = await fetch(`${server.url}/v1/operator/busy`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ on: false, reason: "cli test" }),
    });
    return { status: res.status, json: (await res.json()) as { error?: { code: string } } };
  };
  const lastAudit = async () => (await testDb.db.query("SELECT actor, action, subject FROM audit_log ORDER BY id DESC LIMIT 1")).rows[0];

  before(async () => {
    testDb = await createTestPgDb();
    env = { DATABASE_URL: testDb.url! };
    server = await startApiServer({ db: testDb.db, operatorToken: OPERATOR_TOKEN, logger: pino({ level: "silent" }), scoreCacheBytes: 0 });
  });
  after(async () => {
    await server.close();
    await testDb.drop();
  });

  it("adds an operator: its token printed once on standard output, stored only as its SHA-256, accepted by the API under its name", async () => {
    const run = vrai(["operator", "add", "alice"], env);
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^vop_alice\.t_[A-Za-z0-9_-]{43}\n$/);
    expect(run.stderr).to.equal("operator alice added: its token is shown this once (only its hash is stored)\n");
    aliceToken = run.stdout.trim();
    const stored = await testDb.db.query("SELECT name, token_hash, revoked_at FROM operators");
    expect(stored.rows).to.deep.equal([{ name: "alice", token_hash: hashSecret(aliceToken), revoked_at: null }]);
    expect(await lastAudit()).to.deep.equal({ actor: "admin", action: "operator.add", subject: "alice" });

    expect((await setBusy(aliceToken)).status).to.equal(200);
    expect(await lastAudit()).to.deep.equal({ actor: "alice", action: "busy.off", subject: "service" });
  });

  it(
    "refuses a taken name, an invalid or reserved one, a missing one and an unknown action: exit 2, one " +
      "line, nothing stored (a CLI run per case: 6-20 s)",
    async () => {
      expectBadInput(vrai(["operator", "add", "alice"], env), /operator alice already exists/);
      expectBadInput(vrai(["operator", "add", "Alice"], env), /operator name must be 1 to 32 lowercase letters.*got "Alice"/);
      expectBadInput(vrai(["operator", "add", "admin"], env), /operator name admin is reserved/);
      expectBadInput(vrai(["operator", "add"], env), /missing the operator's name/);
      expectBadInput(vrai(["operator", "rename", "alice"], env), /unknown action rename \(usage: vrai operator add\|revoke <name>/);
      expectBadInput(vrai(["operator", "add", "bob", "carol"], env), /unknown argument carol/);
      expect((await testDb.db.query("SELECT name FROM operators")).rows).to.deep.equal([{ name: "alice" }]);
    },
  );

  it(
    "revokes an operator: the API then refuses its token with 401, the bootstrap token still works; revoking again or an " +
      "unknown name is exit 2 (three CLI runs: 3-12 s)",
    async () => {
      const run = vrai(["operator", "revoke", "alice"], env);
      expect(run.status, run.stderr).to.equal(0);
      expect(run.stdout).to.match(/^operator alice revoked at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\n$/);
      expect(await lastAudit()).to.deep.equal({ actor: "admin", action: "operator.revoke", subject: "alice" });

      const refused = await setBusy(aliceToken);
      expect(refused.status).to.equal(401);
      expect(refused.json.error?.code).to.equal("operator_revoked");
      expect((await setBusy(OPERATOR_TOKEN)).status).to.equal(200);
      expect(await lastAudit()).to.deep.equal({ actor: "admin", action: "busy.off", subject: "service" });

      expectBadInput(vrai(["operator", "revoke", "alice"], env), /operator alice was already revoked/);
      expectBadInput(vrai(["operator", "revoke", "zed"], env), /operator "zed" does not exist/);
    },
  );

  it(
    "refuses a PGlite data directory that a running vrai serve holds (issue #33): exit 2 at once, the " +
      "holder's PID named, nothing changed (vrai serve on PGlite, then three CLI runs: 10-20 s)",
    async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), "vrai-operator-held-"));
      const serve = await startServe({ DATA_DIR: dataDir, PORT: "0", OPERATOR_TOKEN, LOG_LEVEL: "silent", DATABASE_URL: "" });
      try {
        const pid = serve.child.pid!;
        for (const args of [
          ["operator", "add", "erin"],
          ["operator", "revoke", "erin"],
        ]) {
          const started = Date.now();
          const run = vrai(args, { DATA_DIR: dataDir });
          expectBadInput(run, new RegExp(`data directory .* is in use by vrai serve \\(pid ${pid}, .*stop that one first`));
          expect(Date.now() - started).to.be.below(15_000);
        }
        const recompute = vrai(["recompute", "--data-dir", dataDir], {});
        expect([recompute.status, recompute.stderr.trimEnd().split("\n").length], recompute.stderr).to.deep.equal([2, 1]);
        expect(recompute.stderr).to.match(new RegExp(`^vrai recompute: data directory .* in use by vrai serve \\(pid ${pid}`));
        // The service is untouched: the bootstrap token works, and no operator was added behind its back.
        const busy = await fetch(`${serve.url}/v1/operator/busy`, {
          method: "PUT",
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ on: false, reason: "held test" }),
        });
        expect(busy.status).to.equal(200);
      } finally {
        await serve.kill("SIGTERM");
      }
      try {
        // Stopped, the directory is free again.
        const run = vrai(["operator", "add", "erin"], { DATA_DIR: dataDir });
        expect(run.status, run.stderr).to.equal(0);
        const db = await createPgliteDb(dataDir);
        try {
          expect((await db.query("SELECT name FROM operators")).rows).to.deep.equal([{ name: "erin" }]);
        } finally {
          await db.close();
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );

  it(
    "works on the embedded PGlite store in DATA_DIR when DATABASE_URL is unset, as vrai serve does (a " +
      "CLI run per step on a new PGlite store: 8-20 s)",
    async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), "vrai-operator-"));
      try {
        const run = vrai(["operator", "add", "dana"], { DATA_DIR: dataDir });
        expect(run.status, run.stderr).to.equal(0);
        const db = await createPgliteDb(dataDir);
        try {
          expect((await db.query("SELECT name, token_hash FROM operators")).rows).to.deep.equal([
            { name: "dana", token_hash: hashSecret(run.stdout.trim()) },
          ]);
        } finally {
          await db.close();
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});
