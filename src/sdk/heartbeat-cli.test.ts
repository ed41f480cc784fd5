import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import pino from "pino";
import { startApiServer, type ApiServer } from "../app/server";
import { createManualClock } from "../service/clock";
import { claimAgent, simulatedSleep, startCheckinProxy, type ProxyFault } from "../test-helpers/checkin-proxy";
import { createTestPgliteDb, type TestDb } from "../test-helpers/db";
import { createVraiAgent } from "./agent";
import { runHeartbeatCli } from "./heartbeat-cli";

const ROOT = path.resolve(__dirname, "../..");
const BIN = path.join(__dirname, "heartbeat-bin.ts");
const T0 = Date.UTC(2026, 10, 2, 10, 0, 0) / 1000;
const CHECKED_IN =
  /^vrai-heartbeat: checked in: agent agt_\S+ at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ(, on time|, late)?, credit \d+ s( \(replayed\))?; next in \d+ s$/;

type Spawned = {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

/** Runs the bin as installed (through tsx here) with `env` on top of a clean environment. */
function spawnBin(args: readonly string[], env: Record<string, string> = {}): Spawned {
  const child = spawn(process.execPath, ["-r", "tsx/cjs", BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, ...env } });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr: () => stderr, exited };
}

/** Resolves once the process's standard error has a line matching `pattern`. */
function lineOf(spawned: Spawned, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const line = spawned
        .stderr()
        .split("\n")
        .find((l) => pattern.test(l));
      if (line === undefined) return false;
      spawned.child.stderr.off("data", look);
      resolve(line);
      return true;
    };
    if (look()) return;
    spawned.child.stderr.on("data", look);
    void spawned.exited.then(({ code }) => reject(new Error(`exited with ${code} before ${pattern}: ${spawned.stderr()}`)));
  });
}

