import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { CLUSTER_CACHE, keptCluster, keptClusterFile, openPglite, type ClusterCache, type ClusterOrigin } from "./pglite-cluster";

/** How a cluster in `dataDir` was opened, once it answered a query and closed. */
async function openedBy(dataDir: string | undefined, cache: ClusterCache): Promise<ClusterOrigin> {
  const { lite, origin } = await openPglite(dataDir, cache);
  try {
    expect((await lite.query("SELECT 1 AS one")).rows).to.deep.equal([{ one: 1 }]);
    return origin;
  } finally {
    await lite.close();
  }
}

describe("new PGlite clusters unpacked from a kept empty one (issue #30)", () => {
  let dir: string;
  let cacheDir: string;
  /** How many clusters the cache under test made. */
  let made: number;
  /** A cache in `cacheDir` whose clusters are `files`, counted in `made`. */
  const cacheOf = (files: () => Promise<Blob>): ClusterCache => ({
    dir: cacheDir,
    name: "test-cluster",
    make: () => {
      made++;
      return files();
    },
  });
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-pglite-cluster-"));
    cacheDir = path.join(dir, "cache");
    made = 0;
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(
    "makes the empty cluster once and keeps it; new data directories are unpacked from it and keep their data " +
      "(three clusters unpacked, two opened again: 5-12 s)",
    async () => {
      // The files of a real empty cluster: the package cache's, made by initdb by the first process of a run that needs it.
      const cache = cacheOf(async () => (await keptCluster(CLUSTER_CACHE)).tar);
      const first = await openPglite(path.join(dir, "a"), cache);
      expect(first.origin).to.equal("made");
      await first.lite.exec("CREATE TABLE t (x int); INSERT INTO t VALUES (1)");
      await first.lite.close();
      const kept = keptClusterFile(cache);
      expect(fs.statSync(kept).mode & 0o777).to.equal(0o600);
      // Written whole and renamed into place: nothing partial beside it.
      expect(fs.readdirSync(cacheDir)).to.deep.equal([path.basename(kept)]);
      const keptBytes = fs.readFileSync(kept);

      const second = await openPglite(path.join(dir, "b"), cache);
      expect(second.origin).to.equal("unpacked");
      // A new cluster: nothing of the first directory's table, and a working one of its own.
      const tables = await second.lite.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
      expect(tables.rows).to.deep.equal([{ n: 0 }]);
      await second.lite.exec("CREATE TABLE u (y text); INSERT INTO u VALUES ('kept')");
      await second.lite.close();
      expect(fs.readFileSync(kept).equals(keptBytes), "the kept cluster is not rewritten").to.equal(true);

      // Both directories reopen as they were left, not unpacked again.
      const a = await openPglite(path.join(dir, "a"), cache);
      const b = await openPglite(path.join(dir, "b"), cache);
      try {
        expect([a.origin, b.origin]).to.deep.equal(["existing", "existing"]);
        expect((await a.lite.query("SELECT x FROM t")).rows).to.deep.equal([{ x: 1 }]);
        expect((await b.lite.query("SELECT y FROM u")).rows).to.deep.equal([{ y: "kept" }]);
      } finally {
        await a.lite.close();
        await b.lite.close();
      }
      // In memory too.
      expect(await openedBy(undefined, cache)).to.equal("unpacked");
      expect(made).to.equal(1);
    },
  );

  // openPglite opens what keptCluster gives, made or kept (the test above): these look at how keptCluster keeps it, with
  // a stand-in for a cluster's files, so that they take milliseconds.
  const standIn = Buffer.from("the files of an empty cluster, ".repeat(4096));
  const standInCache = () => cacheOf(async () => new Blob([standIn]));

  it("never unpacks a damaged file: it makes the cluster again and keeps it whole", async () => {
    const cache = standInCache();
    expect((await keptCluster(cache)).made).to.equal(true);
    const file = keptClusterFile(cache);
    const whole = fs.readFileSync(file);
    const damaged = {
      // One byte of the compressed data changed: gzip's CRC-32 no longer matches.
      altered: Buffer.concat([whole.subarray(0, 100), Buffer.from([whole[100] ^ 0xff]), whole.subarray(101)]),
      // Cut short, as a full disk leaves a file written in place (this one is renamed into place whole).
      truncated: whole.subarray(0, whole.length >> 1),
    };
    for (const [how, bytes] of Object.entries(damaged)) {
      fs.writeFileSync(file, bytes);
      const again = await keptCluster(cache);
      expect(again.made, how).to.equal(true);
      expect(Buffer.from(await again.tar.arrayBuffer()).equals(standIn), how).to.equal(true);
      expect(fs.readFileSync(file).equals(whole), `${how}: made again whole`).to.equal(true);
    }
    const kept = await keptCluster(cache);
    expect(kept.made).to.equal(false);
    expect(Buffer.from(await kept.tar.arrayBuffer()).equals(standIn)).to.equal(true);
    expect(made).to.equal(3);
  });

  it("still gives new clusters when nothing can be kept, and leaves no partial file", async () => {
    const cache = standInCache();
    // A directory where the kept file would be: the finished file cannot be renamed onto it.
    const file = keptClusterFile(cache);
    fs.mkdirSync(path.join(file, "in-the-way"), { recursive: true });
    for (const time of ["first", "second"]) expect((await keptCluster(cache)).made, time).to.equal(true);
    expect(made).to.equal(2);
    expect(fs.readdirSync(cacheDir)).to.deep.equal([path.basename(file)]);
  });
});
