import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { PROJECT_ROOT } from "../../project-root";
import { METHOD_VERSIONS, METHODS } from "./methods";

/** The seed's page of the method, beside the clone (as the RFC 8785 vectors: src/test-helpers/jcs.ts). */
const SEED = path.resolve(PROJECT_ROOT, "..", "shared", "seeds", "000_208564aea2595b85.txt");

describe("method versions as published (seed, 'Changes to the method')", () => {
  it("gives each version the date and the changes the seed's page publishes, newest first", () => {
    const page = fs.readFileSync(SEED, "utf8");
    const entries = [...page.matchAll(/^• (\d+\.\d+), (\d+) (\w+) (\d{4})\. (.+)$/gm)].map(([, version, day, month, year, changes]) => ({
      version,
      published: new Date(`${day} ${month} ${year} UTC`).toISOString().slice(0, 10),
      changes,
    }));
    expect(entries.map((e) => e.version)).to.deep.equal([...METHOD_VERSIONS]);
    for (const entry of entries) {
      const rules = METHODS[entry.version as keyof typeof METHODS];
      expect({ version: rules.version, published: rules.published, changes: rules.changes }).to.deep.equal(entry);
    }
  });
});
