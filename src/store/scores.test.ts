import { expect } from "chai";
import { createMemoryStore } from "./memory-store";
import { arrayElement, DAILY_AGENT_ROWS_SQL, daysFrom } from "./scores";
import { windowDays } from "../method/time";
import { createMigratedTestDb, TEST_STORES } from "../test-helpers/db";
import { EVERY_STORE } from "../test-helpers/stores";

const DIGEST_A = "a".repeat(64);
const DIGEST_B = "0123456789abcdef".repeat(4);

describe("the daily recompute's day lines (DAYS_OF_AGENT, issue #30)", () => {
  it("reads each line's six columns, a day of coverage alone with its empty digest included", () => {
    expect(daysFrom(`2026-11-01,24,23,86400,86400,${DIGEST_A};2026-11-02,0,0,0,3600,`)).to.deep.equal([
      { day: "2026-11-01", checkins: 24, onTime: 23, creditS: 86400, coverageS: 86400, digest: DIGEST_A },
      { day: "2026-11-02", checkins: 0, onTime: 0, creditS: 0, coverageS: 3600, digest: "" },
    ]);
  });

  it("gives nothing for an agent without day aggregates (NULL)", () => {
    expect(daysFrom(null)).to.deep.equal([]);
  });

  it("puts days read out of order back in day order (the SQL leaves the order to the index)", () => {
    const days = daysFrom(`2026-11-03,1,1,5,60,${DIGEST_B};2026-11-01,2,0,0,0,${DIGEST_A};2026-11-02,3,1,7,10,${DIGEST_B}`);
    expect(days.map((d) => d.day)).to.deep.equal(["2026-11-01", "2026-11-02", "2026-11-03"]);
    expect(days[2]).to.deep.equal({ day: "2026-11-03", checkins: 1, onTime: 1, creditS: 5, coverageS: 60, digest: DIGEST_B });
  });

  it("reads a credit beyond 32 bits (credit_s is a bigint) exactly", () => {
    expect(daysFrom(`2026-11-01,1,1,9007199254740991,1,${DIGEST_A}`)[0].creditS).to.equal(Number.MAX_SAFE_INTEGER);
  });
});

for (const setup of EVERY_STORE) {
  describe(`a batch of scores on ${setup.name} (ScoreBatch)`, () => {
    it("starts empty, and insertScores refuses a batch its scoreBatch() did not make", async () => {
      const { store, close } = await setup.open();
      try {
        const own = store.read.scoreBatch();
        expect(own.size).to.equal(0);
        expect(await store.read.insertScores(own)).to.deep.equal({ stored: 0, moved: [] });
        const other = setup.name === "memory" ? await EVERY_STORE[0].open() : { store: createMemoryStore(), close: async () => undefined };
        try {
          for (const batch of [other.store.read.scoreBatch(), { add: () => undefined, size: 0 }]) {
            const error = await store.read
              .insertScores(batch)
              .then(() => null)
              .catch((e: Error & { code?: string }) => e);
            expect(error?.code).to.equal("foreign_score_batch");
          }
        } finally {
          await other.close();
        }
      } finally {
        await close();
      }
    });
  });
}

/** Values of every kind a score's column holds, the awkward ones of each included. */
const COLUMN_VALUES = {
  text: ["plain", "", "NULL", 'a "quoted" word', "back\\slash \\\\ two", "{braces},commas", "  spaces  ", "ünïcødé ✓", "line\nbreak", null],
  bytea: [new Uint8Array([]), new Uint8Array([0, 1, 2, 255]), Buffer.from("5c22", "hex"), Buffer.from("xyz").subarray(1), null],
  boolean: [true, false, null],
  bigint: [0, -1, 1_793_577_600, Number.MAX_SAFE_INTEGER, null],
  json: ['{"a":"b\\"c","d":[1,2]}', null],
};

