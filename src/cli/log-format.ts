/**
 * How `vrai dev` and `vrai serve` log: `vrai dev`, which a person reads, in readable lines, one per entry, its fields
 * in words after the message (`daily recompute done (day 2026-11-03, stored 1, ms 12)`), at a terminal or through a
 * pipe alike (issue #31: no JSON between them); `vrai serve`, whose logs machines read, in JSON lines.
 */
import pino, { type Logger } from "pino";
import pinoPretty from "pino-pretty";

export type LogFormat = "pretty" | "json";

/** The format of `command`'s log: readable for `vrai dev`, JSON for `vrai serve` (`isTTY` only colours dev's lines). */
export function logFormat(command: "dev" | "serve", _isTTY: boolean): LogFormat {
  return command === "dev" ? "pretty" : "json";
}

/** Fields pino adds to every entry, not worth a word on a line a person reads. */
const NOT_SHOWN = new Set(["level", "time", "pid", "hostname", "msg"]);

/** A field's value in words: text as it is, a list by commas (`none` when empty), an error by its message, an object by its fields. */
function shown(value: unknown): string {
  if (value === null || value === undefined) return "none";
  if (typeof value === "string") return value.replace(/\s*[\r\n]+\s*/g, " ");
  if (typeof value !== "object") return String(value);
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.map(shown).join(", ");
  const record = value as Record<string, unknown>;
  if (typeof record.message === "string" && (typeof record.stack === "string" || typeof record.type === "string"))
    return shown(record.message);
  return Object.entries(record)
    .map(([key, v]) => `${key} ${shown(v)}`)
    .join(", ");
}

/**
 * One entry as a line: its message, then its fields in words in parentheses.
 * @example readableMessage({ msg: "daily recompute done", day: "2026-11-03", stored: 1 }) // "daily recompute done (day 2026-11-03, stored 1)"
 */
export function readableMessage(entry: Record<string, unknown>): string {
  const fields = Object.entries(entry)
    .filter(([key]) => !NOT_SHOWN.has(key))
    .map(([key, value]) => `${key} ${shown(value)}`);
  const message = typeof entry.msg === "string" ? entry.msg : "";
  return fields.length === 0 ? message : `${message} (${fields.join(", ")})`;
}

/**
 * The service's logger at `level` in `format`, written to `destination` (standard output by default).
 * Readable lines are formatted on the calling thread (no worker transport), in colour only on a terminal.
 * @example const logger = createLogger("info", logFormat("dev", process.stdout.isTTY === true));
 */
export function createLogger(level: string, format: LogFormat, destination: NodeJS.WritableStream = process.stdout): Logger {
  if (format === "json") return destination === process.stdout ? pino({ level }) : pino({ level }, destination);
  const colorize = destination === process.stdout && process.stdout.isTTY === true;
  return pino(
    { level },
    pinoPretty({
      // The fields are in the message's line (hideObject: no block of them below it).
      destination,
      colorize,
      sync: true,
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname",
      hideObject: true,
      messageFormat: (entry) => readableMessage(entry),
    }),
  );
}
