/**
 * `vrai-heartbeat`: the heartbeat of an agent written in any language (as runitor is for Healthchecks.io).
 * It checks in on the schedule the service gives (V3.3 `next_heartbeat_s`) through `createVraiAgent`: a fresh
 * Idempotency-Key per check-in and the same one for its retries (V3.1), backoff with full jitter on network
 * errors and 5xx, the service's `Retry-After` on 429, never sooner than 1,200 s after the last counted
 * check-in (V3.2). With `-- command args` it runs the command and checks in while it runs.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import { shortMessageOf } from "../chain/short-message";
import { InvalidInputError } from "../errors";
import type { Sleep } from "../retry";
import {
  createVraiAgent,
  DEFAULT_MAX_ATTEMPTS,
  MIN_CHECKIN_INTERVAL_S,
  type CheckInResult,
  type CheckInWait,
  type VraiAgentError,
} from "./agent";

const USAGE = "vrai-heartbeat --api URL --agent ID [--key-file FILE] [-- command args...]   (the key: --key-file FILE or VRAI_AGENT_KEY)";
/** The environment variable the agent key may come from. */
export const AGENT_KEY_ENV = "VRAI_AGENT_KEY";

/** What the command touches, so tests run it in-process on a simulated schedule. */
export type HeartbeatCliDeps = {
  env: Readonly<Record<string, string | undefined>>;
  /** One log line (without its newline). */
  log(line: string): void;
  /** Aborts on SIGTERM/SIGINT: the heartbeat stops; a wrapped command is sent the same signal. */
  stop: AbortSignal;
  fetch?: typeof fetch;
  sleep?: Sleep;
  random?: () => number;
  now?: () => number;
  /** Wait after a check-in that failed for good before the next one. Default 60,000 ms. */
  errorDelayMs?: number;
};

type Options = { api: string; agentId: string; agentKey: string; command: string[]; warnings: string[] };

/** Permission bits that let users other than the file's owner read it (group, others). */
const READABLE_BY_OTHERS = 0o044;

