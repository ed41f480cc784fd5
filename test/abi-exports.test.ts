import fs from "node:fs";
import path from "node:path";
import { expect } from "./helpers/expect";
import { artifacts } from "hardhat";
import { ABI_DIR, renderAbiModules } from "../scripts/export-abis";

describe("src/chain/abi", () => {
  it("matches the compiled artifacts (run `npx hardhat run scripts/export-abis.ts` after changing a contract)", async () => {
    const modules = await renderAbiModules(artifacts);
    expect(Object.keys(modules).sort()).to.deep.equal([
      "anchorRegistry.ts",
      "identityRegistry.ts",
      "registry.ts",
      "reputationRegistry.ts",
      "vraiGate.ts",
    ]);
    for (const [file, content] of Object.entries(modules)) {
      expect(fs.readFileSync(path.join(ABI_DIR, file), "utf8"), file).to.equal(content);
    }
  });

  it("keeps in the identity ABI only the ERC-8004 entries, none specific to AgentIdentity", async () => {
    const { identityRegistryAbi } = await import("../src/chain/abi/identityRegistry");
    const names = identityRegistryAbi.map((entry) => (entry as { name?: string }).name ?? "");
    for (const name of [
      "register",
      "setAgentWallet",
      "getAgentWallet",
      "unsetAgentWallet",
      "Registered",
      "MetadataSet",
      "URIUpdated",
      "Transfer",
    ]) {
      expect(names, name).to.include(name);
    }
    expect(names.filter((name) => name.startsWith("AgentIdentity") || name === "MAX_DEADLINE_DELAY")).to.deep.equal([]);
  });

  it("keeps in the reputation ABI what ERC-8004 specifies, none of the proxy's administration", async () => {
    const { reputationRegistryAbi } = await import("../src/chain/abi/reputationRegistry");
    const names = reputationRegistryAbi.map((entry) => entry.name).sort();
    expect(names).to.deep.equal(
      [
        "FeedbackRevoked",
        "NewFeedback",
        "ResponseAppended",
        "appendResponse",
        "getClients",
        "getIdentityRegistry",
        "getLastIndex",
        "getResponseCount",
        "getSummary",
        "getVersion",
        "giveFeedback",
        "readAllFeedback",
        "readFeedback",
        "revokeFeedback",
      ].sort(),
    );
  });
});
