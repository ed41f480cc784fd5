#!/usr/bin/env node
// The `vrai-verify` command of @vrai/sdk (its package.json `bin`): runVerifyCli with the process's environment and
// streams. Bad arguments print one line and exit 2; a verification exits 0 when every check holds, 1 otherwise.
import { InvalidInputError } from "../errors";
import { runVerifyCli } from "./verify-cli";

const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, " ").trim();

runVerifyCli(process.argv.slice(2), { env: process.env, stdout: (text) => void process.stdout.write(text), name: "vrai-verify" }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const bad = error instanceof InvalidInputError;
    process.stderr.write(
      `vrai-verify: ${bad ? "" : "internal error: "}${oneLine(error instanceof Error ? error.message : String(error))}\n`,
    );
    process.exitCode = bad ? 2 : 1;
  },
);
