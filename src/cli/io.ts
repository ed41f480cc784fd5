import { readFile } from "node:fs/promises";
import { InvalidInputError } from "../errors";

/** What a command may touch, so tests run commands in-process with strings. */
export type CliIo = {
  /** Whole standard input as text. */
  readStdin(): Promise<string>;
  /** Whole file as UTF-8 text. */
  readFile(path: string): Promise<string>;
  /** Text, or UTF-8 bytes (a command writing much output, `replay`). */
  stdout(text: string | Uint8Array): void;
  stderr(text: string): void;
};

/** A subcommand of `vrai`: returns its exit code, throws InvalidInputError for bad input (exit 2). */
export type Command = {
  name: string;
  /** How it is called, after `vrai ` (`verify <agent> [--day YYYY-MM-DD] ...`). */
  usage: string;
  /** What it does, one line for `vrai help` and `vrai <command> --help`. */
  summary: string;
  /** More for `vrai <command> --help`: its options, the variables it reads, what it prints. */
  help?: string;
  run(args: readonly string[], io: CliIo): Promise<number>;
};

/** The process's own standard streams and file system. */
export function processIo(): CliIo {
  return {
    async readStdin() {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
      return Buffer.concat(chunks).toString("utf8");
    },
    readFile: (path) => readFile(path, "utf8"),
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
  };
}

/** In-memory streams for tests: `stdin` text and an optional file table; collects what is written. */
export function memoryIo(stdin = "", files: Record<string, string> = {}): CliIo & { out: string; err: string } {
  const io = {
    out: "",
    err: "",
    readStdin: async () => stdin,
    readFile: async (path: string) => {
      if (!(path in files)) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: "ENOENT" });
      return files[path];
    },
    stdout: (text: string | Uint8Array) => {
      io.out += typeof text === "string" ? text : Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("utf8");
    },
    stderr: (text: string) => {
      io.err += text;
    },
  };
  return io;
}

/**
 * F: reads the JSON input of a command from its one file argument, or standard input when there is
 * none (or it is `-`).
 * @param args the command's positional arguments (`parseFlags(...).positionals`)
 * @throws InvalidInputError `usage` (extra arguments), `unreadable_input`, `malformed_json`
 */
export async function readJsonInput(args: readonly string[], io: CliIo): Promise<unknown> {
  if (args.length > 1) throw new InvalidInputError("usage", `expected at most one file argument, got ${args.length}`);
  const file = args[0];
  let text: string;
  if (file === undefined || file === "-") {
    text = await io.readStdin();
  } else {
    try {
      text = await io.readFile(file);
    } catch (cause) {
      throw new InvalidInputError("unreadable_input", `cannot read ${file}: ${(cause as Error).message}`, { cause });
    }
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new InvalidInputError("malformed_json", `malformed JSON: ${(cause as Error).message}`, { cause });
  }
}

/** Writes one JSON document on one line. */
export function writeJson(io: CliIo, value: unknown): void {
  io.stdout(`${JSON.stringify(value)}\n`);
}
