/**
 * A pg_auto_failover formation for tests (Debian's `pg-auto-failover-cli` and `postgresql-15-auto-failover`): a
 * monitor and two PostgreSQL nodes that become a primary and a synchronous hot standby, in one temporary
 * directory on loopback ports, run as the `postgres` user (pg_autoctl refuses root). Everything it writes, its
 * configuration and state included (XDG_* point into the directory), goes when it stops.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "./node";

const run = promisify(execFile);

/** Where Debian keeps PostgreSQL 15's programs (pg_ctl, initdb, pg_rewind): pg_autoctl finds them on PATH. */
const PG_BIN = process.env.TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";

export type FailoverNode = { name: string; pgdata: string; port: number };

/** A node as the monitor sees it (`pg_autoctl show state --json`). */
export type NodeState = { nodename: string; nodeport: number; current_group_state: string; assigned_group_state: string };

export type AutoFailoverFormation = {
  /**
   * `pg_autoctl show uri --formation default` as the service is given it: user postgres, and `uselibpqcompat`
   * so node-postgres reads `sslmode=require` as libpq does (encrypted, the self-signed certificate not verified).
   */
  uri: string;
  nodes: readonly FailoverNode[];
  states(): Promise<NodeState[]>;
  /** Polls the monitor until `test` holds; throws after `timeoutMs`, with the formation's logs. */
  waitFor(what: string, test: (states: NodeState[]) => boolean, timeoutMs?: number): Promise<NodeState[]>;
  /** The node the monitor has as primary (current and assigned). */
  primary(): Promise<FailoverNode>;
  /**
   * SIGKILLs `node`'s postmaster (its pid is the first line of PGDATA/postmaster.pid) at once; resolves once it is gone
   * and its pid file with it (`postmasterGone`).
   */
  killPostmaster(node: FailoverNode): Promise<void>;
  /** Stops every pg_autoctl process (fast shutdown, then SIGKILL of its process group) and removes the directory. */
  stop(): Promise<void>;
};

const asRoot = process.getuid?.() === 0;

/**
 * Starts a monitor and two nodes and resolves once one is primary and the other secondary.
 * @example const formation = await startAutoFailoverFormation(); after(() => formation.stop());
 */