describe("vrai-heartbeat against the API on PGlite", () => {
  let testDb: TestDb;
  let server: ApiServer;
  let dir: string;
  const clock = createManualClock(T0);

  before(async () => {
    testDb = await createTestPgliteDb();
    server = await startApiServer({
      db: testDb.db,
      operatorToken: "operator-test-token-0123456789",
      clock,
      logger: pino({ level: "silent" }),
      rateLimit: { perMinute: 100_000, burst: 10_000 },
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-heartbeat-"));
  });
  after(async () => {
    await server.close();
    await testDb.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const countedCheckins = async (agentId: string) =>
    (await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM checkins WHERE agent_id = $1", [agentId])).rows[0].n;

  /** A claimed agent with its key in a file of its own (mode 0600). */
  async function agentWithKeyFile(): Promise<{ agentId: string; agentKey: string; keyFile: string }> {
    const agent = await claimAgent(server.url);
    const keyFile = path.join(dir, `${agent.agentId}.key`);
    fs.writeFileSync(keyFile, `${agent.agentKey}\n`, { mode: 0o600 });
    return { ...agent, keyFile };
  }

  /**
   * Runs the command in-process through `faults` (a proxy) on the simulated schedule until `checkIns` check-ins
   * were logged, then stops it as SIGTERM would.
   */
  async function runUntil(checkIns: number, agent: { agentId: string; keyFile: string }, faults: ProxyFault[] = [], random = 0.5) {
    const proxy = await startCheckinProxy(server.url, faults);
    const { waits, sleep } = simulatedSleep(clock);
    const lines: string[] = [];
    const controller = new AbortController();
    try {
      const code = await runHeartbeatCli(["--api", proxy.url, "--agent", agent.agentId, "--key-file", agent.keyFile], {
        env: {},
        sleep,
        random: () => random,
        now: () => clock.now() * 1000,
        stop: controller.signal,
        log: (line) => {
          lines.push(line);
          if (lines.filter((l) => CHECKED_IN.test(l)).length === checkIns) controller.abort();
        },
      });
      return { code, lines, waits, keys: proxy.keys };
    } finally {
      await proxy.close();
    }
  }

  it(
    "checks in on the service's schedule (next_heartbeat_s less 30 s), a fresh Idempotency-Key each time, " +
      "one log line each, exit 0 when stopped",
    async () => {
      const agent = await agentWithKeyFile();
      const { code, lines, waits, keys } = await runUntil(3, agent);
      expect(code).to.equal(0);
      expect(lines).to.have.length(4);
      for (const line of lines.slice(0, 3)) expect(line).to.match(CHECKED_IN);
      expect(lines[1]).to.contain(", on time, credit 3570 s; next in 3570 s");
      // Its stop is a line too (issue #31).
      expect(lines[3]).to.equal("vrai-heartbeat: stopped: 3 check-ins counted");
      // The last wait is the one the stop ended.
      expect(waits).to.deep.equal([3_570_000, 3_570_000, 3_570_000]);
      expect(new Set(keys).size).to.equal(3);
      expect(await countedCheckins(agent.agentId)).to.equal(3);
    },
  );

  it("retries a 503 with the same key after a jittered backoff, then the next check-in gets a fresh key (V3.1)", async () => {
    const agent = await agentWithKeyFile();
    const { code, lines, waits, keys } = await runUntil(2, agent, ["503", "503"], 0.25);
    expect(code).to.equal(0);
    expect(waits).to.deep.equal([250, 500, 3_570_000, 3_570_000]); // full jitter: 0.25 × 1,000, 0.25 × 2,000; then the schedule
    expect(keys).to.have.length(4);
    expect(new Set(keys.slice(0, 3)).size).to.equal(1);
    expect(keys[3]).to.not.equal(keys[0]);
    expect(lines.filter((l) => CHECKED_IN.test(l))).to.have.length(2);
    // Each retry is a line before its wait (issue #31).
    expect(lines.slice(0, 2)).to.deep.equal([
      "vrai-heartbeat: check-in failed (503); retrying in 0.25 s (attempt 2 of 8)",
      "vrai-heartbeat: check-in failed (503); retrying in 0.5 s (attempt 3 of 8)",
    ]);
    expect(await countedCheckins(agent.agentId)).to.equal(2);
  });

  it("logs a connection failure, one line per retry naming the address and the cause, before each wait (issue #31)", async () => {
    const agent = await agentWithKeyFile();
    const closed = await startCheckinProxy(server.url);
    await closed.close();
    const { waits, sleep } = simulatedSleep(clock);
    const lines: string[] = [];
    const controller = new AbortController();
    const code = await runHeartbeatCli(["--api", closed.url, "--agent", agent.agentId, "--key-file", agent.keyFile], {
      env: {},
      sleep,
      random: () => 0.5,
      now: () => clock.now() * 1000,
      stop: controller.signal,
      log: (line) => {
        lines.push(line);
        if (lines.length === 2) controller.abort();
      },
    });
    expect(code).to.equal(0);
    expect(lines).to.deep.equal([
      `vrai-heartbeat: cannot reach the service at ${closed.url} (ECONNREFUSED); retrying in 0.5 s (attempt 2 of 8)`,
      `vrai-heartbeat: cannot reach the service at ${closed.url} (ECONNREFUSED); retrying in 1 s (attempt 3 of 8)`,
      "vrai-heartbeat: stopped: 0 check-ins counted",
    ]);
    expect(waits.slice(0, 2)).to.deep.equal([500, 1000]);
  });

  it("warns when other users can read the key file, and checks in all the same", async () => {
    const agent = await agentWithKeyFile();
    fs.chmodSync(agent.keyFile, 0o644);
    const { code, lines } = await runUntil(1, agent);
    expect(code).to.equal(0);
    expect(lines[0]).to.equal(
      `vrai-heartbeat: warning: other users can read the agent key in ${agent.keyFile} (mode 0644): chmod 600 ${agent.keyFile}`,
    );
    expect(lines[1]).to.match(CHECKED_IN);
    fs.chmodSync(agent.keyFile, 0o600);
    clock.set(clock.now() + 3600);
    expect((await runUntil(1, agent)).lines[0]).to.match(CHECKED_IN);
  });

  it("waits the service's Retry-After on a 429 (V3.2: too soon after another process's check-in) and retries with the same key", async () => {
    const agent = await agentWithKeyFile();
    await createVraiAgent({ baseUrl: server.url, ...agent }).checkIn();
    clock.set(clock.now() + 1000);
    const { code, lines, waits, keys } = await runUntil(1, agent);
    expect(code).to.equal(0);
    expect(waits).to.deep.equal([200_000, 3_570_000]); // 1,200 s less the 1,000 s already past; then the schedule
    expect(keys).to.have.length(2);
    expect(keys[1]).to.equal(keys[0]);
    // The wait is said before it starts (issue #31).
    expect(lines[0]).to.equal(
      "vrai-heartbeat: check-in refused (429: less than 1,200 s since the previous counted check-in; retry in 200 s); " +
        "waiting 200 s as the service asks (Retry-After)",
    );
    expect(lines[1]).to.match(CHECKED_IN).and.contain("on time, credit 1200 s");
    expect(await countedCheckins(agent.agentId)).to.equal(2);
  });

  it("stops with exit 1 and says why when the service refuses the key (401)", async () => {
    const agent = await agentWithKeyFile();
    fs.writeFileSync(agent.keyFile, "va_not-the-key\n");
    const lines: string[] = [];
    const code = await runHeartbeatCli(["--api", server.url, "--agent", agent.agentId, "--key-file", agent.keyFile], {
      env: {},
      log: (l) => lines.push(l),
      stop: new AbortController().signal,
    });
    expect(code).to.equal(1);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^vrai-heartbeat: check-in failed: check-in rejected \(401: .+\); stopping$/);
    expect(await countedCheckins(agent.agentId)).to.equal(0);
  });

  it("refuses bad arguments and a key on the command line, before any request", async () => {
    const agent = await agentWithKeyFile();
    const base = ["--api", server.url, "--agent", agent.agentId];
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [[...base, "--key", agent.agentKey], {}, /^refusing --key: a key on the command line is visible/],
      [[...base, `--key=${agent.agentKey}`], {}, /^refusing --key/],
      [base, {}, /^no agent key: give --key-file FILE or set VRAI_AGENT_KEY$/],
      [[...base, "--key-file", path.join(dir, "missing.key")], {}, /^--key-file: cannot read .*missing\.key: ENOENT$/],
      [["--agent", agent.agentId, "--key-file", agent.keyFile], {}, /^--api: expected an http\(s\) URL, got nothing/],
      [
        ["--api", "ftp://x", "--agent", agent.agentId],
        { VRAI_AGENT_KEY: agent.agentKey },
        /^--api: expected an http\(s\) URL, got ftp:\/\/x/,
      ],
      [["--api", server.url, "--agent", "agt 1"], { VRAI_AGENT_KEY: agent.agentKey }, /^--agent: expected an agent id/],
      [[...base, "--frobnicate"], { VRAI_AGENT_KEY: agent.agentKey }, /^Unknown option '--frobnicate'/],
      [[...base, "--"], { VRAI_AGENT_KEY: agent.agentKey }, /^nothing to run after --$/],
    ];
    for (const [args, env, message] of cases) {
      const error = await runHeartbeatCli(args, { env, log: () => expect.fail("logged"), stop: new AbortController().signal }).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      expect(error?.message, args.join(" ")).to.match(message);
      expect(error?.code).to.equal("usage");
    }
    expect(await countedCheckins(agent.agentId)).to.equal(0);
    // The bin prints the one line and exits 2.
    const spawned = spawnBin([...base, "--key", agent.agentKey]);
    expect((await spawned.exited).code).to.equal(2);
    expect(spawned.stderr().trim().split("\n")).to.have.length(1);
    expect(spawned.stderr()).to.match(/^vrai-heartbeat: refusing --key/);
  });

  it("exits 0 on SIGTERM, as a process manager stops it, after checking in", async () => {
    const agent = await agentWithKeyFile();
    const spawned = spawnBin(["--api", server.url, "--agent", agent.agentId, "--key-file", agent.keyFile]);
    await lineOf(spawned, CHECKED_IN);
    spawned.child.kill("SIGTERM");
    expect(await spawned.exited).to.deep.equal({ code: 0, signal: null });
    expect(spawned.stderr()).to.match(/\nvrai-heartbeat: stopped by SIGTERM: 1 check-in counted\n$/);
    expect(await countedCheckins(agent.agentId)).to.equal(1);
  });

  it("-- command: runs the command, checks in while it runs (key from VRAI_AGENT_KEY), and exits with the command's exit code", async () => {
    const agent = await agentWithKeyFile();
    // The command ends when the test writes a line to it, once the heartbeat's first check-in is logged.
    const spawned = spawnBin(
      ["--api", server.url, "--agent", agent.agentId, "--", process.execPath, "-e", "process.stdin.once('data', () => process.exit(3))"],
      { VRAI_AGENT_KEY: agent.agentKey },
    );
    await lineOf(spawned, CHECKED_IN);
    spawned.child.stdin.write("done\n");
    expect(await spawned.exited).to.deep.equal({ code: 3, signal: null });
    expect(spawned.stderr()).to.match(/vrai-heartbeat: \S+ exited with 3; 1 check-in counted\n$/);
    expect(await countedCheckins(agent.agentId)).to.equal(1);
  });

  it("-- command: says so when the command ran and exited before any check-in was counted (issue #31)", async () => {
    const agent = await agentWithKeyFile();
    const closed = await startCheckinProxy(server.url);
    await closed.close();
    const lines: string[] = [];
    const code = await runHeartbeatCli(
      [
        "--api",
        closed.url,
        "--agent",
        agent.agentId,
        "--key-file",
        agent.keyFile,
        "--",
        process.execPath,
        "-e",
        "setTimeout(() => process.exit(4), 300)",
      ],
      {
        env: {},
        random: () => 0.5,
        log: (line) => lines.push(line),
        stop: new AbortController().signal,
      },
    );
    expect(code).to.equal(4);
    expect(lines[0]).to.match(
      /^vrai-heartbeat: cannot reach the service at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\); retrying in 0\.5 s \(attempt 2 of 8\)$/,
    );
    expect(lines[lines.length - 1]).to.equal(
      `vrai-heartbeat: ${process.execPath} exited with 4 before any check-in was counted (last failure: check-in request failed: fetch failed)`,
    );
    expect(await countedCheckins(agent.agentId)).to.equal(0);
  });

  it("-- command: SIGTERM goes to the command, and its end by that signal is the exit code (128 + 15)", async () => {
    const agent = await agentWithKeyFile();
    const spawned = spawnBin([
      "--api",
      server.url,
      "--agent",
      agent.agentId,
      "--key-file",
      agent.keyFile,
      "--",
      process.execPath,
      "-e",
      "setInterval(() => {}, 1000)",
    ]);
    await lineOf(spawned, CHECKED_IN);
    spawned.child.kill("SIGTERM");
    expect(await spawned.exited).to.deep.equal({ code: 143, signal: null });
    expect(spawned.stderr()).to.contain(
      `\nvrai-heartbeat: stopping by SIGTERM: SIGTERM passed on to ${process.execPath}\nvrai-heartbeat: ${process.execPath} exited with 143\n`,
    );
  });
});
