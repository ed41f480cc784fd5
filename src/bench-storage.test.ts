/** `npm run bench:storage` at a tiny size: the format of its last line and the verifications it runs (issue #18). */
import { expect } from "chai";
import pg from "pg";
import { runStorageBench, type StorageBenchResult } from "../scripts/bench/storage";
import { BaseError } from "./errors";
import { TEST_PG_ADMIN_URL } from "./test-helpers/db";

async function benchDatabases(): Promise<string[]> {
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  await admin.connect();
  try {
    return (await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'vrai_bench_storage_%'")).rows.map(
      (r) => r.datname,
    );
  } finally {
    await admin.end();
  }
}

describe("bench:storage (issue #18)", function () {
  this.timeout(120_000);
  let lines: string[];
  let result: StorageBenchResult;
  let existing: string[];

  before(async () => {
    existing = await benchDatabases();
    lines = [];
    result = await runStorageBench(["--agents", "3", "--days", "2"], (line) => lines.push(line));
  });

  it("prints as its last line the bytes per agent-day of 3 agents × 2 days, a positive number", () => {
    const last = lines[lines.length - 1];
    const m = /^storage: (\d+) bytes per agent-day \(3 agents × 2 days, (.+)\)$/.exec(last);
    expect(m, last).to.not.equal(null);
    expect(Number(m![1])).to.be.greaterThan(0);
    expect(Number(m![1])).to.equal(Math.round(result.bytesPerAgentDay));
    expect(last).to.not.contain("VERIFICATION FAILED");
  });

  it("counts the tables that grow with agents and days (check-ins, scores, day aggregates) and not the fixed ones", () => {
    const counted = result.tables.filter((t) => t.counted).map((t) => t.name);
    expect(counted).to.include.members(["checkins", "scores", "agent_days", "agents", "proofs"]);
    expect(counted).to.not.include("schema_migrations");
    const total = result.tables.filter((t) => t.counted).reduce((s, t) => s + t.bytes, 0);
    expect(result.bytesPerAgentDay).to.equal(total / (3 * 2));
    // 3 agents, hourly for 2 days, a few missed: nearly 144 counted check-ins stored.
    expect(result.tables.find((t) => t.name === "checkins")!.rows).to.be.within(120, 144);
    // pgstattuple is installed with PostgreSQL here: each table's free heap space is part of its size.
    for (const t of result.tables.filter((t) => t.counted))
      expect(t.heapFree, t.name).to.be.a("number").and.at.least(0).and.at.most(t.bytes);
  });

  it("ran vrai recompute --verify over every stored score and checked daily-score proofs of both days over HTTP (V9)", () => {
    // Two daily scores per agent, and the change scores of the claims, proofs and penalty.
    expect(result.verified.scores).to.be.greaterThan(3 * 2);
    expect(result.verified.proofs).to.equal(3 * 2);
    expect(result.verified.days).to.equal(2);
    expect(result.ok).to.equal(true);
    expect(lines.some((l) => l.startsWith("stage vrai recompute --verify"))).to.equal(true);
  });

  it("drops its database at the end", async () => {
    expect(await benchDatabases()).to.deep.equal(existing);
  });

  it("refuses bad flags with a usage error before creating anything", async () => {
    for (const argv of [
      ["--agents", "0", "--days", "2"],
      ["--agents", "3"],
      ["--agents", "3", "--days", "2x"],
      ["--agents", "3", "--days", "2", "--frobnicate"],
    ]) {
      let caught: unknown;
      await runStorageBench(argv, () => undefined).catch((error: unknown) => {
        caught = error;
      });
      expect(caught, argv.join(" ")).to.be.instanceOf(BaseError);
      expect((caught as BaseError).code).to.equal("usage");
    }
    expect(await benchDatabases()).to.deep.equal(existing);
  });
});
