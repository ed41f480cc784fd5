import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { dataDirHolder, DataDirInUseError, DataDirRefusedError, LOCK_FILE, lockDataDir } from "./data-dir";
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

/** The modes of `modes(dir)` as an object, to compare before and after. */
const modeMap = (dir: string) => Object.fromEntries(modes(dir));

const BIN = path.resolve(__dirname, "../../bin/vrai.js");
/** A user other than this test's, for what another user's files and directories do (the test runs as root, which can make them). */
const NOBODY = 65534;

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

  it(
    "is created 0700 with every file 0600, the lock file and PGlite's own included, and stays so after " +
      "the store closes (opens PGlite on disk: 4-13 s)",
    async () => {
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
    },
  );

  it(
    "makes a directory other users can read private at open, files included, and says what it was (opens " +
      "PGlite stores and runs the CLI: 5-20 s)",
    async () => {
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
    },
  );

  it("refuses a directory that is not a Vrai data directory, open to others or not, and changes nothing in it (DATA_DIR=$HOME)", async () => {
    const home = path.join(root, "home");
    fs.mkdirSync(path.join(home, "bin"), { recursive: true });
    fs.writeFileSync(path.join(home, ".bashrc"), "# mine\n");
    fs.writeFileSync(path.join(home, "bin", "tool"), "#!/bin/sh\n");
    fs.chmodSync(home, 0o755);
    fs.chmodSync(path.join(home, "bin"), 0o755);
    fs.chmodSync(path.join(home, ".bashrc"), 0o644);
    fs.chmodSync(path.join(home, "bin", "tool"), 0o755);
    for (const mode of [0o755, 0o700]) {
      fs.chmodSync(home, mode);
      const before = modeMap(home);
      expect(() => lockDataDir(home, "vrai serve")).to.throw(
        DataDirRefusedError,
        `data directory ${home} (mode 0${mode.toString(8)}) is not a Vrai data directory: ` +
          "it holds other files (.bashrc, bin) and no PG_VERSION or vrai.lock; " +
          "vrai changes nothing in it: set DATA_DIR to a new or empty directory",
      );
      let opened = false;
      await createPgliteDb(home).then(
        async (db) => {
          opened = true;
          await db.close();
        },
        (error: unknown) => expect(error).to.be.instanceOf(DataDirRefusedError),
      );
      expect(opened).to.equal(false);
      expect(modeMap(home)).to.deep.equal(before);
      expect(fs.readdirSync(home).sort()).to.deep.equal([".bashrc", "bin"]);
    }
  });

  it("makes an empty directory open to others private, and takes it", () => {
    const dir = path.join(root, "empty");
    fs.mkdirSync(dir);
    fs.chmodSync(dir, 0o775);
    const lock = lockDataDir(dir, "vrai serve");
    lock.release();
    expect(lock.madePrivate).to.equal(0o775);
    expect(modeMap(dir)).to.deep.equal({ ".": "700" });
  });

  it("refuses a Vrai data directory that belongs to another user, and changes nothing in it", () => {
    // As root, a directory given to another user; as anyone else, one that is root's.
    const dir = process.getuid!() === 0 ? path.join(root, "theirs") : "/";
    if (dir !== "/") {
      fs.mkdirSync(dir, { mode: 0o755 });
      fs.writeFileSync(path.join(dir, "PG_VERSION"), "16\n", { mode: 0o644 });
      fs.chmodSync(dir, 0o755);
      fs.chownSync(dir, NOBODY, NOBODY);
    }
    const { uid } = fs.statSync(dir);
    const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8);
    expect(() => lockDataDir(dir, "vrai serve")).to.throw(
      DataDirRefusedError,
      new RegExp(
        `^data directory ${dir} \\(mode 0755\\) belongs to uid ${uid}, not to this user \\(uid ${process.getuid!()}\\): ` +
          `.* run vrai as uid ${uid}, or set DATA_DIR to a directory of your own$`,
      ),
    );
    expect(modeOf(dir)).to.equal("755");
    if (dir !== "/") expect([modeOf(path.join(dir, "PG_VERSION")), fs.readdirSync(dir)]).to.deep.equal(["644", ["PG_VERSION"]]);
  });

  it(
    "says in one line (exit 2), never as an internal error, what the file system refused: " +
      "a file of another user in a directory to make private, another user's directory, a directory it cannot create",
    () => {
      // Run as another user than root (root is refused nothing), on what root made for it.
      if (process.getuid!() !== 0) throw new Error("this test makes files of another user: it runs as root");
      fs.chmodSync(root, 0o755);
      const loose = path.join(root, "loose");
      fs.mkdirSync(path.join(loose, "base"), { recursive: true });
      fs.writeFileSync(path.join(loose, "PG_VERSION"), "16\n");
      fs.writeFileSync(path.join(loose, "base", "roots"), "x");
      fs.chmodSync(path.join(loose, "base", "roots"), 0o644);
      for (const own of [loose, path.join(loose, "PG_VERSION"), path.join(loose, "base")]) fs.chownSync(own, NOBODY, NOBODY);
      fs.chmodSync(loose, 0o755);
      const roots = path.join(root, "roots");
      fs.mkdirSync(roots, { mode: 0o755 });
      fs.writeFileSync(path.join(roots, "PG_VERSION"), "16\n");
      fs.chmodSync(roots, 0o755);
      const before = [modeMap(loose), modeMap(roots)];
      const cases: Array<[string, string]> = [
        [
          loose,
          `vrai operator: data directory ${loose} (mode 0755) is open to other users and cannot be made private: ` +
            `${path.join(loose, "base", "roots")}: operation not permitted (another user's): ` +
            `as the owner of its files, chmod -R go-rwx ${loose}, or set DATA_DIR to a directory of your own\n`,
        ],
        [
          roots,
          `vrai operator: data directory ${roots} (mode 0755) belongs to uid 0, not to this user (uid ${NOBODY}): ` +
            "vrai keeps its store only in a directory of the user it runs as, and changes nothing in another's; " +
            "run vrai as uid 0, or set DATA_DIR to a directory of your own\n",
        ],
        [
          path.join(roots, "data"),
          `vrai operator: cannot create data directory ${path.join(roots, "data")}: ${path.join(roots, "data")}: permission denied: ` +
            "set DATA_DIR to a directory of your own\n",
        ],
      ];
      const { DATABASE_URL: _url, DATA_DIR: _dir, ...env } = process.env;
      for (const [dataDir, line] of cases) {
        const run = spawnSync(process.execPath, [BIN, "operator", "add", "carol"], {
          uid: NOBODY,
          gid: NOBODY,
          env: { ...env, DATA_DIR: dataDir },
          encoding: "utf8",
        });
        expect([run.status, run.stderr, run.stdout], dataDir).to.deep.equal([2, line, ""]);
      }
      expect([modeMap(loose), modeMap(roots)]).to.deep.equal(before);
    },
  );

  it("refuses a second opening while the first holds it, naming the holder's PID, and opens again once it is released", () => {
    const dir = path.join(root, "held");
    const lock = lockDataDir(dir, "vrai serve");
    try {
      expect(() => lockDataDir(dir, "vrai operator add")).to.throw(
        DataDirInUseError,
        new RegExp(`in use by vrai serve \\(pid ${process.pid}, since \\d{4}-`),
      );
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

  it(
    "is refused to another process while this one holds it: the child exits at once with the holder " +
      "named (a child process opening PGlite: 4-13 s)",
    async () => {
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
    },
  );
});
