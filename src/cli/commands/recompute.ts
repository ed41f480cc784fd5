import { utcDay } from "../../method";
import { InvalidInputError } from "../../errors";
import { verifyStoredScores } from "../../service/audit-scores";
import { systemClock } from "../../service/clock";
import { createScoring } from "../../service/scoring";
import { openDb } from "../../store/db";
import { migrate } from "../../store/migrate";
import { createSqlStore } from "../../store/sql-store";
import type { Command } from "../io";

const USAGE = "recompute [--verify] [--day YYYY-MM-DD] [--database-url URL] [--data-dir DIR]";

/** Parses `--flag value` pairs and bare `--flags`; unknown ones are bad input. */
export function parseFlags(args: readonly string[], valued: readonly string[], bare: readonly string[]): Record<string, string | true> {
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < args.length; i++) {
    const name = args[i].replace(/^--/, "");
    if (!args[i].startsWith("--") || (!valued.includes(name) && !bare.includes(name))) throw new InvalidInputError("usage", `unknown argument ${args[i]} (usage: vrai ${USAGE})`);
    if (bare.includes(name)) flags[name] = true;
    else {
      const value = args[++i];
      if (value === undefined) throw new InvalidInputError("usage", `--${name} needs a value`);
      flags[name] = value;
    }
  }
  return flags;
}

/**
 * `vrai recompute`: the daily recompute of a day (default today) on the configured store, or with
 * `--verify` every stored score recomputed from its stored inputs (V9); exit 1 on any mismatch.
 */
export const command: Command = {
  name: "recompute",
  summary: `${USAGE}   recompute a day's scores, or --verify every stored score against its inputs (V9)`,
  async run(args, io) {
    const flags = parseFlags(args, ["day", "database-url", "data-dir"], ["verify"]);
    const day = typeof flags.day === "string" ? flags.day : utcDay(systemClock.now());
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new InvalidInputError("usage", `--day: expected YYYY-MM-DD, got ${day}`);
    const db = await openDb({
      databaseUrl: (flags["database-url"] as string | undefined) ?? process.env.DATABASE_URL,
      dataDir: (flags["data-dir"] as string | undefined) ?? process.env.DATA_DIR ?? "./data",
    });
    try {
      await migrate(db);
      const store = createSqlStore(db);
      if (flags.verify) {
        const { checked, mismatches } = await verifyStoredScores(store, (n) => io.stderr(`verified ${n} scores\n`));
        for (const m of mismatches) io.stdout(`${JSON.stringify({ mismatch: m })}\n`);
        io.stdout(`${JSON.stringify({ checked, mismatches: mismatches.length })}\n`);
        return mismatches.length === 0 ? 0 : 1;
      }
      const scoring = createScoring({ store, clock: systemClock });
      const stored = await scoring.recomputeDay(day, (done, total) => {
        if (done % 1000 === 0 || done === total) io.stderr(`recompute ${day}: ${done}/${total} agents\n`);
      });
      io.stdout(`${JSON.stringify({ day, stored })}\n`);
      return 0;
    } finally {
      await db.close();
    }
  },
};
