import { expect } from "chai";
import { createOperatorRepository } from "../store/operators";
import { createMemoryStore } from "../store/memory-store";
import { createMigratedTestDb, type TestDb } from "../test-helpers/db";
import { createManualClock } from "./clock";
import { createVraiService } from "./index";
import { UNNAMED_OPERATOR } from "./operator";
import { ADMIN_OPERATOR, createOperators, type Operators } from "./operators";
import { hashSecret } from "./secrets";

const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const BOOTSTRAP = "bootstrap-token-for-operators-test-0000";

/** The error `work` fails with (its code and status), or null when it does not fail. */
const failure = (work: Promise<unknown>) =>
  work.then(
    () => null,
    (error: { code: string; status: number; message: string }) => error,
  );

describe("named operators (V7)", () => {
  let testDb: TestDb;
  let operators: Operators;
  const clock = createManualClock(T0);
  const auditOf = async (subject: string) =>
    (await testDb.db.query("SELECT actor, action FROM audit_log WHERE subject = $1 ORDER BY id", [subject])).rows;

  before(async () => {
    testDb = await createMigratedTestDb();
    operators = createOperators({ operators: createOperatorRepository(testDb.db), clock, bootstrapTokenHash: hashSecret(BOOTSTRAP) });
  });
  after(() => testDb.drop());

  it("adds an operator whose token authenticates as its name, logged as done by admin", async () => {
    const { name, token } = await operators.add("alice");
    expect(name).to.equal("alice");
    expect(token).to.match(/^vop_alice\.t_[A-Za-z0-9_-]{43}$/);
    expect(await operators.authenticate(token)).to.equal("alice");
    expect(await operators.authenticate(BOOTSTRAP)).to.equal(ADMIN_OPERATOR);
    expect(await auditOf("alice")).to.deep.equal([{ actor: "admin", action: "operator.add" }]);
  });

  it("refuses names that are not 1 to 32 lowercase letters, digits, _ or - from a letter, and reserved names, storing nothing", async () => {
    const invalid = ["", "Alice", "1alice", "al.ice", "al ice", "a".repeat(33), "élise"];
    for (const bad of invalid)
      expect(await failure(operators.add(bad)), JSON.stringify(bad)).to.include({ code: "operator_name_invalid", status: 400 });
    const reserved = [ADMIN_OPERATOR, UNNAMED_OPERATOR, "owner", "scheduler", "replay"];
    for (const name of reserved)
      expect(await failure(operators.add(name)), name).to.include({ code: "operator_name_reserved", status: 400 });
    expect(await failure(operators.add("a".repeat(32)))).to.equal(null);
    const stored = await testDb.db.query("SELECT name FROM operators WHERE name = ANY($1::text[])", [[...invalid, ...reserved]]);
    expect(stored.rows).to.deep.equal([]);
    expect(
      (await testDb.db.query("SELECT 1 FROM audit_log WHERE subject = ANY($1::text[])", [[...invalid, ...reserved]])).rows,
    ).to.deep.equal([]);
  });

  it("never gives a name twice, even once its operator is revoked; the first token stays the only one", async () => {
    const first = await operators.add("bob");
    expect(await failure(operators.add("bob"))).to.include({ code: "operator_exists", status: 409 });
    await operators.revoke("bob");
    expect(await failure(operators.add("bob"))).to.include({ code: "operator_exists", status: 409 });
    const stored = await testDb.db.query<{ token_hash: string }>("SELECT token_hash FROM operators WHERE name = 'bob'");
    expect(stored.rows).to.deep.equal([{ token_hash: hashSecret(first.token) }]);
    expect((await auditOf("bob")).map((r) => r.action)).to.deep.equal(["operator.add", "operator.revoke"]);
  });

  it("revokes from now on: the token is refused with 401, a second revoke and an unknown name are refused", async () => {
    const { token } = await operators.add("carol");
    clock.set(T0 + 3600);
    expect(await operators.revoke("carol")).to.deep.equal({ name: "carol", revokedAt: T0 + 3600 });
    expect(await failure(operators.authenticate(token))).to.deep.include({
      code: "operator_revoked",
      status: 401,
      message: "operator carol was revoked at 2026-11-02T11:00:00Z",
    });
    expect(await failure(operators.revoke("carol"))).to.include({ code: "operator_already_revoked", status: 409 });
    expect(await failure(operators.revoke("dave"))).to.include({ code: "operator_not_found", status: 404 });
    expect(await auditOf("carol")).to.deep.equal([
      { actor: "admin", action: "operator.add" },
      { actor: "admin", action: "operator.revoke" },
    ]);
  });

  it("authenticates no bootstrap token when none is configured (the command line), and no other token", async () => {
    const cli = createOperators({ operators: createOperatorRepository(testDb.db), clock });
    expect(await failure(cli.authenticate(BOOTSTRAP))).to.include({ code: "invalid_operator_token", status: 401 });
    expect(await failure(operators.authenticate(`${BOOTSTRAP}x`))).to.include({ code: "invalid_operator_token", status: 401 });
  });
});

describe("the operator's actions on the memory store of vrai replay (V7)", () => {
  it("keeps who added and revoked a penalty and who declared and closed a window, 'operator' when no name is given", async () => {
    const clock = createManualClock(T0);
    const service = createVraiService({ store: createMemoryStore(), clock, busy: () => false });
    const owner = await service.accounts.createOwner();
    const { agentId } = await service.accounts.claimNewAgent(owner.ownerId);
    await service.operator.addPenalty({ id: "p1", agentId, code: "rate_abuse", points: 10, days: 30, reason: "r" }, "alice");
    await service.operator.addPenalty({ id: "p2", agentId, code: "rate_abuse", points: 10, days: 30, reason: "r" });
    await service.operator.revokePenalty("p1", "appeal", "bob");
    await service.operator.declareOutage({ id: "w1", start: T0 - 60, end: null, reason: "r" }, "bob");
    await service.operator.closeOutage("w1", T0, "alice");
    const penalties = await service.store.read.listPenalties(agentId);
    expect(penalties.map((p) => [p.id, p.addedBy, p.revokedBy])).to.deep.equal([
      ["p1", "alice", "bob"],
      ["p2", UNNAMED_OPERATOR, null],
    ]);
    expect(await service.store.read.getOutage("w1")).to.include({ declaredBy: "bob", closedBy: "alice" });
    const audit = await service.store.read.listAudit({ afterId: 0, limit: 10 });
    expect(audit.map((e) => [e.actor, e.action])).to.deep.equal([
      ["alice", "penalty.add"],
      [UNNAMED_OPERATOR, "penalty.add"],
      ["bob", "penalty.revoke"],
      ["bob", "outage.declare"],
      ["alice", "outage.close"],
    ]);
  });
});