export async function startAutoFailoverFormation(): Promise<AutoFailoverFormation> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-failover-"));
  const env: Record<string, string> = {
    PATH: `${PG_BIN}:/usr/bin:/bin`,
    XDG_CONFIG_HOME: path.join(dir, "config"),
    XDG_DATA_HOME: path.join(dir, "share"),
    XDG_RUNTIME_DIR: path.join(dir, "run"),
  };
  const monitorData = path.join(dir, "monitor");
  const nodeData = (name: string) => path.join(dir, name);
  // pg_autoctl keeps a node's files in XDG_*/pg_autoctl/<its PGDATA>/ and makes those directories on each run with
  // pg_mkdir_p, which fails ("File exists") when two runs make the same one at once: the monitor's `create` and the
  // first `show state` poll did in CI. Made here first, each run finds them there.
  const made = new Set([dir]);
  for (const sub of ["config", "share", "run"])
    for (const pgdata of [monitorData, nodeData("node1"), nodeData("node2")]) {
      const target = path.join(dir, sub, "pg_autoctl", pgdata);
      fs.mkdirSync(target, { recursive: true });
      for (let at = target; at !== dir; at = path.dirname(at)) made.add(at);
    }
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString());
    for (const at of made) fs.chownSync(at, uid, gid);
  }
  /** pg_autoctl with `args` and `env`, as the postgres user (through runuser) when this runs as root. */
  const command = (args: string[]): [string, string[], NodeJS.ProcessEnv] =>
    asRoot
      ? [
          "runuser",
          ["-u", "postgres", "--", "env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), "pg_autoctl", ...args],
          process.env,
        ]
      : ["pg_autoctl", args, { ...process.env, ...env }];
  const children: ChildProcess[] = [];
  const logs: string[] = [];
  const logTails = () =>
    logs
      .map(
        (file) =>
          `--- ${path.basename(file)}\n${fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").slice(-15).join("\n") : ""}`,
      )
      .join("\n");
  /** A `pg_autoctl create ... --run` in a process group of its own, its output in DIR/<name>.log. */
  const start = (name: string, args: string[]) => {
    const log = path.join(dir, `${name}.log`);
    logs.push(log);
    const out = fs.openSync(log, "a");
    const [file, argv, childEnv] = command(args);
    const child = spawn(file, argv, { cwd: dir, env: childEnv, detached: true, stdio: ["ignore", out, out] });
    child.on("error", (error) => fs.appendFileSync(log, `${file}: ${error.message}\n`));
    fs.closeSync(out);
    children.push(child);
  };
  const states = async (): Promise<NodeState[]> => {
    const [file, argv, childEnv] = command(["show", "state", "--pgdata", monitorData, "--json"]);
    const { stdout } = await run(file, argv, { cwd: dir, env: childEnv, timeout: 30_000 });
    return JSON.parse(stdout) as NodeState[];
  };
  const waitFor = async (what: string, test: (s: NodeState[]) => boolean, timeoutMs = 120_000) => {
    for (const until = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 500))) {
      const now = await states().catch(() => null);
      if (now && test(now)) return now;
      if (Date.now() > until)
        throw new Error(`pg_auto_failover: no ${what} in ${timeoutMs / 1000} s (states: ${JSON.stringify(now)})\n${logTails()}`);
    }
  };
  const settled = (s: NodeState) => s.current_group_state === s.assigned_group_state;
  const stop = async () => {
    // Nodes first, then the monitor: SIGINT is a fast shutdown for pg_autoctl and postgres alike.
    for (const child of [...children].reverse()) {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) continue;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      try {
        process.kill(-child.pid, "SIGINT");
      } catch {
        continue;
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }, 30_000);
      await exited;
      clearTimeout(timer);
    }
    // A postmaster outlives a killed group only if it left it; none should, but none may stay behind. A pid file left
    // by a postmaster that died names a pid another process may have now: only a postmaster of that PGDATA is killed.
    for (const pgdata of [monitorData, ...nodes.map((n) => n.pgdata)]) {
      const pid = postmasterPid(pgdata);
      if (pid > 0 && postmasterOf(pid, pgdata)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Not running.
        }
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };

  const nodes: FailoverNode[] = [];
  try {
    const monitorPort = await freePort();
    start("monitor", [
      "create",
      "monitor",
      "--pgdata",
      monitorData,
      "--pgport",
      String(monitorPort),
      "--listen",
      "127.0.0.1",
      "--auth",
      "trust",
      "--ssl-self-signed",
      "--hostname",
      "127.0.0.1",
      "--run",
    ]);
    await waitFor("monitor", () => true);
    const monitorUri = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=require`;
    for (const name of ["node1", "node2"]) {
      const node = { name, pgdata: nodeData(name), port: await freePort() };
      nodes.push(node);
      start(name, [
        "create",
        "postgres",
        "--pgdata",
        node.pgdata,
        "--pgport",
        String(node.port),
        "--listen",
        "127.0.0.1",
        "--monitor",
        monitorUri,
        "--auth",
        "trust",
        "--ssl-self-signed",
        "--hostname",
        "127.0.0.1",
        "--run",
      ]);
      // The second node registers once the first is a primary on its own ("single"): then it becomes its standby.
      if (name === "node1")
        await waitFor("single node", (s) => s.some((n) => n.nodeport === node.port && n.current_group_state === "single" && settled(n)));
    }
    await waitFor(
      "primary and secondary",
      (s) =>
        s.length === 2 &&
        s.every(settled) &&
        s.some((n) => n.current_group_state === "primary") &&
        s.some((n) => n.current_group_state === "secondary"),
    );
    const [file, argv, childEnv] = command(["show", "uri", "--pgdata", monitorData, "--formation", "default"]);
    const shown = (await run(file, argv, { cwd: dir, env: childEnv, timeout: 30_000 })).stdout.trim();
    const uri = `${shown.replace(/^postgres:\/\//, "postgres://postgres@")}&uselibpqcompat=true`;
    return {
      uri,
      nodes,
      states,
      waitFor,
      stop,
      async primary() {
        const now = await states();
        const primary = now.find((n) => n.current_group_state === "primary" && settled(n));
        const node = nodes.find((n) => n.port === primary?.nodeport);
        if (!node) throw new Error(`no settled primary: ${JSON.stringify(now)}`);
        return node;
      },
      async killPostmaster(node) {
        const pid = postmasterPid(node.pgdata);
        // Never pid 0, which would signal this process's own group.
        if (pid <= 0) throw new Error(`no postmaster.pid in ${node.pgdata}: its postmaster is not running`);
        process.kill(pid, "SIGKILL");
        await postmasterGone(node.pgdata, pid);
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The pid on the first line of PGDATA/postmaster.pid, 0 without one. */
function postmasterPid(pgdata: string): number {
  const file = path.join(pgdata, "postmaster.pid");
  return fs.existsSync(file) ? Number(fs.readFileSync(file, "utf8").split("\n")[0]) : 0;
}

/** Whether process `pid` is a live (not zombie) postgres working in `pgdata`, as a postmaster does. */
function postmasterOf(pid: number, pgdata: string): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ...": the state follows the last parenthesis (a comm may hold one).
    if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z") return false;
    return fs.readlinkSync(`/proc/${pid}/cwd`) === fs.realpathSync(pgdata);
  } catch {
    return false;
  }
}

/**
 * Waits until the SIGKILLed postmaster `pid` of `pgdata` is gone (or a zombie, its parent pg_autoctl not yet told),
 * then removes its pid file if it still names `pid`. A killed postmaster leaves the file behind, and pg_ctl, which
 * pg_autoctl runs to stop or demote the node, signals whatever process lives under the pid the file names: here pids
 * wrap within minutes (pid_max 32768; a unit run starts thousands of processes and threads), so a stale file once let
 * a SIGINT reach another test's `vrai dev` in a parallel worker, which stopped before it was ready. A machine that dies
 * takes its pids with it; here its file goes once its postmaster has. A postmaster started again meanwhile wrote its
 * own pid in the file, which is kept.
 */
async function postmasterGone(pgdata: string, pid: number): Promise<void> {
  for (const until = Date.now() + 10_000; postmasterOf(pid, pgdata); await new Promise((resolve) => setTimeout(resolve, 5))) {
    if (Date.now() > until) throw new Error(`the postmaster ${pid} of ${pgdata} outlived SIGKILL by 10 s`);
  }
  if (postmasterPid(pgdata) === pid) fs.rmSync(path.join(pgdata, "postmaster.pid"), { force: true });
}
