import { expect } from "chai";
import { BaseError, ContractFunctionRevertedError, HttpRequestError } from "viem";
import { anchorRegistryAbi } from "./abi/anchorRegistry";
import { shortMessageOf } from "./short-message";

describe("shortMessageOf", () => {
  it("reports a viem error by its shortMessage, not the details, docs and version its message goes on with", () => {
    const error = new HttpRequestError({
      url: "http://127.0.0.1:1",
      details: "fetch failed",
      cause: new Error("connect ECONNREFUSED 127.0.0.1:1"),
    });
    expect(error.message).to.contain("\n").and.contain("Version: viem@");
    expect(shortMessageOf(error)).to.equal(error.shortMessage).and.equal("HTTP request failed.");
  });

  it("keeps the whole of a shortMessage of several lines, on one: a revert's reason is on its second", () => {
    const error = new ContractFunctionRevertedError({
      abi: anchorRegistryAbi,
      functionName: "anchor",
      message: "execution reverted: not an anchorer",
    });
    expect(error.shortMessage.split("\n")).to.have.length(2);
    expect(shortMessageOf(error)).to.equal(error.shortMessage.replace("\n", " "));
    expect(shortMessageOf(error)).to.contain("not an anchorer");
    expect(shortMessageOf(new BaseError("first line\nsecond line", { details: "more" }))).to.equal("first line second line");
  });

  it("gives the first line of any other error's message, and any other value as a string", () => {
    expect(shortMessageOf(new Error("Unknown option '--x'\n    at parseArgs"))).to.equal("Unknown option '--x'");
    expect(shortMessageOf("plain")).to.equal("plain");
  });
});
