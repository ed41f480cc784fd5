import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { PROJECT_ROOT } from "../../project-root";
import { CURRENT_METHOD, METHOD_VERSIONS, METHODS, PROOF_KINDS, methodRules } from "./methods";

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

describe("method versions by name (V9: a stored score recomputes with its own version's rules)", () => {
  it("knows a version only by its name as a string, and names the known ones when it does not", () => {
    for (const version of METHOD_VERSIONS) expect(methodRules(version)).to.equal(METHODS[version]);
    for (const version of [0.2, 0.1, "9.9", "toString", null]) {
      expect(() => methodRules(version), String(version))
        .to.throw(`method: unknown method version ${JSON.stringify(version)} (known: 0.2, 0.1)`)
        .with.property("code", "unknown_method");
    }
  });
});

describe("the V6 table of each version, as METHOD.md publishes it", () => {
  it("gives each kind its points, whom it belongs to and how often it is re-checked (V6)", () => {
    for (const version of METHOD_VERSIONS) {
      expect(METHODS[version].identity, version).to.deep.equal({
        github: { points: 30, belongsTo: "owner", recheckDays: 30 },
        wallet: { points: 30, belongsTo: "owner", recheckDays: null },
        domain: { points: 40, belongsTo: "agent", recheckDays: 7 },
        erc8004: { points: 50, belongsTo: "agent", recheckDays: 7 },
      });
    }
    expect(PROOF_KINDS).to.deep.equal(["github", "wallet", "domain", "erc8004"]);
  });

  it("computes new scores with method 0.2, the newest version (V8: 0.2, and 0.1 for old scores)", () => {
    expect(CURRENT_METHOD).to.equal("0.2");
    expect(METHOD_VERSIONS[0]).to.equal(CURRENT_METHOD);
  });
});
