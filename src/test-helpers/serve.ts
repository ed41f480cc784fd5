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

/**
 * Starts `vrai serve` with `env` on top of this process's environment; resolves once it prints its ready line.
 * @example const serve = await startServe({ DATABASE_URL: url, PORT: "0", OPERATOR_TOKEN: token }); after(() => serve.kill("SIGTERM"));
 */
export function startServe(env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, [BIN, "serve"], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const kill = async (signal: "SIGKILL" | "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const ready = /vrai ready: api (http:\/\/\S+)\/v1/.exec(output);
      if (ready) resolve({ child, url: ready[1], output: () => output, exited, kill });
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) => reject(new Error(`vrai serve exited with ${code}: ${output}`)));
  });
}
