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
    socket.once("connect", () => {
      socket.destroy();
      return resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

/** Sends SIGINT to the process group of `dev`, as a terminal's Ctrl-C does, `times` times, `gapMs` apart (within 10 ms). */
async function ctrlC(dev: DevProcess, times: number, gapMs = 3): Promise<void> {
  for (let i = 0; i < times; i++) {
    if (i > 0 && gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    process.kill(-dev.child.pid!, "SIGINT");
  }
}

/**
 * How `dev` ended after Ctrl-C: exit 0, its last line "vrai stopped", every line readable (no JSON), at info as a
 * newcomer runs it once the service ran, and both its ports closed. Kills its group if it did not end.
 */
async function expectStoppedCleanly(dev: DevProcess): Promise<void> {
  try {
    const { code, signal } = await dev.exited;
    expect({ code, signal }, dev.output()).to.deep.equal({ code: 0, signal: null });
    const lines = dev.output().trimEnd().split("\n");
    expect(lines[lines.length - 1], dev.output()).to.equal("vrai stopped");
    for (const line of lines) {
      expect(line, `a line of JSON in:\n${dev.output()}`).to.not.match(/^\s*\{/);
      expect(() => JSON.parse(line), line).to.throw();
    }
    // Once the service ran, its log's lines are there to be read, at info as a newcomer runs it.
    if (dev.output().includes("vrai ready: "))
      expect(lines.filter((line) => /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: /.test(line)).length).to.be.greaterThan(1);
    expect(await listening(dev.apiPort), "API port").to.equal(false);
    expect(await listening(dev.chainPort), "chain port").to.equal(false);
  } finally {
    if (dev.child.exitCode === null && dev.child.signalCode === null) {
      process.kill(-dev.child.pid!, "SIGKILL");
      await dev.exited;
    }
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
    { what: "twice within 10 ms while its chain starts, before it is ready", at: /operator token: in /, times: 2 },
  ];
  for (const { what, at, times } of cases) {
    it(
      `stops cleanly with "vrai stopped" on SIGINT to its process group ${what}; ` +
        "every line it prints is readable, no JSON (starts vrai dev: 5-10 s)",
      async () => {
        const dev = await startDev([process.execPath, "bin/vrai.js", "dev"], dir, {
          detached: true,
          ready: at,
          env: { LOG_LEVEL: "info" },
        });
        await ctrlC(dev, times);
        await expectStoppedCleanly(dev);
      },
    );
  }

  // The bug was 2 tries in 11 that did not stop cleanly: one try proves little. Ten, on the same data directory (its
  // chain replayed each start), two through npm start (npm passes a terminal's Ctrl-C on, so vrai gets it twice more),
  // the gap between the two Ctrl-C from 0 to 9 ms.
  it("stops cleanly on two SIGINTs to its process group within 10 ms, ten tries in a row, two of them through npm start (80-100 s)", async function () {
    this.timeout(400_000);
    for (let attempt = 0; attempt < 10; attempt++) {
      const command = attempt % 5 === 4 ? ["npm", "start"] : [process.execPath, "bin/vrai.js", "dev"];
      const tried = (error: Error) => {
        throw new Error(`try ${attempt + 1} (${command.join(" ")}, Ctrl-C ${attempt} ms apart): ${error.message}`);
      };
      const dev = await startDev(command, dir, { detached: true, env: { LOG_LEVEL: "info" } }).catch(tried);
      await ctrlC(dev, 2, attempt);
      await expectStoppedCleanly(dev).catch(tried);
    }
  });
});
