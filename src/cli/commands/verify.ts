import { DeploymentFileError, readDeployment } from "../../chain/deployment";
import { InvalidInputError } from "../../errors";
import { verifyScore, type VerifyScoreOptions } from "../../sdk/verify";
import { parseFlags } from "../flags";
import type { Command } from "../io";

const USAGE = "verify <agent> [--day YYYY-MM-DD] [--api URL] [--rpc URL] [--contract ADDRESS | --deployment FILE]";
const DEFAULT_API = "http://127.0.0.1:8080";
const DEFAULT_RPC = "http://127.0.0.1:8545";

/** Reads `vrai verify`'s arguments; `verifyScore` checks their values (bad input: exit 2). */
function parseOptions(args: readonly string[]): VerifyScoreOptions {
  const { values: flags, positionals } = parseFlags(
    args,
    { day: { type: "string" }, api: { type: "string" }, rpc: { type: "string" }, contract: { type: "string" }, deployment: { type: "string" } },
    USAGE,
  );
  if (positionals.length !== 1) throw new InvalidInputError("usage", `expected one agent id, got ${positionals.length} (usage: vrai ${USAGE})`);
  if (flags.contract !== undefined && flags.deployment !== undefined) throw new InvalidInputError("usage", "give --contract or --deployment, not both");
  let contract = flags.contract;
  if (flags.deployment !== undefined) {
    try {
      contract = readDeployment(flags.deployment).contracts.AnchorRegistry.address;
    } catch (error) {
      if (error instanceof DeploymentFileError) throw new InvalidInputError("usage", `--deployment: ${error.message}`, { cause: error });
      throw error;
    }
  }
  return { agentId: positionals[0], day: flags.day, api: flags.api ?? process.env.VRAI_API_URL ?? DEFAULT_API, rpcUrl: flags.rpc ?? process.env.RPC_URL ?? DEFAULT_RPC, contract };
}

/**
 * `vrai verify`: checks one daily Vrai score as an outside verifier would, with nothing but the public API
 * and a chain RPC (`verifyScore` of the SDK): fetch the inputs, recompute the score with the method engine (V9),
 * recompute their SHA-256, check the Merkle proof, and read the root's anchor on the AnchorRegistry. One line
 * per check (`✔` or `✘` naming what failed); exit 0 only when every check holds, 1 otherwise, 2 on bad arguments.
 */
export const command: Command = {
  name: "verify",
  usage: USAGE,
  summary: "check a daily score: inputs, recomputed result, digest, Merkle proof, on-chain anchor",
  async run(args, io) {
    const result = await verifyScore(parseOptions(args));
    if (result.score) io.stdout(`verifying the daily Vrai score ${result.score.id} of agent ${result.score.agentId} on ${result.score.day} (${result.score.api})\n`);
    for (const check of result.checks) io.stdout(`${check.ok ? "✔" : "✘"} ${check.message}\n`);
    const failures = result.checks.filter((c) => !c.ok).length;
    io.stdout(result.verified ? "verified\n" : `not verified: ${failures} check${failures === 1 ? "" : "s"} failed\n`);
    return result.verified ? 0 : 1;
  },
};
