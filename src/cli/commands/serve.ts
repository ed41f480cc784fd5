import type { Logger } from "pino";
import { parseServeConfig, type ServeConfig } from "../../app/config";
import { startService } from "../../app/run";
import type { DevClockOptions } from "../../app/server";
import { InvalidInputError } from "../../errors";
import type { DataDirLock } from "../../store/data-dir";
import type { CliIo, Command } from "../io";
import { createLogger, logFormat } from "../log-format";

/**
 * `vrai serve`: the API, the schedulers and the store, configured from environment variables.
 * Stops cleanly on SIGINT/SIGTERM: no new connections, in-flight requests finish, the store closes.
 */
export const command: Command = {
  name: "serve",
  usage: "serve",
  summary: "run the Vrai service from environment variables (DATABASE_URL, PORT, OPERATOR_TOKEN, ...)",
  help:
    ".env.example lists every variable with its default; a missing or invalid one stops it with a message naming it (exit 2).\n" +
    "SIGINT or SIGTERM stops it cleanly. It logs JSON lines.",
  async run(args, io) {
    if (args.length > 0) throw new InvalidInputError("usage", `serve takes no arguments, got ${args.join(" ")}`);
    const stop = stopOnSignals();
    const config = parseServeConfig(process.env);
    return serveUntilSignal(io, config, {
      holder: "vrai serve",
      logger: createLogger(config.LOG_LEVEL, logFormat("serve", process.stdout.isTTY === true)),
      stop,
    });
  },
};

/** A stop asked for by a signal: `requested` resolves with the first one, `asked()` says whether it came. */
export type SignalStop = { requested: Promise<NodeJS.Signals>; asked(): boolean };

/**
 * The stop of a long-running command, asked by SIGINT or SIGTERM from the moment this is called (issue #31), so that
 * a signal during the start stops the command once it has started rather than killing it half-way. The first signal
 * asks; any later one is ignored while the stop runs: a terminal's Ctrl-C reaches `npm` and `vrai` alike, and npm
 * passes it on, so `vrai` gets two within milliseconds, and the second must not end the process before its stop.
 */
export function stopOnSignals(): SignalStop {
  let asked = false;
  const requested = new Promise<NodeJS.Signals>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      process.on(signal, () => {
        asked = true;
        resolve(signal);
      });
    }
  });
  return { requested, asked: () => asked };
}

/**
 * Runs the service of `config` until `more.stop` is asked for (default: SIGINT/SIGTERM from now on), then stops it
 * cleanly and says "vrai stopped"; returns the exit code.
 */
export async function serveUntilSignal(
  io: CliIo,
  config: ServeConfig,
  more: {
    readyNote?: string;
    afterStop?: () => Promise<void>;
    logger?: Logger;
    holder?: string;
    dataDirLock?: DataDirLock;
    stop?: SignalStop;
    devClock?: DevClockOptions;
  } = {},
): Promise<number> {
  const stop = more.stop ?? stopOnSignals();
  const service = await startService(config, {
    logger: more.logger,
    holder: more.holder,
    dataDirLock: more.dataDirLock,
    devClock: more.devClock,
  });
  const { url } = service.server;
  const indexed =
    !more.readyNote && config.RPC_URL && config.DEPLOYMENT ? ` · chain ${config.RPC_URL} (indexed from ${config.DEPLOYMENT})` : "";
  io.stdout(
    `vrai ready: api ${url}/v1 · agent pages ${url}/agents/{id} · console ${url}/console${more.readyNote ? ` · ${more.readyNote}` : ""}${indexed} · ` +
      `store ${config.DATABASE_URL ? "postgresql" : `pglite ${config.DATA_DIR}`}\n`,
  );
  await stop.requested;
  await service.stop();
  await more.afterStop?.();
  io.stdout("vrai stopped\n");
  return 0;
}
