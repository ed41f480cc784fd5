/**
 * New PGlite clusters unpacked from one made before (issue #30). PGlite's initdb runs inside WebAssembly: 5 s on this
 * machine when quiet, 8 s under load, at every `vrai dev` or `vrai serve` on a new data directory or in memory.
 * Unpacking the files of an empty cluster made earlier takes 1 s. So the first new cluster of an installation is made
 * by initdb (in memory) and its files are kept, gzipped, in `node_modules/.cache/vrai/`; every later new cluster is
 * unpacked from them. The file is named by PGlite's version, whose initdb made it, and written whole, then renamed
 * into place, so that two processes making it at once each leave a whole file. Its gzip checksum is checked before a
 * byte of it reaches a data directory: a damaged file is made again, never unpacked. It holds no secret: an empty
 * cluster, with PGlite's trust authentication.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { PGlite } from "@electric-sql/pglite";
import { findPackageDir, PROJECT_ROOT } from "../project-root";

/** Where the empty cluster is kept: the package's own cache directory, removed with its `node_modules`. */
export const CLUSTER_CACHE_DIR = path.join(PROJECT_ROOT, "node_modules", ".cache", "vrai");

/**
 * PGlite's version, which names the file: another version's initdb may lay its files out otherwise. Read from its
 * package.json, found above its entry point (PGlite's `exports` do not list package.json).
 */
const PGLITE_VERSION = (() => {
  const dir = findPackageDir(path.dirname(require.resolve("@electric-sql/pglite")), "@electric-sql/pglite");
  return (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version;
})();

/** How a cluster was opened: an existing data directory's, unpacked from the kept empty cluster, or made first (initdb). */
export type ClusterOrigin = "existing" | "unpacked" | "made";

/** Where the empty cluster is kept, and how it is made when it is not there (`makeByInitdb`). */
export type ClusterCache = { dir: string; make(): Promise<Blob> };

/** A new cluster's files, made by PGlite's initdb in memory and dumped (a tar). */
async function makeByInitdb(): Promise<Blob> {
  const lite = await PGlite.create();
  try {
    return await lite.dumpDataDir("none");
  } finally {
    await lite.close();
  }
}

/** The package's cache: `node_modules/.cache/vrai/`, filled by initdb. */
export const CLUSTER_CACHE: ClusterCache = Object.freeze({ dir: CLUSTER_CACHE_DIR, make: makeByInitdb });

/** The file of the kept empty cluster in `cacheDir`. */
export function emptyClusterFile(cacheDir: string = CLUSTER_CACHE_DIR): string {
  return path.join(cacheDir, `empty-cluster-pglite-${PGLITE_VERSION}.tar.gz`);
}

/**
 * The files of an empty cluster (PGlite's `dumpDataDir` tar, uncompressed), and whether they were kept or made now.
 * Made (`cache.make`) when the kept file is missing or damaged, then kept; a cache that cannot be written (a
 * read-only installation) only costs the next new cluster another initdb.
 */
export async function emptyCluster(cache: ClusterCache = CLUSTER_CACHE): Promise<{ tar: Blob; made: boolean }> {
  const file = emptyClusterFile(cache.dir);
  try {
    // gunzip checks the gzip trailer's CRC-32 and length: a truncated or altered file throws here.
    return { tar: new Blob([zlib.gunzipSync(fs.readFileSync(file))]), made: false };
  } catch {
    // missing, unreadable or damaged: made again below
  }
  const tar = await cache.make();
  const partial = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}`;
  try {
    fs.mkdirSync(cache.dir, { recursive: true });
    fs.writeFileSync(partial, zlib.gzipSync(Buffer.from(await tar.arrayBuffer())), { mode: 0o600 });
    fs.renameSync(partial, file);
  } catch {
    // not kept: the next new cluster is made again
    fs.rmSync(partial, { force: true });
  }
  return { tar, made: true };
}

/**
 * Opens PGlite on `dataDir` (in memory when undefined). A directory holding a cluster (`PG_VERSION`) is opened as it
 * is; a new one, or memory, gets a new empty cluster unpacked from `emptyCluster`.
 */
export async function openPglite(
  dataDir: string | undefined,
  cache: ClusterCache = CLUSTER_CACHE,
): Promise<{ lite: PGlite; origin: ClusterOrigin }> {
  if (dataDir !== undefined && fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
    return { lite: await PGlite.create(dataDir), origin: "existing" };
  }
  const { tar, made } = await emptyCluster(cache);
  const lite = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), loadDataDir: tar });
  return { lite, origin: made ? "made" : "unpacked" };
}
