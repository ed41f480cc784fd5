/** `vrai dev` (or `npm start`) as a user runs it, in a temporary directory on free loopback ports. */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { freePort } from "./node";

const ROOT = path.resolve(__dirname, "../..");

export type DevProcess = {
  child: ChildProcess;
  apiPort: number;
  chainPort: number;
  /** The API's URL. */
  url: string;
  /** Everything it printed so far. */
  output(): string;
  /** Resolves when it has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

/** How `startDev` runs it: `detached` in a process group of its own (signalled as a terminal does, `process.kill(-pid)`), from `cwd`, with `env` on top. */
export type DevOptions = { detached?: boolean; cwd?: string; env?: Record<string, string>; ready?: RegExp };

/**
 * Starts `command` (e.g. `["npm", "start"]` or `["node", "bin/vrai.js", "dev"]`) from the project's root
 * with its data and deployments under `dir` and nothing of the caller's configuration, and resolves
 * once it prints "vrai ready: api" (or `options.ready`).
 */
export async function startDev(command: readonly string[], dir: string, options: DevOptions = {}): Promise<DevProcess> {
  const [apiPort, chainPort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(apiPort),
    CHAIN_PORT: String(chainPort),
    DATA_DIR: path.join(dir, "data"),
    DEPLOYMENTS_DIR: path.join(dir, "deployments"),
    LOG_LEVEL: "warn",
  };
  for (const name of ["DATABASE_URL", "OPERATOR_TOKEN", "RPC_URL", "HARDHAT_NETWORK", "HARDHAT_CONFIG"]) delete env[name];
  for (const name of Object.keys(env)) if (name.startsWith("ANCHOR_") || name.startsWith("npm_")) delete env[name];
  Object.assign(env, options.env);
  const child = spawn(command[0], command.slice(1), {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached === true,
  });
  let out = "";
  child.stdout?.on("data", (chunk) => (out += chunk));
  child.stderr?.on("data", (chunk) => (out += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", () => (options.ready ?? /vrai ready: api /).test(out) && resolve());
    void exited.then(({ code }) => reject(new Error(`${command.join(" ")} exited with ${code} before ready: ${out}`)));
  });
  return { child, apiPort, chainPort, url: `http://127.0.0.1:${apiPort}`, output: () => out, exited };
}
