import type { Logger } from "pino";
import { parseServeConfig, type ServeConfig } from "../../app/config";
import { startService } from "../../app/run";
import { InvalidInputError } from "../../errors";
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
  async run(args, io) {
    if (args.length > 0) throw new InvalidInputError("usage", `serve takes no arguments, got ${args.join(" ")}`);
    const config = parseServeConfig(process.env);
    return serveUntilSignal(io, config, { holder: "vrai serve", logger: createLogger(config.LOG_LEVEL, logFormat("serve", process.stdout.isTTY === true)) });
  },
};

/** Runs the service of `config` until SIGINT/SIGTERM, then stops it cleanly; returns the exit code. */
export async function serveUntilSignal(
  io: CliIo, config: ServeConfig, more: { readyNote?: string; afterStop?: () => Promise<void>; logger?: Logger; holder?: string } = {},
): Promise<number> {
  const service = await startService(config, { logger: more.logger, holder: more.holder });
  const { url } = service.server;
  const indexed = !more.readyNote && config.RPC_URL && config.DEPLOYMENT ? ` · chain ${config.RPC_URL} (indexed from ${config.DEPLOYMENT})` : "";
  io.stdout(`vrai ready: api ${url}/v1 · agent pages ${url}/agents/{id}${more.readyNote ? ` · ${more.readyNote}` : ""}${indexed} · store ${config.DATABASE_URL ? "postgresql" : `pglite ${config.DATA_DIR}`}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await service.stop();
  await more.afterStop?.();
  io.stdout("vrai stopped\n");
  return 0;
}
