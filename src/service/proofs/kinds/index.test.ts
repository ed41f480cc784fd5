import { expect } from "chai";
import { CURRENT_METHOD, kindsOf, METHODS, PROOF_KINDS } from "../../../method";
import {
  currentProofRule,
  kindsInWords,
  OFFERED_PROOF_KINDS,
  offeredKindsOf,
  PROOF_KIND_MODULES,
  PROOF_KIND_SETTINGS,
  proofKindModule,
} from ".";

describe("the table of proof kinds (issue #25)", () => {
  it("has one module per kind, under its own kind", () => {
    expect(Object.keys(PROOF_KIND_MODULES).sort()).to.deep.equal([...PROOF_KINDS].sort());
    for (const kind of PROOF_KINDS) expect(proofKindModule(kind).kind).to.equal(kind);
  });

  it("offers the kinds the current method counts, in its V6 table order, with their rules from the method", () => {
    expect(OFFERED_PROOF_KINDS).to.deep.equal(kindsOf(METHODS[CURRENT_METHOD].identity));
    for (const kind of OFFERED_PROOF_KINDS) expect(currentProofRule(kind)).to.equal(METHODS[CURRENT_METHOD].identity[kind]);
  });

  it("gives every module a canonical subject that is stable (normalising twice changes nothing) and an example its evidence schema takes", () => {
    for (const kind of PROOF_KINDS) {
      const module = proofKindModule(kind);
      const once = module.normalizeSubject(module.subjectExample);
      expect(module.normalizeSubject(once), kind).to.equal(once);
      expect(module.evidence.safeParse(module.evidenceExample).success, kind).to.equal(true);
      expect(module.purpose(once), kind).to.include(once);
    }
  });

  it("gathers every module's settings into the configuration's fields", () => {
    expect(Object.keys(PROOF_KIND_SETTINGS).sort()).to.deep.equal(
      Object.values(PROOF_KIND_MODULES)
        .flatMap((m) => Object.keys(m.settings))
        .sort(),
    );
    expect(PROOF_KIND_SETTINGS).to.have.property("GITHUB_API_BASE_URL");
  });

  it("names kinds in running text, from their modules, split by whom they belong to (V6)", () => {
    expect(kindsInWords(["github", "wallet", "domain"], "noun", "or")).to.equal("a GitHub account, a wallet or a domain");
    expect(kindsInWords(["domain", "erc8004"], "title", "and")).to.equal("Domain and ERC-8004 identity");
    expect(kindsInWords(["wallet"], "noun", "and")).to.equal("a wallet");
    expect(kindsInWords([], "noun", "and")).to.equal("");
    expect([...offeredKindsOf("owner"), ...offeredKindsOf("agent")].sort()).to.deep.equal([...OFFERED_PROOF_KINDS].sort());
    for (const kind of offeredKindsOf("agent")) expect(currentProofRule(kind).belongsTo).to.equal("agent");
  });
});
