#!/usr/bin/env node
// The `vrai-heartbeat` command of @vrai/sdk (its package.json `bin`): runHeartbeatCli with the process's
// environment and streams. SIGTERM and SIGINT stop it cleanly; bad arguments print one line and exit 2.
import { InvalidInputError } from "../errors";
import { runHeartbeatCli } from "./heartbeat-cli";

const controller = new AbortController();
for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => controller.abort(signal));
const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, " ").trim();

runHeartbeatCli(process.argv.slice(2), {
  env: process.env,
  log: (line) => void process.stderr.write(`${line}\n`),
  stop: controller.signal,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const bad = error instanceof InvalidInputError;
    process.stderr.write(
      `vrai-heartbeat: ${bad ? "" : "internal error: "}${oneLine(error instanceof Error ? error.message : String(error))}\n`,
    );
    process.exitCode = bad ? 2 : 1;
  },
);
