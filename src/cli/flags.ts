import { InvalidInputError } from "../errors";

/**
 * Parses a command's arguments: `--name value` for `valued` names, bare `--name` for `bare` ones,
 * anything else not starting with `--` as positional. An unknown flag or a missing value is bad
 * input (exit 2) whose one line shows `usage`.
 */
export function parseFlags(
  args: readonly string[],
  options: { valued: readonly string[]; bare?: readonly string[]; usage: string },
): { flags: Record<string, string | true>; positional: string[] } {
  const flags: Record<string, string | true> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (!args[i].startsWith("--")) {
      positional.push(args[i]);
      continue;
    }
    const name = args[i].slice(2);
    if (options.bare?.includes(name)) {
      flags[name] = true;
    } else if (options.valued.includes(name)) {
      const value = args[++i];
      if (value === undefined) throw new InvalidInputError("usage", `--${name} needs a value`);
      flags[name] = value;
    } else {
      throw new InvalidInputError("usage", `unknown argument ${args[i]} (usage: vrai ${options.usage})`);
    }
  }
  return { flags, positional };
}
