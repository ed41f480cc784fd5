import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import semver from "semver";

const ROOT = path.resolve(__dirname, "..");
const manifest = (file: string) => JSON.parse(fs.readFileSync(path.join(ROOT, file), "utf8")) as { engines?: { node?: string } };

type Locked = { version?: string; engines?: { node?: string } | string[]; optional?: boolean };

/** The lowest Node version the project supports (package.json `engines`, e.g. `>=20.19` gives 20.19.0). */
const lowestNode = semver.minVersion(manifest("package.json").engines?.node ?? "")!.version;

describe("install (issue #31)", () => {
  it("supports Node 20: the project and @vrai/sdk ask for Node >= 20.19", () => {
    expect(lowestNode).to.equal("20.19.0");
    expect(semver.minVersion(manifest("packages/sdk/package.json").engines?.node ?? "")?.version).to.equal(lowestNode);
  });

  // npm warns EBADENGINE for each installed package whose `engines.node` the running Node does not satisfy:
  // none may refuse the lowest supported Node, nor this one (canonicalize 5.x said >= 22).
  it("npm install warns of no engine: every package in package-lock.json accepts Node 20.19 and the running Node", () => {
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, Locked> };
    const refused: string[] = [];
    for (const [where, locked] of Object.entries(lock.packages)) {
      const range = Array.isArray(locked.engines) ? undefined : locked.engines?.node;
      if (range === undefined || where === "") continue;
      for (const node of [lowestNode, process.version]) {
        if (!semver.satisfies(node, range, { includePrerelease: true }))
          refused.push(`${where}@${locked.version}: engines.node ${range} refuses ${node}`);
      }
    }
    expect(Object.keys(lock.packages)).to.include("node_modules/canonicalize");
    expect(refused).to.deep.equal([]);
  });
});
