import type { Command } from "../io";

/**
 * Every `vrai` subcommand, loaded on first use so one command does not pay for the others.
 * Adding a command is one line here and a module exporting `command`.
 */
export const COMMANDS: Readonly<Record<string, () => Command>> = {
  derive: () => require("./derive").command,
  score: () => require("./score").command,
  replay: () => require("./replay").command,
  recompute: () => require("./recompute").command,
  serve: () => require("./serve").command,
  dev: () => require("./dev").command,
  "dev-clock": () => require("./dev-clock").command,
  "dev-identity": () => require("./dev-identity").command,
  indexer: () => require("./indexer").command,
  verify: () => require("./verify").command,
  operator: () => require("./operator").command,
};
