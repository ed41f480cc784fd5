import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { startDev, type DevProcess } from "../../test-helpers/dev-process";

/** Whether something accepts connections on 127.0.0.1:`port`. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });

/** Sends SIGINT to the process group of `dev`, as a terminal's Ctrl-C does, `times` times within 10 ms. */
async function ctrlC(dev: DevProcess, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 3));
    process.kill(-dev.child.pid!, "SIGINT");
  }
}

describe("vrai dev and Ctrl-C (issue #31)", function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-dev-signals-"));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cases = [
    { what: "once, once it is ready", at: /vrai ready: api /, times: 1 },
    { what: "twice within 10 ms (npm passes a terminal's Ctrl-C on, so vrai gets two)", at: /vrai ready: api /, times: 2 },
    { what: "twice within 10 ms while its chain starts, before it is ready", at: /operator token: in /, times: 2 },
  ];
  for (const { what, at, times } of cases) {
    it(`stops cleanly with "vrai stopped" on SIGINT to its process group ${what}; every line it prints is readable, no JSON (starts vrai dev: 5-10 s)`, async () => {
      const dev = await startDev([process.execPath, "bin/vrai.js", "dev"], dir, { detached: true, ready: at, env: { LOG_LEVEL: "info" } });
      try {
        await ctrlC(dev, times);
        const { code, signal } = await dev.exited;
        expect({ code, signal }, dev.output()).to.deep.equal({ code: 0, signal: null });
        const lines = dev.output().trimEnd().split("\n");
        expect(lines[lines.length - 1]).to.equal("vrai stopped");
        for (const line of lines) {
          expect(line, `a line of JSON in:\n${dev.output()}`).to.not.match(/^\s*\{/);
          expect(() => JSON.parse(line), line).to.throw();
        }
        // Once the service ran, its log's lines are there to be read, at info as a newcomer runs it.
        if (dev.output().includes("vrai ready: ")) expect(lines.filter((line) => /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: /.test(line)).length).to.be.greaterThan(1);
        expect(await listening(dev.apiPort), "API port").to.equal(false);
        expect(await listening(dev.chainPort), "chain port").to.equal(false);
      } finally {
        if (dev.child.exitCode === null && dev.child.signalCode === null) {
          process.kill(-dev.child.pid!, "SIGKILL");
          await dev.exited;
        }
      }
    });
  }
});
