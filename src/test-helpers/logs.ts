import { Writable } from "node:stream";
import pino, { type Level, type Logger } from "pino";

/** One line a logger wrote, parsed (pino writes JSON, one object per line). */
export type LogEntry = Record<string, any>;

/**
 * A pino logger whose output a test reads: `text()` all of it as written since the start or the last `clear()`,
 * `entries()` the same lines parsed, or only those whose message is `msg`. pino writes synchronously, so a line is
 * there once the call that logs it returns.
 */
export type CapturedLogger = { logger: Logger; text(): string; entries(msg?: string): LogEntry[]; clear(): void };

/** A logger at `level` that writes into memory, for a test to read what was logged (and that no secret was). */
export function capturedLogger(level: Level = "info"): CapturedLogger {
  let text = "";
  const logger = pino(
    { level },
    new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    }),
  );
  return {
    logger,
    text: () => text,
    clear: () => {
      text = "";
    },
    entries: (msg) =>
      text
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as LogEntry)
        .filter((entry) => msg === undefined || entry.msg === msg),
  };
}
