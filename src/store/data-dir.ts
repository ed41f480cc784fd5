/**
 * The PGlite data directory (DATA_DIR) belongs to one process and to its user (issue #33).
 *
 * - One process: the first to open a directory writes `vrai.lock` in it, with its PID and the start
 *   time the kernel gives that PID (PostgreSQL's `postmaster.pid`), written whole beside it and linked
 *   into place, which fails if one is there: of processes started together, one takes it. Another process
 *   finds it and is refused with a `DataDirInUseError` naming the holder; a lock whose process is gone
 *   (or whose PID now belongs to a process that started later) is stale and taken over. The lock is
 *   removed when the store closes, and when the process exits.
 * - Its user: the directory is created 0700. Vrai changes the permissions only of a directory that is
 *   recognisably its own: owned by this user, and empty or holding PGlite's cluster (`PG_VERSION`) or
 *   what vrai writes there (`DATA_DIR_FILES`). One that is, but that other users can enter or read (left by
 *   an older version, or made by hand), is made private at open: directories 0700, files 0600, and the
 *   caller is told what it was. Any other directory is refused with a `DataDirRefusedError` naming it, its
 *   mode and what to do, and nothing in it is touched: DATA_DIR=$HOME must not rewrite a home's modes. A
 *   file system refusal (no access, another user's file) is such a line too, never an internal error.
 *   PGlite itself creates its files 0666 whatever the umask, so the tree is made private again when the
 *   store closes; in between, a new file is reachable only through 0700 directories.
 */
import fs from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors";

/** What vrai writes in a data directory besides PGlite's cluster, by name. */
export const DATA_DIR_FILES = Object.freeze({
  lock: "vrai.lock",
  /** `vrai dev`'s operator token. */
  operatorToken: "operator-token",
  /** `vrai dev`'s chain journal. */
  chainJournal: "chain.jsonl",
  /** `vrai dev`'s development clock. */
  devClock: "dev-clock.json",
});

/** The lock file's name inside the data directory. */
export const LOCK_FILE = DATA_DIR_FILES.lock;

/** A name only a Vrai data directory holds: PGlite's cluster (as any PostgreSQL data directory) or vrai's own files. */
const OWN_NAMES: ReadonlySet<string> = new Set(["PG_VERSION", ...Object.values(DATA_DIR_FILES)]);

/** Who holds a data directory: what the lock file says. */
export type DataDirHolder = { pid: number; startTime: string; command: string; since: string };

/** Another live process holds the directory: exit 2 with one line (CLI), naming it and what to do. */
export class DataDirInUseError extends InvalidInputError {
  constructor(
    readonly dir: string,
    readonly holder: DataDirHolder,
  ) {
    super(
      "data_dir_in_use",
      `data directory ${dir} is in use by ${holder.command || "another vrai process"} (pid ${holder.pid}, since ${holder.since}): ` +
        "PGlite belongs to one process; stop that one first (Ctrl-C where it runs, or kill " +
        `${holder.pid}), or make the change through its HTTP API`,
    );
  }
}

/** A directory vrai will not use or change as it is: exit 2 with one line (CLI) naming it, its mode and what to do. */
export class DataDirRefusedError extends InvalidInputError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("data_dir_refused", message, options);
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

/**
 * Directories 0700 and files 0600 in `dir`'s tree, `dir` included. What is another user's and not so
 * already stops it before anything is changed, with the error chmod would have given (EPERM, its path).
 */
