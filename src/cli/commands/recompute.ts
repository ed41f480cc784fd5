import { createScoreWorkers } from "../../app/score-workers";
import { utcDay } from "../../method";
import { InvalidInputError } from "../../errors";
import { verifyStoredScores } from "../../service/audit-scores";
import { systemClock } from "../../service/clock";
import { createScoring } from "../../service/scoring";
import { openDb } from "../../store/db";
import { migrate } from "../../store/migrate";
import { createSqlStore } from "../../store/sql-store";
import { parseFlags } from "../flags";
import type { Command } from "../io";

const USAGE = "recompute [--verify] [--day YYYY-MM-DD] [--database-url URL] [--data-dir DIR]";

/**
 * `vrai recompute`: the daily recompute of a day (default today) on the configured store, or with
 * `--verify` every stored score recomputed from its stored inputs (V9); exit 1 on any mismatch.
 */
export const command: Command = {
  name: "recompute",
  usage: USAGE,
  summary: "recompute a day's scores, or --verify every stored score against its inputs (V9)",
  async run(args, io) {
    const { values, positionals } = parseFlags(
      args,
      { day: { type: "string" }, "database-url": { type: "string" }, "data-dir": { type: "string" }, verify: { type: "boolean" } },
      USAGE,
    );
    if (positionals.length > 0) throw new InvalidInputError("usage", `unknown argument ${positionals[0]} (usage: vrai ${USAGE})`);
    const day = values.day ?? utcDay(systemClock.now());
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new InvalidInputError("usage", `--day: expected YYYY-MM-DD, got ${day}`);
    const db = await openDb({
      databaseUrl: values["database-url"] ?? process.env.DATABASE_URL,
      dataDir: values["data-dir"] ?? (process.env.DATA_DIR || "./data"),
      holder: "vrai recompute",
      notice: (line) => io.stderr(`${line}\n`),
    });
    try {
      await migrate(db);
      const store = createSqlStore(db);
      if (values.verify) {
        const { checked, mismatches } = await verifyStoredScores(store, (n) => io.stderr(`verified ${n} scores\n`));
        for (const m of mismatches) io.stdout(`${JSON.stringify({ mismatch: m })}\n`);
        io.stdout(`${JSON.stringify({ checked, mismatches: mismatches.length })}\n`);
        return mismatches.length === 0 ? 0 : 1;
      }
      // Pages scored on a worker thread, as `vrai serve` does (src/app/score-workers.ts).
      const scoring = createScoring({ store, clock: systemClock, pageScorers: createScoreWorkers });
      const stored = await scoring.recomputeDay(day, (done) => {
        if (done % 1000 === 0) io.stderr(`recompute ${day}: ${done} agents\n`);
      });
      io.stdout(`${JSON.stringify({ day, stored })}\n`);
      return 0;
    } finally {
      await db.close();
    }
  },
};
