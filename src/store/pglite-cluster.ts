/**
 * New PGlite clusters unpacked from one made before (issue #30). PGlite's initdb runs inside WebAssembly: 5 s on this
 * machine when quiet, 8 s under load, at every `vrai dev` or `vrai serve` on a new data directory or in memory.
 * Unpacking the files of a cluster made earlier takes 1 s. So the first new cluster of an installation is made (in
 * memory) and its files are kept, gzipped, in `node_modules/.cache/vrai/`; every later new cluster is unpacked from
 * them. Two are kept: an empty cluster (initdb's), which tests start their databases from, and a new store (that
 * cluster with every migration applied, `src/store/db.ts`), which a new data directory or memory store starts from.
 * Each file is named by what made it (PGlite's version; the migrations' digest) and written whole, then renamed into
 * place, so that two processes making it at once each leave a whole file. Its gzip checksum is checked before a byte
 * of it reaches a data directory: a damaged file is made again, never unpacked. It holds no secret: an empty cluster,
 * or an empty store, with PGlite's trust authentication.
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

/** How a cluster was opened: an existing data directory's, unpacked from a kept cluster, or unpacked from one made first. */
export type ClusterOrigin = "existing" | "unpacked" | "made";

/** Where a cluster is kept, the name of its file there (without `.tar.gz`), and how it is made when it is not there. */
export type ClusterCache = { dir: string; name: string; make(): Promise<Blob> };

/** A new cluster's files, made by PGlite's initdb in memory and dumped (a tar). */
async function makeByInitdb(): Promise<Blob> {
  const lite = await PGlite.create();
  try {
    return await lite.dumpDataDir("none");
  } finally {
    await lite.close();
  }
}

/** The empty cluster in the package's cache, `node_modules/.cache/vrai/`, made by initdb. */
export const CLUSTER_CACHE: ClusterCache = Object.freeze({
  dir: CLUSTER_CACHE_DIR,
  name: `empty-cluster-pglite-${PGLITE_VERSION}`,
  make: makeByInitdb,
});

/** A cluster of the package's cache made from the empty one by `change` (run on it in memory), named `name` and PGlite's version. */
export function derivedClusterCache(name: string, change: (lite: PGlite) => Promise<void>): ClusterCache {
  return Object.freeze({
    dir: CLUSTER_CACHE_DIR,
    name: `${name}-pglite-${PGLITE_VERSION}`,
    async make() {
      const lite = await PGlite.create({ loadDataDir: (await keptCluster()).tar });
      try {
        await change(lite);
        return await lite.dumpDataDir("none");
      } finally {
        await lite.close();
      }
    },
  });
}

/** The file of `cache`'s kept cluster. */
export function keptClusterFile(cache: ClusterCache): string {
  return path.join(cache.dir, `${cache.name}.tar.gz`);
}

/**
 * The files of `cache`'s cluster (PGlite's `dumpDataDir` tar, uncompressed; by default the empty one), and whether they
 * were kept or made now. Made (`cache.make`) when the kept file is missing or damaged, then kept; a cache that cannot be
 * written (a read-only installation) only costs the next new cluster another making.
 */
export async function keptCluster(cache: ClusterCache = CLUSTER_CACHE): Promise<{ tar: Blob; made: boolean }> {
  const file = keptClusterFile(cache);
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
 * is; a new one, or memory, gets a new cluster unpacked from `cache`'s (by default the empty one).
 */
export async function openPglite(
  dataDir: string | undefined,
  cache: ClusterCache = CLUSTER_CACHE,
): Promise<{ lite: PGlite; origin: ClusterOrigin }> {
  if (dataDir !== undefined && fs.existsSync(path.join(dataDir, "PG_VERSION"))) {
    return { lite: await PGlite.create(dataDir), origin: "existing" };
  }
  const { tar, made } = await keptCluster(cache);
  const lite = await PGlite.create({ ...(dataDir === undefined ? {} : { dataDir }), loadDataDir: tar });
  return { lite, origin: made ? "made" : "unpacked" };
}
