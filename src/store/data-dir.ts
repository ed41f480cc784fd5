/**
 * The PGlite data directory (DATA_DIR) belongs to one process and to its user (issue #33).
 *
 * - One process: the first to open a directory writes `vrai.lock` in it, with its PID and the start
 *   time the kernel gives that PID (PostgreSQL's `postmaster.pid`), written whole beside it and linked
 *   into place, which fails if one is there: of processes started together, one takes it. Another process
 *   finds it and is refused with a `DataDirInUseError` naming the holder; a lock whose process is gone
 *   (or whose PID now belongs to a process that started later) is stale and taken over. The lock is
 *   removed when the store closes, and when the process exits.
 * - Its user: the directory is created 0700. One that other users can enter or read (left by an older
 *   version, or made by hand) is made private at open: directories 0700, files 0600, and the caller
 *   is told what it was. PGlite itself creates its files 0666 whatever the umask, so the tree is made
 *   private again when the store closes; in between, a new file is reachable only through 0700 directories.
 */
import fs from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors";

/** The lock file's name inside the data directory. */
export const LOCK_FILE = "vrai.lock";

/** Who holds a data directory: what the lock file says. */
export type DataDirHolder = { pid: number; startTime: string; command: string; since: string };

/** Another live process holds the directory: exit 2 with one line (CLI), naming it and what to do. */
export class DataDirInUseError extends InvalidInputError {
  constructor(readonly dir: string, readonly holder: DataDirHolder) {
    super(
      "data_dir_in_use",
      `data directory ${dir} is in use by ${holder.command || "another vrai process"} (pid ${holder.pid}, since ${holder.since}): ` +
        "PGlite belongs to one process; stop that one first (Ctrl-C where it runs, or kill " +
        `${holder.pid}), or make the change through its HTTP API`,
    );
  }
}

/** An open data directory: release it when the store closes. */
export type DataDirLock = {
  /** The directory's mode before it was made private, when it was open to others (e.g. 0o755); null otherwise. */
  madePrivate: number | null;
  /** Makes the tree private now (directories 0700, files 0600): after PGlite has created its files. */
  secure(): void;
  /** Makes the tree private again and removes the lock (once). */
  release(): void;
};

/** The kernel's start time of a process (`/proc/<pid>/stat`, field 22), or "" where there is no /proc. */
function startTimeOf(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command (field 2) is in parentheses and may hold spaces: fields are counted after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

/** Whether `holder` is a live process: its PID answers and, where /proc tells, started when the lock says. */
function isAlive(holder: DataDirHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: alive, another user's.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const now = startTimeOf(holder.pid);
  return holder.startTime === "" || now === "" || now === holder.startTime;
}

/** What a lock file says, or null when it is missing or not one (a torn write is treated as stale). */
function readHolder(file: string): DataDirHolder | null {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
  const [pid, startTime, since, ...command] = text.split("\n");
  if (!/^[1-9]\d*$/.test(pid ?? "")) return { pid: 0, startTime: "", command: "", since: "" };
  return { pid: Number(pid), startTime: startTime ?? "", since: since ?? "", command: command.join(" ").trim() };
}

/** The live process holding `dir`, or null when none does (no lock, or a stale one). */
export function dataDirHolder(dir: string): DataDirHolder | null {
  const holder = readHolder(path.join(dir, LOCK_FILE));
  return holder !== null && holder.pid !== 0 && isAlive(holder) ? holder : null;
}

/** Directories 0700 and files 0600 in `dir`'s tree, `dir` included. */
function makePrivate(dir: string): void {
  fs.chmodSync(dir, 0o700);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const entryPath = path.join(dir, entry.name);
    if (entry.isDirectory()) makePrivate(entryPath);
    else if (entry.isFile()) fs.chmodSync(entryPath, 0o600);
  }
}

/** A lock's text for this process. */
function lockText(command: string): string {
  return `${process.pid}\n${startTimeOf(process.pid)}\n${new Date().toISOString().replace(/\.\d+Z$/, "Z")}\n${command}\n`;
}

/**
 * Creates `file` with `text`, or returns false when it exists. Written aside and linked into place, so
 * that another process never reads it half-written (which would look like a stale lock to take over).
 */
function createWhole(file: string, text: string): boolean {
  const aside = `${file}.${process.pid}`;
  fs.writeFileSync(aside, text, { mode: 0o600 });
  try {
    fs.linkSync(aside, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return false;
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

/**
 * Removes the stale lock `file` said `stale`: moved aside first, and put back if what was moved is not it
 * (another process took it over between the read and the move).
 */
function takeOver(file: string, stale: DataDirHolder): void {
  const aside = `${file}.${process.pid}.stale`;
  try {
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    if (JSON.stringify(readHolder(aside)) !== JSON.stringify(stale)) fs.linkSync(aside, file);
  } catch {
    // Yet another process has a lock in place by now: it holds the directory.
  } finally {
    fs.rmSync(aside, { force: true });
  }
}

/**
 * Opens `dir` for this process alone: creates it 0700 (or makes it private, see the module's note),
 * then takes its lock.
 * @param command what holds it, as another process's refusal names it (e.g. "vrai dev")
 * @throws DataDirInUseError when a live process holds it
 */
export function lockDataDir(dir: string, command: string): DataDirLock {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const mode = fs.statSync(dir).mode & 0o777;
  const madePrivate = (mode & 0o077) === 0 ? null : mode;
  if (madePrivate !== null) makePrivate(dir);

  const file = path.join(dir, LOCK_FILE);
  const text = lockText(command);
  for (let attempt = 0; !createWhole(file, text); attempt++) {
    const holder = readHolder(file);
    if (holder !== null && holder.pid !== 0 && isAlive(holder)) throw new DataDirInUseError(dir, holder);
    if (attempt >= 3) throw new Error(`${file}: a stale lock came back three times; remove it once no vrai command runs on ${dir}`);
    // Stale (or gone since the try): taken over, then tried again.
    if (holder !== null) takeOver(file, holder);
  }

  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off("exit", release);
    try {
      if (fs.readFileSync(file, "utf8") === text) fs.rmSync(file);
      makePrivate(dir);
    } catch {
      // The directory went away with the process's work: nothing left to lock or make private.
    }
  };
  process.on("exit", release);
  return { madePrivate, secure: () => makePrivate(dir), release };
}
