import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { dataDirHolder, DataDirInUseError, LOCK_FILE, lockDataDir } from "./data-dir";
import { createPgliteDb } from "./db";

/** Every path under `dir` (itself included) with its permission bits. */
function modes(dir: string): Array<[string, string]> {
  const out: Array<[string, string]> = [[".", (fs.statSync(dir).mode & 0o777).toString(8)]];
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    out.push([path.relative(dir, full), (fs.statSync(full).mode & 0o777).toString(8)]);
  }
  return out;
}

/** A PID no process has now: one that just exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid!;
}

describe("the PGlite data directory (issue #33, findings 2 and 4)", () => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-data-dir-"));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it("is created 0700 with every file 0600, the lock file and PGlite's own included, and stays so after the store closes", async () => {
    const dir = path.join(root, "data");
    const db = await createPgliteDb(dir, { holder: "test" });
    try {
      expect((fs.statSync(dir).mode & 0o777).toString(8)).to.equal("700");
      expect((fs.statSync(path.join(dir, LOCK_FILE)).mode & 0o777).toString(8)).to.equal("600");
      await db.query("CREATE TABLE t (x int)");
    } finally {
      await db.close();
    }
    const all = modes(dir);
    expect(all.length).to.be.above(100);
    const loose = all.filter(([file, mode]) => mode !== (fs.statSync(path.join(dir, file)).isDirectory() ? "700" : "600"));
    expect(loose).to.deep.equal([]);
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).to.equal(false);
  });

  it("makes a directory other users can read private at open, files included, and says what it was", async () => {
    const dir = path.join(root, "loose");
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o777);
    fs.writeFileSync(path.join(dir, "operator-token"), "vop_x\n");
    fs.chmodSync(path.join(dir, "operator-token"), 0o666);
    const notices: string[] = [];
    const db = await createPgliteDb(dir, { notice: (line) => notices.push(line) });
    await db.close();
    expect(notices).to.have.length(1);
    expect(notices[0]).to.match(/was open to other users \(mode 0777\): made private/);
    expect((fs.statSync(dir).mode & 0o777).toString(8)).to.equal("700");
    expect((fs.statSync(path.join(dir, "operator-token")).mode & 0o777).toString(8)).to.equal("600");
    // Private already: nothing to say the next time.
    const again = await createPgliteDb(dir, { notice: (line) => notices.push(line) });
    await again.close();
    expect(notices).to.have.length(1);
  });

  it("refuses a second opening while the first holds it, naming the holder's PID, and opens again once it is released", () => {
    const dir = path.join(root, "held");
    const lock = lockDataDir(dir, "vrai serve");
    try {
      expect(() => lockDataDir(dir, "vrai operator add")).to.throw(DataDirInUseError, new RegExp(`in use by vrai serve \\(pid ${process.pid}, since \\d{4}-`));
      expect(dataDirHolder(dir)).to.include({ pid: process.pid, command: "vrai serve" });
    } finally {
      lock.release();
    }
    expect(dataDirHolder(dir)).to.equal(null);
    lockDataDir(dir, "again").release();
  });

  it("takes over a stale lock: its process is gone, its PID now belongs to a later process, or the file is empty (torn)", async () => {
    const dir = path.join(root, "stale");
    fs.mkdirSync(dir, { mode: 0o700 });
    const file = path.join(dir, LOCK_FILE);
    const stale = [`${await deadPid()}\n\n2026-12-01T00:00:00Z\nvrai dev\n`, `${process.pid}\n1\n2026-12-01T00:00:00Z\nvrai dev\n`, ""];
    for (const text of stale) {
      fs.writeFileSync(file, text);
      expect(dataDirHolder(dir), text).to.equal(null);
      const lock = lockDataDir(dir, "vrai recompute");
      expect(fs.readFileSync(file, "utf8")).to.match(new RegExp(`^${process.pid}\\n\\d+\\n.*\\nvrai recompute\\n$`));
      lock.release();
    }
  });

  it("is refused to another process while this one holds it: the child exits at once with the holder named", async () => {
    const dir = path.join(root, "two");
    const db = await createPgliteDb(dir, { holder: "vrai dev" });
    try {
      const script = `require(${JSON.stringify(path.join(__dirname, "data-dir.ts"))}).lockDataDir(${JSON.stringify(dir)}, "child")`;
      const child = spawn(process.execPath, ["--require", "tsx/cjs", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (chunk) => (stderr += chunk));
      const code = await new Promise((resolve) => child.once("exit", resolve));
      expect(code).to.not.equal(0);
      expect(stderr).to.include(`in use by vrai dev (pid ${process.pid}`);
    } finally {
      await db.close();
    }
  });
});
