import pino from "pino";
import { parseIndexerConfig } from "../../app/config";
import { runIndexer } from "../../app/indexer";
import { InvalidInputError } from "../../errors";
import type { Command } from "../io";

/**
 * `vrai indexer`: the chain indexer alone on PostgreSQL, from environment variables (`DATABASE_URL`,
 * `RPC_URL`, `DEPLOYMENT`, `CONFIRMATIONS`, `POLL_INTERVAL_MS`, `INDEXER_MAX_RANGE`, `LOG_LEVEL`), until
 * SIGINT/SIGTERM. It stands by while another instance indexes the same chain.
 */
export const command: Command = {
  name: "indexer",
  usage: "indexer",
  summary: "run the chain indexer alone on PostgreSQL (DATABASE_URL, RPC_URL, DEPLOYMENT, ...), or stand by",
  async run(args) {
    if (args.length > 0) throw new InvalidInputError("usage", `indexer takes no arguments, got ${args.join(" ")}`);
    const config = parseIndexerConfig(process.env);
    return runIndexer(config, pino({ level: config.LOG_LEVEL }));
  },
};
