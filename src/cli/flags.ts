import { parseArgs, type ParseArgsConfig } from "node:util";
import { InvalidInputError } from "../errors";

/** Options as `parseArgs` takes them: `{ day: { type: "string" }, verify: { type: "boolean" } }`. */
type Options = NonNullable<ParseArgsConfig["options"]>;

/** What `parseArgs` gives for the options `T`: `values` typed from them, and `positionals`. */
type Parsed<T extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: true }>>;

// Node names the offending option first, in quotes: "Unknown option '--x'. ...", "Option '--day <value>' argument missing".
const QUOTED_OPTION = /'(-[^'\s]*)/;

/**
 * Parses a command's arguments with `node:util` `parseArgs` (strict, positionals allowed): `--name value` or
 * `--name=value` for string options, bare `--name` for boolean ones. An unknown option or a missing value is bad
 * input (exit 2) whose one line shows `usage`.
 * @returns `values` typed from `options`, and the `positionals`
 * @throws InvalidInputError `usage`: `unknown argument --x (usage: vrai <usage>)`, `--day needs a value`
 * @example
 * const { values, positionals } = parseFlags(
 *   args,
 *   { day: { type: "string" }, verify: { type: "boolean" } },
 *   "recompute [--verify] [--day YYYY-MM-DD]",
 * );
 */
export function parseFlags<const T extends Options>(args: readonly string[], options: T, usage: string): Parsed<T> {
  try {
    return parseArgs({ args: [...args], options, strict: true, allowPositionals: true });
  } catch (error) {
    throw usageError(error, options, usage);
  }
}

/** The one-line usage error for what `parseArgs` threw; anything else as it was. */
function usageError(error: unknown, options: Options, usage: string): unknown {
  if (!(error instanceof TypeError) || !("code" in error)) return error;
  const option = QUOTED_OPTION.exec(error.message)?.[1];
  if (option === undefined) return error;
  if (error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION")
    return new InvalidInputError("usage", `unknown argument ${option} (usage: vrai ${usage})`, { cause: error });
  if (error.code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") return error;
  if (options[option.replace(/^-+/, "")]?.type === "boolean")
    return new InvalidInputError("usage", `${option} takes no value (usage: vrai ${usage})`, { cause: error });
  return new InvalidInputError("usage", `${option} needs a value`, { cause: error });
}
