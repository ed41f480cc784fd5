import { BaseError, InvalidInputError } from "../errors";
export { mapStackTracesOf } from "../app/stack-traces";
import { COMMANDS } from "./commands";
import { processIo, type CliIo, type Command } from "./io";

/** Exit codes of `vrai` (part F): 0 done, 1 unexpected internal error, 2 bad input. */
export const EXIT = { ok: 0, internal: 1, badInput: 2 } as const;

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").trim();
}

function usage(): string {
  const lines = Object.values(COMMANDS).map((load) => `  vrai ${load().usage}\n      ${load().summary}`);
  return `usage: vrai <command> ...   (vrai <command> --help tells more of one)\n${lines.join("\n")}\n`;
}

/** What `vrai <command> --help` prints. */
function commandHelp(command: Command): string {
  return `usage: vrai ${command.usage}\n\n${command.summary}\n${command.help ? `\n${command.help.trimEnd()}\n` : ""}`;
}

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
function asksHelp(args: readonly string[]): boolean {
  const own = args.includes("--") ? args.slice(0, args.indexOf("--")) : args;
  return own.includes("--help") || own.includes("-h");
}

const commandNamed = (name: string | undefined): (() => Command) | undefined =>
  name === undefined || !Object.hasOwn(COMMANDS, name) ? undefined : COMMANDS[name];

/**
 * Runs `vrai` with `argv` (without `node` and the script) and returns the exit code. Bad input
 * gives exit 2 and exactly one line on standard error, `vrai <command>: <what is wrong>`.
 * @example await runCli(["derive", "records.json"], processIo())
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === "help" || name === "--help" || name === "-h") {
    const asked = commandNamed(args[0]);
    if (args.length > 0 && asked === undefined) {
      io.stderr(`vrai: unknown command ${JSON.stringify(args[0])} (try: vrai help)\n`);
      return EXIT.badInput;
    }
    io.stdout(asked === undefined ? usage() : commandHelp(asked()));
    return EXIT.ok;
  }
  const load = commandNamed(name);
  if (load === undefined) {
    io.stderr(`vrai: ${name === undefined ? "missing command" : `unknown command ${JSON.stringify(name)}`} (try: vrai help)\n`);
    return EXIT.badInput;
  }
  // Help is answered before the command runs: `vrai dev --help` starts nothing.
  if (asksHelp(args)) {
    io.stdout(commandHelp(load()));
    return EXIT.ok;
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
