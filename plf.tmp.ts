import { PGlite } from "@electric-sql/pglite";
import fs from "node:fs";
async function main() {
  for (let i = 0; i < 2; i++) {
    fs.rmSync("/tmp/plf", { recursive: true, force: true });
    let t = performance.now();
    const a = await PGlite.create("/tmp/plf");
    await a.close();
    const disk = performance.now() - t;
    fs.rmSync("/tmp/plf", { recursive: true, force: true });
    t = performance.now();
    const mem = await PGlite.create();
    const t1 = performance.now();
    const blob = await mem.dumpDataDir("none");
    const t2 = performance.now();
    await mem.close();
    const b = await PGlite.create("/tmp/plf", { loadDataDir: blob });
    await b.close();
    console.log(
      "disk initdb",
      Math.round(disk),
      "| mem initdb",
      Math.round(t1 - t),
      "dump",
      Math.round(t2 - t1),
      "load",
      Math.round(performance.now() - t2),
    );
  }
}
main();
