import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { expect } from "chai";
import { emptyCluster, emptyClusterFile, openPglite, type ClusterOrigin } from "./pglite-cluster";

/** How a cluster in `dataDir` was opened, once it answered a query and closed. */
async function openedBy(dataDir: string, cacheDir: string): Promise<ClusterOrigin> {
  const { lite, origin } = await openPglite(dataDir, cacheDir);
  try {
    expect((await lite.query("SELECT 1 AS one")).rows).to.deep.equal([{ one: 1 }]);
    return origin;
  } finally {
    await lite.close();
  }
}

describe("new PGlite clusters unpacked from a kept empty one (issue #30)", function () {
  // The first new cluster of a cache runs initdb in memory: 5-8 s.
  this.timeout(120_000);
  let dir: string;
  let cacheDir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-pglite-cluster-"));
    cacheDir = path.join(dir, "cache");
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("makes the empty cluster once by initdb and keeps it; new data directories are unpacked from it and keep their data (initdb once, then three clusters unpacked: 8-15 s)", async () => {
    const first = await openPglite(path.join(dir, "a"), cacheDir);
    expect(first.origin).to.equal("initdb");
    await first.lite.exec("CREATE TABLE t (x int); INSERT INTO t VALUES (1)");
    await first.lite.close();
    const kept = emptyClusterFile(cacheDir);
    expect(fs.statSync(kept).mode & 0o777).to.equal(0o600);
    // Written whole and renamed into place: nothing partial beside it.
    expect(fs.readdirSync(cacheDir)).to.deep.equal([path.basename(kept)]);
    const keptBytes = fs.readFileSync(kept);

    const second = await openPglite(path.join(dir, "b"), cacheDir);
    expect(second.origin).to.equal("unpacked");
    // A new cluster: nothing of the first directory's table, and a working one of its own.
    const tables = await second.lite.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
    expect(tables.rows).to.deep.equal([{ n: 0 }]);
    await second.lite.exec("CREATE TABLE u (y text); INSERT INTO u VALUES ('kept')");
    await second.lite.close();
    expect(fs.readFileSync(kept).equals(keptBytes), "the kept cluster is not rewritten").to.equal(true);

    // Both directories reopen as they were left, not unpacked again.
    const a = await openPglite(path.join(dir, "a"), cacheDir);
    const b = await openPglite(path.join(dir, "b"), cacheDir);
    try {
      expect([a.origin, b.origin]).to.deep.equal(["existing", "existing"]);
      expect((await a.lite.query("SELECT x FROM t")).rows).to.deep.equal([{ x: 1 }]);
      expect((await b.lite.query("SELECT y FROM u")).rows).to.deep.equal([{ y: "kept" }]);
    } finally {
      await a.lite.close();
      await b.lite.close();
    }

    // In memory too.
    const memory = await openPglite(undefined, cacheDir);
    try {
      expect(memory.origin).to.equal("unpacked");
      expect((await memory.lite.query("SELECT 1 AS one")).rows).to.deep.equal([{ one: 1 }]);
    } finally {
      await memory.lite.close();
    }
  });

  it("never unpacks a damaged file, makes it again by initdb, and still opens new clusters when nothing can be kept (initdb twice: 10-16 s)", async () => {
    const file = emptyClusterFile(cacheDir);
    fs.mkdirSync(cacheDir);
    // A kept cluster with one byte of its compressed data changed: gzip's CRC-32 no longer matches.
    const whole = zlib.gzipSync(Buffer.alloc(64 * 1024, 1));
    fs.writeFileSync(file, Buffer.concat([whole.subarray(0, 20), Buffer.from([whole[20] ^ 0xff]), whole.subarray(21)]));
    expect(await openedBy(path.join(dir, "a"), cacheDir)).to.equal("initdb");
    // Made again whole: the next one is unpacked from it.
    expect(zlib.gunzipSync(fs.readFileSync(file)).length).to.be.greaterThan(1_000_000);
    expect((await emptyCluster(cacheDir)).made).to.equal(false);

    // A file where the cache directory would be: nothing can be kept, each new cluster is made by initdb.
    fs.rmSync(cacheDir, { recursive: true });
    fs.writeFileSync(cacheDir, "not a directory");
    expect(await openedBy(path.join(dir, "b"), cacheDir)).to.equal("initdb");
    expect(fs.readFileSync(cacheDir, "utf8")).to.equal("not a directory");
  });
});
