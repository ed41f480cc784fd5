/**
 * The verifier's command, `vrai-verify` in @vrai/sdk and `vrai verify` in this repository: one daily Vrai score checked
 * with `verifyScore` (V9, A6), one line per check, exit 0 only when every check holds. It needs nothing but the package:
 * it works outside a checkout of Vrai.
 */
import { parseArgs } from "node:util";
import { DeploymentFileError, readDeployment } from "../chain/deployment";
import { shortMessageOf } from "../chain/short-message";
import { InvalidInputError } from "../errors";
import type { ApiJson } from "./api";
import { verifyScore, type VerifyScoreOptions } from "./verify";

/** Its arguments after the command's name. */
export const VERIFY_USAGE = "<agent> [--day YYYY-MM-DD] [--api URL] [--rpc URL] [--contract ADDRESS | --deployment FILE]";
/** What `--help` prints after the usage line. */
export const VERIFY_HELP = [
  "Checks one daily Vrai score as an outside verifier: the inputs as the API serves them, the score recomputed from them,",
  "their SHA-256, the Merkle proof to the day's root, and the root's anchor on the AnchorRegistry. Steps: lookup, inputs,",
  "score, digest, merkle, anchor. Exit 0 only when every check holds, 1 otherwise, 2 on bad arguments.",
  "--day: the day of the daily score (default: the agent's latest); --api: the Vrai API (VRAI_API_URL, else http://127.0.0.1:8080);",
  "--rpc: the chain's JSON-RPC (RPC_URL, else http://127.0.0.1:8545); --contract or --deployment: the AnchorRegistry expected",
  "(default: the one the API names).",
].join("\n");

const DEFAULT_API = "http://127.0.0.1:8080";
const DEFAULT_RPC = "http://127.0.0.1:8545";

/** What the command touches. */
export type VerifyCliDeps = {
  env: Readonly<Record<string, string | undefined>>;
  stdout(text: string): void;
  /** How it is called, for its usage line: `vrai-verify` or `vrai verify`. */
  name: string;
  fetch?: typeof fetch;
};

/** Reads the arguments (bad input: InvalidInputError, exit 2); `verifyScore` checks their values. */
function parseOptions(argv: readonly string[], deps: VerifyCliDeps): VerifyScoreOptions {
  const usage = `${deps.name} ${VERIFY_USAGE}`;
  let parsed: { values: Record<string, string | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: {
        day: { type: "string" },
        api: { type: "string" },
        rpc: { type: "string" },
        contract: { type: "string" },
        deployment: { type: "string" },
      },
    });
  } catch (error) {
    throw new InvalidInputError("usage", `${shortMessageOf(error)} (usage: ${usage})`, { cause: error });
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new InvalidInputError("usage", `expected one agent id, got ${positionals.length} (usage: ${usage})`);
  if (values.contract !== undefined && values.deployment !== undefined)
    throw new InvalidInputError("usage", "give --contract or --deployment, not both");
  let contract = values.contract;
  if (values.deployment !== undefined) {
    try {
      contract = readDeployment(values.deployment).contracts.AnchorRegistry.address;
    } catch (error) {
      if (error instanceof DeploymentFileError) throw new InvalidInputError("usage", `--deployment: ${error.message}`, { cause: error });
      throw error;
    }
  }
  return {
    agentId: positionals[0],
    day: values.day,
    api: values.api ?? deps.env.VRAI_API_URL ?? DEFAULT_API,
    rpcUrl: values.rpc ?? deps.env.RPC_URL ?? DEFAULT_RPC,
    contract,
    fetch: deps.fetch,
  };
}

/** On `vrai dev` (its API has a development clock, issue #31): how to reach its next daily score now. */
async function devClockHint(api: string, doFetch: typeof fetch): Promise<string | undefined> {
  const res = await doFetch(`${api.replace(/\/+$/, "")}/v1/dev/clock`).catch(() => undefined);
  if (res?.status !== 200) return undefined;
  const clock: ApiJson<"getDevClock", 200> | undefined = await res.json().catch(() => undefined);
  if (clock === undefined) return undefined;
  return (
    `  this is vrai dev (its clock: ${clock.now}; next daily recompute at ${clock.nextDailyAt}): ` +
    "vrai dev-clock advance --days 1 moves it past that 00:00 UTC, the daily recompute and anchoring with it"
  );
}

/**
 * Runs the verifier's command with `argv` (after its name): the checks one line each (`✔` or `✘`), then `verified` or
 * how many failed.
 * @returns 0 when every check held, 1 otherwise
 * @throws InvalidInputError for bad arguments (the bin prints one line and exits 2)
 * @example
 * process.exitCode = await runVerifyCli([agentId, "--api", api, "--rpc", rpcUrl], {
 *   env: process.env,
 *   stdout: (text) => process.stdout.write(text),
 *   name: "vrai-verify",
 * });
 */
export async function runVerifyCli(argv: readonly string[], deps: VerifyCliDeps): Promise<number> {
  if (argv[0] === "--help" || argv[0] === "-h") {
    deps.stdout(`usage: ${deps.name} ${VERIFY_USAGE}\n\n${VERIFY_HELP}\n`);
    return 0;
  }
  const options = parseOptions(argv, deps);
  const result = await verifyScore(options);
  if (result.score)
    deps.stdout(
      `verifying the daily Vrai score ${result.score.id} of agent ${result.score.agentId} on ${result.score.day} (${result.score.api})\n`,
    );
  for (const check of result.checks) deps.stdout(`${check.ok ? "✔" : "✘"} ${check.message}\n`);
  if (result.checks.some((c) => c.step === "lookup" && !c.ok)) {
    const hint = await devClockHint(options.api, deps.fetch ?? fetch);
    if (hint) deps.stdout(`${hint}\n`);
  }
  const failures = result.checks.filter((c) => !c.ok).length;
  deps.stdout(result.verified ? "verified\n" : `not verified: ${failures} check${failures === 1 ? "" : "s"} failed\n`);
  return result.verified ? 0 : 1;
}
