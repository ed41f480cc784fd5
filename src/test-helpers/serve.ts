/** `vrai serve` as a user runs it (bin/vrai.js, configured from the environment), in a child process for tests. */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { PROJECT_ROOT } from "../project-root";

const BIN = path.join(PROJECT_ROOT, "bin", "vrai.js");

export type ServeProcess = {
  child: ChildProcess;
  /** The API's base URL (`http://127.0.0.1:<port>`), from its ready line. */
  url: string;
  /** Everything it wrote to stdout and stderr so far (its log, with LOG_LEVEL set). */
  output(): string;
  /** Resolves once it has exited. */
  exited: Promise<void>;
  /** SIGKILL, or SIGTERM to stop it cleanly; resolves once it has exited. */
  kill(signal: "SIGKILL" | "SIGTERM"): Promise<void>;
};

/** A `vrai serve` child from the moment it is spawned: its ready line may never come (a test may kill it first). */
export type ServeChild = Omit<ServeProcess, "url"> & {
  /** The API's base URL once it prints its ready line; rejects if it exits first. */
  ready: Promise<string>;
};

/**
 * Spawns `vrai serve` with `env` on top of this process's environment, without a warm-up (WARM_UP_REQUESTS=0) unless
 * `env` asks for one: a test's server is ready once its cache is filled, rather than reading its own scores beside the test.
 * @example const serve = spawnServe({ DATABASE_URL: url, PORT: "0", OPERATOR_TOKEN: token }); await serve.exited;
 */
export function spawnServe(env: Record<string, string>): ServeChild {
  const child = spawn(process.execPath, [BIN, "serve"], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, WARM_UP_REQUESTS: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = async (signal: "SIGKILL" | "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = /vrai ready: api (http:\/\/\S+)\/v1/.exec(output);
      if (line) resolve(line[1]);
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code, signal) => reject(new Error(`vrai serve exited with ${code ?? signal}: ${output}`)));
  });
  // A child killed before it is ready rejects `ready`: a caller waiting on `exited` instead has nothing to catch.
  ready.catch(() => undefined);
  return { child, ready, output: () => output, exited, kill };
}

/**
 * Starts `vrai serve` with `env` on top of this process's environment; resolves once it prints its ready line.
 * @example const serve = await startServe({ DATABASE_URL: url, PORT: "0", OPERATOR_TOKEN: token }); after(() => serve.kill("SIGTERM"));
 */
export async function startServe(env: Record<string, string>): Promise<ServeProcess> {
  const { ready, ...serve } = spawnServe(env);
  return { ...serve, url: await ready };
}
