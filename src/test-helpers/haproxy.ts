/**
 * Debian's HAProxy in front of several HTTP servers for tests: round robin on a loopback port, a health check
 * per server, a refused connection sent to another server, and the server that answered named in
 * `X-Served-By`. Its configuration lives in a temporary directory that goes when it stops.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./node";

const HAPROXY = process.env.TEST_HAPROXY ?? "/usr/sbin/haproxy";

export type Balancer = {
  url: string;
  /** What HAProxy wrote to its stderr so far: its warnings, a server marked down or up. */
  output(): string;
  close(): Promise<void>;
};

/**
 * Starts HAProxy on `127.0.0.1:<free port>` over `servers` (name and `http://127.0.0.1:port`), checking each with
 * `GET healthPath` every 200 ms (down after 2 failures, up after 1 success).
 * @example const lb = await startBalancer([{ name: "a", url: a.url }], "/v1/method"); after(() => lb.close());
 */
export async function startBalancer(servers: ReadonlyArray<{ name: string; url: string }>, healthPath: string): Promise<Balancer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-haproxy-"));
  const port = await freePort();
  const config = [
    "global",
    "  maxconn 2000",
    "defaults",
    "  mode http",
    "  timeout connect 5s",
    "  timeout client 120s",
    "  timeout server 120s",
    // A connection the server refused (it died) goes to another server; a request it received is never sent twice.
    "  retries 2",
    "  option redispatch 1",
    "frontend api",
    `  bind 127.0.0.1:${port}`,
    "  default_backend vrai",
    "backend vrai",
    "  balance roundrobin",
    `  option httpchk GET ${healthPath}`,
    "  http-check expect status 200",
    "  http-response set-header X-Served-By %s",
    "  default-server inter 200ms fall 2 rise 1",
    ...servers.map((s) => `  server ${s.name} ${new URL(s.url).host} check`),
    "",
  ].join("\n");
  const file = path.join(dir, "haproxy.cfg");
  fs.writeFileSync(file, config);
  const child = spawn(HAPROXY, ["-f", file, "-db"], { detached: true, stdio: ["ignore", "ignore", "pipe"] });
  let errors = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(-child.pid, "SIGKILL");
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  for (const until = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
    if (child.exitCode !== null) {
      await close();
      throw new Error(`haproxy exited with ${child.exitCode}: ${errors}`);
    }
    const answered = await fetch(url + healthPath).then(
      (res) => res.ok,
      () => false,
    );
    if (answered) return { url, output: () => errors, close };
    if (Date.now() > until) {
      await close();
      throw new Error(`haproxy did not answer on ${url} in 30 s: ${errors}`);
    }
  }
}