for (const { name, create } of TEST_STORES) {
  describe(`a batch's columns as array literals on ${name} (arrayElement, issue #30)`, () => {
    it("come back from unnest as the values given: text, bytes, booleans, integers, JSON and NULL", async () => {
      const testDb = await create();
      try {
        for (const [type, values] of Object.entries(COLUMN_VALUES)) {
          const literal = `{${values.map(arrayElement).join(",")}}`;
          const { rows } = await testDb.db.query<{ v: unknown }>(
            `SELECT v::text AS v FROM unnest($1::${type}[]) WITH ORDINALITY AS u (v, n) ORDER BY n`,
            [literal],
          );
          const expected = values.map((v) =>
            v === null
              ? null
              : v instanceof Uint8Array
                ? `\\x${Buffer.from(v).toString("hex")}`
                : typeof v === "boolean"
                  ? v
                    ? "true"
                    : "false"
                  : String(v),
          );
          expect({ type, back: rows.map((r) => r.v) }).to.deep.equal({ type, back: expected });
        }
      } finally {
        await testDb.drop();
      }
    });

    it("refuse a value no column holds, naming it", () => {
      expect(() => arrayElement(Number.NaN)).to.throw(/holds NaN/);
      expect(() => arrayElement({})).to.throw(/holds a object/);
    });
  });
}

/** The plan's nodes, depth first, from EXPLAIN (FORMAT JSON). */
function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}
type PlanNode = { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; Plans?: PlanNode[] };

for (const { name, create } of TEST_STORES) {
  describe(`the daily recompute's read of day aggregates on ${name} (migration 025, issue #30)`, () => {
    it("takes every column it reads from agent_days' key (an index-only scan), with the days written a day at a time", async () => {
      const testDb = await createMigratedTestDb(create);
      try {
        const { db } = testDb;
        await db.query("INSERT INTO owners (id, token_hash, created_at) VALUES ('own_plan', 'h', 0)");
        await db.query(`INSERT INTO agents (id, owner_id, claim_id, claimed_at, key_hash, created_at)
                        SELECT 'agt_plan' || i, 'own_plan', i, 0, 'h', 0 FROM generate_series(1, 200) i`);
        // As check-ins write them: each day's rows after the day before's, so an agent's days lie apart in the table.
        await db.query(`INSERT INTO agent_days (agent_id, claim_id, day, checkins, on_time, credit_s, coverage_s, digest)
                        SELECT 'agt_plan' || i, i, to_char(date '2026-11-02' - d, 'YYYY-MM-DD'), 24, 24, 86400, 86400, md5(i || '/' || d)
                        FROM generate_series(1, 40) d, generate_series(1, 200) i ORDER BY d DESC, i`);
        await db.query("VACUUM ANALYZE agent_days, agents");
        const at = Date.UTC(2026, 10, 2) / 1000;
        const { rows } = await db.transaction(async (tx) => {
          // Only index paths left to choose from, so that the tiny table's plan is the one a large table gets.
          await tx.query("SET LOCAL enable_seqscan = off");
          await tx.query("SET LOCAL enable_bitmapscan = off");
          return tx.query<{ "QUERY PLAN": unknown }>(`EXPLAIN (FORMAT JSON) ${DAILY_AGENT_ROWS_SQL}`, [
            ["agt_plan1", "agt_plan2"],
            at,
            "2026-11-02",
            windowDays(at)[0],
          ]);
        });
        const explained = rows[0]["QUERY PLAN"];
        const [top] = (typeof explained === "string" ? JSON.parse(explained) : explained) as Array<{ Plan: PlanNode }>;
        const reads = planNodes(top.Plan).filter((n) => n["Relation Name"] === "agent_days");
        expect(reads.map((n) => [n["Node Type"], n["Index Name"]])).to.deep.equal([["Index Only Scan", "agent_days_pkey"]]);
      } finally {
        await testDb.drop();
      }
    });
  });
}
