import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { startDev } from "../test-helpers/dev-process";

/** The processes below `pid` (children, their children, ...), read from /proc. */
function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // ended meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
  }
  const out: number[] = [];
  const visit = (p: number) => {
    for (const child of parents.get(p) ?? []) {
      out.push(child);
      visit(child);
    }
  };
  visit(pid);
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !fs.readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "); // a zombie has ended
  } catch {
    return false;
  }
};

/** Whether something accepts connections on 127.0.0.1:`port`. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      return resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

describe("npm start under a process manager", function () {
  this.timeout(180_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-npm-start-"));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(
    "stops everything on SIGTERM to npm: no process left below it and nothing listening on its ports " +
      "(npm start, vrai dev and its chain: 10-30 s)",
    async () => {
      const dev = await startDev(["npm", "start"], dir);
      const { child: npm, apiPort, chainPort, exited } = dev;
      let below: number[] = [];
      try {
        expect(await listening(apiPort), dev.output()).to.equal(true);
        expect(await listening(chainPort)).to.equal(true);
        below = descendantsOf(npm.pid!);
        expect(below.length, "vrai runs below npm").to.be.greaterThan(0);

        npm.kill("SIGTERM");
        const { code } = await exited;
        expect(dev.output()).to.contain("vrai stopped");
        expect(code, dev.output()).to.equal(0);
        expect(below.filter(alive), "processes left running").to.deep.equal([]);
        expect(await listening(apiPort), "API port").to.equal(false);
        expect(await listening(chainPort), "chain port").to.equal(false);
      } finally {
        for (const pid of [npm.pid!, ...below].filter(alive)) process.kill(pid, "SIGKILL");
      }
    },
  );
});
