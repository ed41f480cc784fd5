import { runVerifyCli, VERIFY_HELP, VERIFY_USAGE } from "../../sdk/verify-cli";
import type { Command } from "../io";

/**
 * `vrai verify`: checks one daily Vrai score as an outside verifier would, with nothing but the public API
 * and a chain RPC: the SDK's `vrai-verify` (src/sdk/verify-cli.ts), which @vrai/sdk installs for use outside this
 * repository. One line per check (`✔` or `✘` naming what failed); exit 0 only when every check holds, 1 otherwise,
 * 2 on bad arguments.
 */
export const command: Command = {
  name: "verify",
  usage: `verify ${VERIFY_USAGE}`,
  summary: "check a daily score: inputs, recomputed result, digest, Merkle proof, on-chain anchor",
  help: VERIFY_HELP,
  run: (args, io) => runVerifyCli(args, { env: process.env, stdout: (text) => io.stdout(text), name: "vrai verify" }),
};
