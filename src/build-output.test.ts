import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { writeBuiltFiles } from "./build-output";

describe("writeBuiltFiles", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "vrai-build-output-"));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("creates a file and its directory, leaves a file with the same bytes untouched and replaces a changed one by a new file", () => {
    const file = path.join(dir, "dist", "a.js");
    writeBuiltFiles([{ path: file, contents: Buffer.from("one") }]);
    expect(fs.readFileSync(file, "utf8")).to.equal("one");
    const first = fs.statSync(file).ino;

    writeBuiltFiles([{ path: file, contents: Buffer.from("one") }]);
    expect(fs.statSync(file).ino, "the same bytes: not written again").to.equal(first);

    // A reader holding the old file keeps reading it whole: the new bytes arrive as another file renamed over it.
    const reader = fs.openSync(file, "r");
    writeBuiltFiles([{ path: file, contents: Buffer.from("two!") }]);
    expect(fs.readFileSync(file, "utf8")).to.equal("two!");
    expect(fs.statSync(file).ino).to.not.equal(first);
    const old = Buffer.alloc(8);
    expect(old.toString("utf8", 0, fs.readSync(reader, old, 0, 8, 0))).to.equal("one");
    fs.closeSync(reader);
    expect(fs.readdirSync(path.dirname(file)), "no temporary file left").to.deep.equal(["a.js"]);
  });
});
