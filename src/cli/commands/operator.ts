import { toRfc3339 } from "../../method";
import { BaseError, InvalidInputError } from "../../errors";
import { systemClock } from "../../service/clock";
import { createOperators, type Operators } from "../../service/operators";
import { openDb } from "../../store/db";
import { migrate } from "../../store/migrate";
import { createOperatorRepository } from "../../store/operators";
import { parseFlags } from "../flags";
import type { CliIo, Command } from "../io";

const USAGE = "operator add|revoke <name> [--database-url URL] [--data-dir DIR]";

/**
 * `vrai operator add <name>`: a named operator (V7), its token printed once on standard output (only
 * its hash is stored); `vrai operator revoke <name>`: its token refused from now on. Both work on the
 * store `vrai serve` uses (DATABASE_URL, or PGlite in DATA_DIR, which belongs to one process: run them
 * while the service is stopped) and are logged as `admin`. A running service on PostgreSQL sees them
 * at its next operator request.
 */
export const command: Command = {
  name: "operator",
  usage: USAGE,
  summary: "add a named operator (its token printed once) or revoke one (V7)",
  async run(args, io) {
    const { values, positionals } = parseFlags(args, { "database-url": { type: "string" }, "data-dir": { type: "string" } }, USAGE);
    const [action, name, ...extra] = positionals;
    if (action !== "add" && action !== "revoke") {
      throw new InvalidInputError(
        "usage",
        `${action === undefined ? "missing add or revoke" : `unknown action ${action}`} (usage: vrai ${USAGE})`,
      );
    }
    if (name === undefined) throw new InvalidInputError("usage", `missing the operator's name (usage: vrai ${USAGE})`);
    if (extra.length > 0) throw new InvalidInputError("usage", `unknown argument ${extra[0]} (usage: vrai ${USAGE})`);
    const db = await openDb({
      databaseUrl: values["database-url"] ?? process.env.DATABASE_URL,
      // An empty variable means unset, as in configuration (app/config.ts).
      dataDir: values["data-dir"] ?? (process.env.DATA_DIR || "./data"),
      holder: `vrai operator ${action}`,
      notice: (line) => io.stderr(`${line}\n`),
    });
    try {
      await migrate(db);
      const operators = createOperators({ operators: createOperatorRepository(db), clock: systemClock });
      await asBadInput(action === "add" ? add(operators, name, io) : revoke(operators, name, io));
      return 0;
    } finally {
      await db.close();
    }
  },
};

async function add(operators: Operators, name: string, io: CliIo): Promise<void> {
  const { token } = await operators.add(name);
  io.stdout(`${token}\n`);
  io.stderr(`operator ${name} added: its token is shown this once (only its hash is stored)\n`);
}

async function revoke(operators: Operators, name: string, io: CliIo): Promise<void> {
  const { revokedAt } = await operators.revoke(name);
  io.stdout(`operator ${name} revoked at ${toRfc3339(revokedAt)}\n`);
}

/** A refusal of the service (an invalid, reserved or taken name, an unknown one, one revoked twice) is bad input: exit 2. */
async function asBadInput(work: Promise<void>): Promise<void> {
  try {
    await work;
  } catch (error) {
    if (error instanceof BaseError && error.status >= 400 && error.status < 500 && !(error instanceof InvalidInputError)) {
      throw new InvalidInputError(error.code, error.message, { status: error.status, cause: error });
    }
    throw error;
  }
}
