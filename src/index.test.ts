import path from "node:path";
import { expect } from "chai";

describe("the vrai package", () => {
  it("exports the SDK and the method engine from package.json main", () => {
    const main = require(path.resolve(__dirname, "..")) as Record<string, unknown>;
    for (const name of [
      "createVraiAgent",
      "submitProof",
      "readNetworkScore",
      "readDeployment",
      "registryAddressOf",
      "deriveScore",
      "deriveScores",
      "validateRecord",
      "executorId",
      "BaseError",
    ]) {
      expect(main[name], name).to.be.a("function");
    }
  });

  it("deriveScore rejects a malformed record naming it and the field (A1)", () => {
    const { deriveScore } = require(path.resolve(__dirname, "..")) as typeof import("./index");
    const record = {
      txHash: "0x01",
      executor: "did:erc8004:1:0x0000000000000000000000000000000000000001:7",
      success: true,
      riskLevel: "extreme",
      policyViolations: 0,
      verified: false,
      traceRoot: "0xaa",
      source: "self-reported",
    };
    expect(() => deriveScore([record])).to.throw("records[0].riskLevel: expected low|medium|high|critical");
    expect(deriveScore([{ ...record, riskLevel: "low" }])[record.executor]).to.include({ scoreType: "sdk-derived", total: 1 });
  });
});