function makePrivate(dir: string): void {
  const uid = process.getuid?.();
  const changes: Array<[string, number]> = [];
  const visit = (where: string, wanted: number) => {
    const stat = fs.lstatSync(where);
    if ((stat.mode & 0o777) !== wanted) {
      if (uid !== undefined && stat.uid !== uid)
        throw Object.assign(new Error(`EPERM: operation not permitted, chmod '${where}'`), { code: "EPERM", path: where });
      changes.push([where, wanted]);
    }
    if (wanted !== 0o700) return;
    for (const entry of fs.readdirSync(where, { withFileTypes: true })) {
      if (entry.isDirectory()) visit(path.join(where, entry.name), 0o700);
      else if (entry.isFile()) visit(path.join(where, entry.name), 0o600);
    }
  };
  visit(dir, 0o700);
  for (const [where, mode] of changes) fs.chmodSync(where, mode);
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

const octal = (mode: number): string => mode.toString(8).padStart(4, "0");

/** What the system's refusal `error` means, in words; undefined for an error that is not one of the file system's refusals. */
const REFUSALS: Readonly<Record<string, string>> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted (another user's)",
  EROFS: "read-only file system",
  ENOTDIR: "a part of the path is not a directory",
  EEXIST: "it is a file, not a directory",
};

/**
 * `error` as one line when the file system refused something (exit 2: the directory is the user's to fix
 * or change), `line` given what was refused and why; any other error as it is.
 */
function refusal(error: unknown, line: (refused: string) => string): unknown {
  const { code, path: where } = error as NodeJS.ErrnoException;
  const what = REFUSALS[code ?? ""];
  return what === undefined ? error : new DataDirRefusedError(line(`${where === undefined ? "" : `${where}: `}${what}`), { cause: error });
}

/** What to do about a directory vrai cannot use as it is. */
const ELSEWHERE = "set DATA_DIR to a directory of your own";

/**
 * Makes `dir` this user's data directory, or refuses it (see the module's note): created 0700 when
 * missing; refused when it belongs to another user or holds something else; made private when it is
 * recognisably a Vrai data directory that others can reach.
 * @returns its mode before, when it was made private; null when it was private already
 * @throws DataDirRefusedError naming it, its mode and what to do
 */
function claimDataDir(dir: string): number | null {
  let stat: fs.Stats;
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    stat = fs.statSync(dir);
  } catch (error) {
    throw refusal(error, (refused) => `cannot create data directory ${dir}: ${refused}: ${ELSEWHERE}`);
  }
  const mode = stat.mode & 0o777;
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new DataDirRefusedError(
      `data directory ${dir} (mode ${octal(mode)}) belongs to uid ${stat.uid}, not to this user (uid ${uid}): vrai keeps its store only in a directory ` +
        `of the user it runs as, and changes nothing in another's; run vrai as uid ${stat.uid}, or ${ELSEWHERE}`,
    );
  }
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (error) {
    throw refusal(
      error,
      (refused) => `cannot read data directory ${dir} (mode ${octal(mode)}): ${refused}: run vrai as its owner, or ${ELSEWHERE}`,
    );
  }
  if (names.length > 0 && !names.some((name) => OWN_NAMES.has(name))) {
    const some = names.slice(0, 3).join(", ") + (names.length > 3 ? ", ..." : "");
    throw new DataDirRefusedError(
      `data directory ${dir} (mode ${octal(mode)}) is not a Vrai data directory: it holds other files (${some}) and no PG_VERSION or ${LOCK_FILE}; ` +
        "vrai changes nothing in it: set DATA_DIR to a new or empty directory",
    );
  }
  if ((mode & 0o077) === 0) return null;
  try {
    makePrivate(dir);
  } catch (error) {
    throw refusal(
      error,
      (refused) =>
        `data directory ${dir} (mode ${octal(mode)}) is open to other users and cannot be made private: ${refused}: as the owner of its files, ` +
        `chmod -R go-rwx ${dir}, or ${ELSEWHERE}`,
    );
  }
  return mode;
}

/**
 * Opens `dir` for this process alone: creates it 0700 (or makes it private, or refuses it: see the
 * module's note), then takes its lock.
 * @param command what holds it, as another process's refusal names it (e.g. "vrai dev")
 * @throws DataDirInUseError when a live process holds it
 * @throws DataDirRefusedError when it is not this user's or not a Vrai data directory, or the file system refuses
 */
export function lockDataDir(dir: string, command: string): DataDirLock {
  const madePrivate = claimDataDir(dir);
  const file = path.join(dir, LOCK_FILE);
  const text = lockText(command);
  const create = () => {
    try {
      return createWhole(file, text);
    } catch (error) {
      throw refusal(
        error,
        (refused) => `cannot write the lock of data directory ${dir}: ${refused}: run vrai as its owner, or ${ELSEWHERE}`,
      );
    }
  };
  for (let attempt = 0; !create(); attempt++) {
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
  const secure = () => {
    try {
      makePrivate(dir);
    } catch (error) {
      throw refusal(error, (refused) => `cannot make data directory ${dir} private: ${refused}: run vrai as its owner, or ${ELSEWHERE}`);
    }
  };
  return { madePrivate, secure, release };
}
