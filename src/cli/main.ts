import { BaseError, InvalidInputError } from "../errors";
import { COMMANDS } from "./commands";
import { processIo, type CliIo } from "./io";

/** Exit codes of `vrai` (part F): 0 done, 1 unexpected internal error, 2 bad input. */
export const EXIT = { ok: 0, internal: 1, badInput: 2 } as const;

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").trim();
}

function usage(): string {
  const lines = Object.values(COMMANDS).map((load) => `  vrai ${load().summary}`);
  return `usage: vrai <command> [file]   (reads standard input without a file)\n${lines.join("\n")}\n`;
}

/**
 * Runs `vrai` with `argv` (without `node` and the script) and returns the exit code. Bad input
 * gives exit 2 and exactly one line on standard error, `vrai <command>: <what is wrong>`.
 * @example await runCli(["derive", "records.json"], processIo())
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === "help" || name === "--help" || name === "-h") {
    io.stdout(usage());
    return EXIT.ok;
  }
  const load = name === undefined ? undefined : Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (load === undefined) {
    io.stderr(`vrai: ${name === undefined ? "missing command" : `unknown command ${JSON.stringify(name)}`} (try: vrai help)\n`);
    return EXIT.badInput;
  }
  try {
    return await load().run(args, io);
  } catch (error) {
    if (error instanceof InvalidInputError) {
      io.stderr(`vrai ${name}: ${oneLine(error.message)}\n`);
      return EXIT.badInput;
    }
    const message = error instanceof Error ? error.message : String(error);
    const code = error instanceof BaseError ? ` [${error.code}]` : "";
    io.stderr(`vrai ${name}: internal error${code}: ${oneLine(message)}\n`);
    return EXIT.internal;
  }
}

/** Entry point of `bin/vrai.js`: runs with the process's streams and sets the exit code. */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  process.exitCode = await runCli(argv, processIo());
}
