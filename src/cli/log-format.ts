/**
 * How `vrai dev` and `vrai serve` log: readable lines (pino-pretty) for a person at a terminal running `vrai dev`,
 * JSON lines otherwise (a pipe, a file, a log collector) and always for `vrai serve`, whose logs machines read.
 */
import pino, { type Logger } from "pino";
import pinoPretty from "pino-pretty";

export type LogFormat = "pretty" | "json";

/** The format of `command`'s log when its standard output `isTTY` (or not). */
export function logFormat(command: "dev" | "serve", isTTY: boolean): LogFormat {
  return command === "dev" && isTTY ? "pretty" : "json";
}

/**
 * The service's logger at `level` in `format`, written to `destination` (standard output by default).
 * Pretty lines are formatted on the calling thread (no worker transport), in colour only on a terminal.
 * @example const logger = createLogger("info", logFormat("dev", process.stdout.isTTY === true));
 */
export function createLogger(level: string, format: LogFormat, destination: NodeJS.WritableStream = process.stdout): Logger {
  if (format === "json") return destination === process.stdout ? pino({ level }) : pino({ level }, destination);
  const colorize = destination === process.stdout && process.stdout.isTTY === true;
  return pino({ level }, pinoPretty({ destination, colorize, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" }));
}