/** Reads the arguments and the key; anything wrong is an InvalidInputError (exit 2). */
function parseOptions(argv: readonly string[], env: HeartbeatCliDeps["env"]): Options {
  const split = argv.indexOf("--");
  const own = split < 0 ? [...argv] : argv.slice(0, split);
  const command = split < 0 ? [] : argv.slice(split + 1);
  if (own.some((arg) => arg === "--key" || arg.startsWith("--key="))) {
    throw new InvalidInputError(
      "usage",
      `refusing --key: a key on the command line is visible to every user of the machine; give --key-file FILE or ${AGENT_KEY_ENV}`,
    );
  }
  let values: { api?: string; agent?: string; "key-file"?: string };
  try {
    ({ values } = parseArgs({
      args: own,
      options: { api: { type: "string" }, agent: { type: "string" }, "key-file": { type: "string" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new InvalidInputError("usage", `${shortMessageOf(error)} (usage: ${USAGE})`, { cause: error });
  }
  if (values.api === undefined || !/^https?:\/\/[^\s]+$/.test(values.api))
    throw new InvalidInputError("usage", `--api: expected an http(s) URL, got ${values.api ?? "nothing"} (usage: ${USAGE})`);
  if (values.agent === undefined || !/^[A-Za-z0-9_-]{1,64}$/.test(values.agent))
    throw new InvalidInputError("usage", `--agent: expected an agent id, got ${values.agent ?? "nothing"} (usage: ${USAGE})`);
  if (split >= 0 && command.length === 0) throw new InvalidInputError("usage", "nothing to run after --");
  let agentKey: string;
  const warnings: string[] = [];
  const keyFile = values["key-file"];
  if (keyFile !== undefined) {
    let mode: number;
    try {
      agentKey = fs.readFileSync(keyFile, "utf8").trim();
      mode = fs.statSync(keyFile).mode & 0o777;
    } catch (error) {
      throw new InvalidInputError(
        "usage",
        `--key-file: cannot read ${keyFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        { cause: error },
      );
    }
    if (agentKey === "") throw new InvalidInputError("usage", `--key-file: ${keyFile} is empty`);
    if ((mode & READABLE_BY_OTHERS) !== 0) {
      warnings.push(
        `warning: other users can read the agent key in ${keyFile} (mode ${mode.toString(8).padStart(4, "0")}): chmod 600 ${keyFile}`,
      );
    }
  } else {
    agentKey = env[AGENT_KEY_ENV]?.trim() ?? "";
    if (agentKey === "") throw new InvalidInputError("usage", `no agent key: give --key-file FILE or set ${AGENT_KEY_ENV}`);
  }
  if (/\s/.test(agentKey)) throw new InvalidInputError("usage", "the agent key has a space or a line break in it: give the key alone");
  return { api: values.api, agentId: values.agent, agentKey, command, warnings };
}

const checkedInLine = (r: CheckInResult, nextInMs: number) =>
  `checked in: agent ${r.agentId} at ${r.arrival}${r.on_time === null ? "" : r.on_time ? ", on time" : ", late"}, ` +
  `credit ${r.credit} s${r.replayed ? " (replayed)" : ""}; next in ${nextInMs / 1000} s`;

/** The line of a wait inside a check-in: the SDK tells each one before it starts (issue #31: nothing waits silently). */
function waitLine(wait: CheckInWait, api: string, maxAttempts: number): string {
  const seconds = `${wait.ms / 1000} s`;
  switch (wait.reason) {
    case "spacing":
      return `waiting ${seconds}: the previous check-in was counted under ${MIN_CHECKIN_INTERVAL_S} s ago (V3.2)`;
    case "rate_limited":
      return `${wait.error?.message ?? "check-in refused (429)"}; waiting ${seconds} as the service asks (Retry-After)`;
    case "retry": {
      const attempt = `attempt ${wait.attempt} of ${maxAttempts}`;
      if (wait.error?.code !== "network_error") return `${wait.error?.message ?? "check-in failed"}; retrying in ${seconds} (${attempt})`;
      return `cannot reach the service at ${api} (${networkCause(wait.error)}); retrying in ${seconds} (${attempt})`;
    }
  }
}

/** What a failed request says of why: the system's code (ECONNREFUSED, ENOTFOUND) when it gives one. */
function networkCause(error: VraiAgentError): string {
  let cause: unknown = error.cause;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return code;
    cause = cause.cause;
  }
  return error.message.replace(/^check-in request failed: /, "");
}

/** The exit code of a child that ended with `code` or was killed by `signal` (128 + its number, as shells report it). */
const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number =>
  code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0);

/**
 * Runs `vrai-heartbeat` with `argv` (without `node` and the script) until stopped, the agent key is refused,
 * or the wrapped command exits.
 * @returns 0 when stopped, 1 when the service refused the key or the agent for good, the command's own exit code with `--`
 * @throws InvalidInputError for bad arguments or a missing key (the bin prints one line and exits 2)
 * @example
 * const controller = new AbortController();
 * process.once("SIGTERM", () => controller.abort());
 * process.exitCode = await runHeartbeatCli(["--api", "http://127.0.0.1:8080", "--agent", agentId, "--key-file", "agent.key"], {
 *   env: process.env, log: (line) => console.error(line), stop: controller.signal,
 * });
 */
export async function runHeartbeatCli(argv: readonly string[], deps: HeartbeatCliDeps): Promise<number> {
  if (argv[0] === "--help" || argv[0] === "-h") {
    deps.log(`usage: ${USAGE}`);
    return 0;
  }
  const options = parseOptions(argv, deps.env);
  const log = (line: string) => deps.log(`vrai-heartbeat: ${line}`);
  for (const warning of options.warnings) log(warning);
  const agent = createVraiAgent({
    baseUrl: options.api,
    agentId: options.agentId,
    agentKey: options.agentKey,
    fetch: deps.fetch,
    sleep: deps.sleep,
    random: deps.random,
    now: deps.now,
  });
  let refused: (error: VraiAgentError) => void = () => {};
  const givenUp = new Promise<VraiAgentError>((resolve) => (refused = resolve));
  let counted = 0;
  let lastFailure: string | undefined;
  const heartbeat = agent.startHeartbeat({
    errorDelayMs: deps.errorDelayMs,
    onCheckIn: (result, nextInMs) => {
      counted++;
      log(checkedInLine(result, nextInMs));
    },
    onWait: (wait) => {
      if (wait.error) lastFailure = wait.error.message;
      log(waitLine(wait, options.api, DEFAULT_MAX_ATTEMPTS));
    },
    onError: (error, nextInMs) => {
      lastFailure = error.message;
      log(`check-in failed: ${error.message}${nextInMs === undefined ? "; stopping" : `; next try in ${nextInMs / 1000} s`}`);
      if (nextInMs === undefined) refused(error);
    },
  });
  const stopped = new Promise<void>((resolve) =>
    deps.stop.aborted ? resolve() : deps.stop.addEventListener("abort", () => resolve(), { once: true }),
  );
  const stopCause = () => (typeof deps.stop.reason === "string" ? ` by ${deps.stop.reason}` : "");
  const checkIns = () => `${counted} check-in${counted === 1 ? "" : "s"} counted`;

  if (options.command.length === 0) {
    const code = await Promise.race([stopped.then(() => 0), givenUp.then(() => 1)]);
    await heartbeat.stop();
    if (code === 0) log(`stopped${stopCause()}: ${checkIns()}`);
    return code;
  }

  const [file, ...args] = options.command;
  const child = spawn(file, args, { stdio: "inherit" });
  const exited = new Promise<number>((resolve) => {
    child.once("error", (error) => {
      log(`cannot run ${file}: ${error.message}`);
      resolve(127);
    });
    child.once("exit", (code, signal) => resolve(exitCodeOf(code, signal)));
  });
  // A stop (SIGTERM/SIGINT to vrai-heartbeat, as a process manager sends it) goes to the command; its exit ends the heartbeat.
  let stopping = false;
  void stopped.then(() => {
    stopping = true;
    log(`stopping${stopCause()}: SIGTERM passed on to ${file}`);
    child.kill("SIGTERM");
  });
  const code = await exited;
  await heartbeat.stop();
  // A command that ran its whole life without being seen by the service is said so: its score saw nothing of it.
  const unseen =
    counted === 0
      ? ` before any check-in was counted${lastFailure === undefined ? "" : ` (last failure: ${lastFailure})`}`
      : `; ${checkIns()}`;
  log(`${file} exited with ${code}${stopping ? "" : unseen}`);
  return code;
}
